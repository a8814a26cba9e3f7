"""``flowc check`` of ``extern tool user__*`` and ``plan__*`` declarations against what the
project's ``flow.toml`` says the run will find (docs/reference/tools.md "What flowc check
compares"): ``unknown-extern-tool`` (a name that is a typo away from a function of the
``[tools] modules`` files, or from a plan of the plans directory) and ``extern-tool-signature``
(a parameter the function or the plan's input does not have, one it requires that the
declaration leaves out or makes optional).

Nothing is imported or run: a Python tools module is read with :mod:`ast` (its top-level
``def``s: the ``@tool``-marked ones, else every public one, as the runtime picks them), a plan
``.flow`` is parsed and checked, a YAML/JSON plan is read as data. Whatever cannot be read that
way (a dotted module name with no file beside ``flow.toml``, a function made at run time, a
decorator other than ``tool``) makes the check say nothing rather than guess
(docs/decisions.md "flowc check of extern tools").
"""

from __future__ import annotations

import ast as pyast
import functools
import json
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import yaml

from agentflow.compiler import types as T
from agentflow.compiler.api import check_source, read_source
from agentflow.compiler.checker import CheckResult
from agentflow.core.diagnostics import (
    EXTERN_TOOL_SIGNATURE,
    UNKNOWN_EXTERN_TOOL,
    Diagnostic,
    Replacement,
    closest,
    meant_hint,
    respelling,
)
from agentflow.grammar import ast

__all__ = ["extern_tool_warnings"]

#: the suffixes of plan files in the plans directory (as the runtime's plans loader reads)
_PLAN_SUFFIXES = (".yaml", ".yml", ".json", ".flow")


@dataclass(frozen=True, slots=True)
class _Signature:
    """What a call of a tool may pass: ``params`` name → required; ``open``: any other name is
    taken too (``**kwargs``); ``where``: the function or plan, as a message names it."""

    params: dict[str, bool]
    open: bool
    where: str


def extern_tool_warnings(data: dict[str, Any], result: CheckResult) -> list[Diagnostic]:
    """The warnings of the ``extern tool user__*`` / ``plan__*`` declarations of the checked
    program ``result`` against the parsed ``flow.toml`` ``data`` (its path under ``__file__``):
    see the module docstring. Never raises for a project file that cannot be read."""
    externs = [i for i in result.module.items if isinstance(i, ast.ExternTool)]
    wanted = [(i, i.catalog or i.name.name) for i in externs]
    if not any(n.startswith(("user__", "plan__")) for _, n in wanted):
        return []
    base = Path(data["__file__"]).resolve().parent
    user = _user_tools(data, base) if any(n.startswith("user__") for _, n in wanted) else None
    plans = _plan_tools(data, base) if any(n.startswith("plan__") for _, n in wanted) else None
    out: list[Diagnostic] = []
    for item, name in wanted:
        known = user if name.startswith("user__") else plans if name.startswith("plan__") else None
        if known is None:
            continue
        sig = known.get(name)
        if sig is None:
            meant = closest(name, known)
            if meant is not None:  # not a typo: a tool from elsewhere (entry points, sub-plans)
                source = "[tools] modules" if name.startswith("user__") else "the plans directory"
                out.append(
                    Diagnostic(
                        code=UNKNOWN_EXTERN_TOOL,
                        severity="warning",
                        message=f"no tool '{name}' in {source} of {data['__file__']}",
                        span=item.name.span,
                        hint=meant_hint(meant),
                        fix=respelling(item.name.span, name, meant),
                    )
                )
            continue
        out.extend(_signature_warnings(item, name, sig))
    return out


def _signature_warnings(item: ast.ExternTool, name: str, sig: _Signature) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    declared = {p.name.name: p for p in item.params}
    for pname, param in declared.items():
        optional = param.omittable or isinstance(param.type, ast.OptionalType)
        if pname not in sig.params:
            if sig.open:
                continue
            meant = closest(pname, sig.params)
            hint = (
                meant_hint(meant) if meant else f"its parameters: {', '.join(sig.params) or 'none'}"
            )
            fix = respelling(param.name.span, pname, meant)
            message = f"{sig.where} has no parameter '{pname}': a call of {name} fails"
        elif optional and sig.params[pname]:
            message = (
                f"'{pname}' is declared optional, but {sig.where} requires it: a call that "
                "leaves it out fails"
            )
            hint = f"declare it `{pname}: …` without `?`"
            fix = None
        else:
            continue
        out.append(_mismatch(message, param.name.span, hint, fix))
    missing = [p for p, required in sig.params.items() if required and p not in declared]
    if missing:
        listed = ", ".join(f"'{p}'" for p in missing)
        out.append(
            _mismatch(
                f"extern tool {name} leaves out {listed}, which {sig.where} requires: "
                "no call of it can pass",
                item.name.span,
                f"add {', '.join(f'`{p}: …`' for p in missing)} to its parameters",
            )
        )
    return out


def _mismatch(message: str, span: Any, hint: str, fix: Replacement | None = None) -> Diagnostic:
    return Diagnostic(
        code=EXTERN_TOOL_SIGNATURE,
        severity="warning",
        message=message,
        span=span,
        hint=hint,
        fix=fix,
    )


# ----------------------------------------------------------------------------- Python tools


def _user_tools(data: dict[str, Any], base: Path) -> dict[str, _Signature] | None:
    """``user__NAME`` → signature of every function of the ``[tools] modules`` files, or None
    when one cannot be read without running it (then nothing is said about ``user__*``)."""
    tools = data.get("tools")
    modules = tools.get("modules") if isinstance(tools, dict) else None
    if not isinstance(modules, list) or not modules:
        return None
    if not (isinstance(tools, dict) and tools.get("entry_points") is False) and _entry_points():
        return None  # installed packages add user__ tools this check cannot see
    out: dict[str, _Signature] = {}
    for spec in modules:
        path = _module_file(spec, base) if isinstance(spec, str) else None
        if path is None:
            return None
        found = _module_functions(str(path))
        if found is None:
            return None
        out.update(found)
    return out


@functools.cache
def _entry_points() -> bool:
    """Whether an installed package has ``agentflow.tools`` entry points (read once)."""
    return bool(entry_points(group="agentflow.tools"))


def _module_file(spec: str, base: Path) -> Path | None:
    """The file of a ``[tools] modules`` entry: a ``.py`` path relative to ``flow.toml``, or a
    dotted name found as a file beside it (``pkg.tools`` → ``pkg/tools.py``); else None."""
    if spec.endswith(".py") or "/" in spec:
        path = Path(spec) if Path(spec).is_absolute() else base / spec
        return path if path.is_file() else None
    parts = spec.split(".")
    for candidate in (
        base.joinpath(*parts).with_suffix(".py"),
        base.joinpath(*parts, "__init__.py"),
    ):
        if candidate.is_file():
            return candidate
    return None


def _module_functions(path: str) -> dict[str, _Signature] | None:
    """The tools of the Python file ``path`` read with :mod:`ast`, or None when it does not
    parse or defines functions in a way only running it shows."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        stat = Path(path).stat()
    except (OSError, UnicodeDecodeError):
        return None
    return _parsed_functions(path, text, stat.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _parsed_functions(path: str, text: str, _mtime: int) -> dict[str, _Signature] | None:
    try:
        tree = pyast.parse(text, filename=path)
    except (SyntaxError, ValueError):
        return None
    functions: list[tuple[pyast.FunctionDef | pyast.AsyncFunctionDef, str | None, bool]] = []
    for node in tree.body:
        if isinstance(node, (pyast.If, pyast.Try, pyast.With, pyast.For, pyast.While)):
            if any(
                isinstance(n, (pyast.FunctionDef, pyast.AsyncFunctionDef)) for n in pyast.walk(node)
            ):
                return None  # defined only when some code runs
        if isinstance(node, (pyast.Assign, pyast.AnnAssign)) and isinstance(
            node.value, pyast.Lambda
        ):
            return None  # a lambda is a function of the module too
        if not isinstance(node, (pyast.FunctionDef, pyast.AsyncFunctionDef)):
            continue
        marked, name = False, None
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, pyast.Call) else deco
            if not (
                isinstance(target, pyast.Name)
                and target.id == "tool"
                or isinstance(target, pyast.Attribute)
                and target.attr == "tool"
            ):
                return None  # a decorator may make it something else
            marked = True
            if isinstance(deco, pyast.Call):
                for kw in deco.keywords:
                    if kw.arg == "name":
                        if not isinstance(kw.value, pyast.Constant) or not isinstance(
                            kw.value.value, str
                        ):
                            return None
                        name = kw.value.value
        functions.append((node, name, marked))
    chosen = [f for f in functions if f[2]] or [
        f for f in functions if not f[0].name.startswith("_")
    ]
    shown = Path(path).name
    return {f"user__{name or fn.name}": _function_signature(fn, shown) for fn, name, _ in chosen}


def _function_signature(fn: pyast.FunctionDef | pyast.AsyncFunctionDef, shown: str) -> _Signature:
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    firsts = len(positional) - len(args.defaults)
    params: dict[str, bool] = {}
    for i, a in enumerate(positional):
        params[a.arg] = i < firsts
    for a, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        params[a.arg] = default is None
    params.pop("ctx", None)  # the ToolContext the runtime passes, never an argument
    for a in [*positional, *args.kwonlyargs]:
        if isinstance(a.annotation, (pyast.Name, pyast.Attribute)) and (
            getattr(a.annotation, "id", None) == "ToolContext"
            or getattr(a.annotation, "attr", None) == "ToolContext"
        ):
            params.pop(a.arg, None)
    return _Signature(params, args.kwarg is not None, f"{fn.name}() in {shown}")


# ------------------------------------------------------------------------------------- plans


def _plan_tools(data: dict[str, Any], base: Path) -> dict[str, _Signature] | None:
    """``plan__NAME`` → the input of every plan of the plans directory (``[plans] dir``, else
    ``plans/`` beside ``flow.toml``), or None when there is none or one cannot be read."""
    plans = data.get("plans")
    configured = plans.get("dir") if isinstance(plans, dict) else None
    directory = base / configured if isinstance(configured, str) else base / "plans"
    if not directory.is_dir():
        return None
    out: dict[str, _Signature] = {}
    try:
        files = sorted(f for f in directory.iterdir() if f.suffix in _PLAN_SUFFIXES and f.is_file())
    except OSError:
        return None
    for file in files:
        try:
            text = read_source(file) if file.suffix == ".flow" else file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        found = _plan_signature(str(file), text)
        if found is None:
            return None
        if found[0]:
            out[f"plan__{found[0]}"] = found[1]
    return out


@functools.lru_cache(maxsize=64)
def _plan_signature(file: str, text: str) -> tuple[str, _Signature] | None:
    """``(plan name, its input)`` of a plan file's text (``("", …)``: a `.flow` library, no
    plan), or None when it does not read."""
    shown = Path(file).name
    if file.endswith(".flow"):
        result = check_source(text, file)
        if not result.ok:
            return None
        if not result.stages:
            return "", _Signature({}, True, shown)
        return result.flow_name, _input_signature(result, f"the input of {shown}")
    try:
        plan = json.loads(text) if file.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError):
        return None
    if not isinstance(plan, dict) or not isinstance(plan.get("name"), str):
        return None
    schema = plan.get("input_schema")
    where = f"the input of {shown}"
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return plan["name"], _Signature({}, True, where)
    listed = schema.get("required")
    required: list[Any] = listed if isinstance(listed, list) else []
    params = {str(k): k in required for k in schema["properties"]}
    return plan["name"], _Signature(params, schema.get("additionalProperties") is not False, where)


def _input_signature(result: CheckResult, where: str) -> _Signature:
    t = result.input_type
    while isinstance(t, T.NamedRef) and t.name in result.env.aliases:
        t = result.env.aliases[t.name]
    if isinstance(t, T.NamedRef) and t.name in result.env.objects:
        t = result.env.objects[t.name]
    if not isinstance(t, T.ObjectType):
        return _Signature({}, True, where)  # `json`, or no input: any arguments
    return _Signature({n: not f.optional for n, f in t.fields.items()}, False, where)
