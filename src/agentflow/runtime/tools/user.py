"""``user__*`` tools: plain Python functions (docs/spec/RUNTIME.md §4).

Sources, in order:

* modules named in ``flow.toml`` ``[tools] modules = [...]`` — dotted module names (imported with
  the directory of ``flow.toml`` on ``sys.path``) or ``.py`` file paths relative to it;
* the ``agentflow.tools`` entry-point group of installed packages: an entry point naming a function
  gives ``user__<entry point name>``; one naming a module gives that module's tools.

In a module, the functions marked with :func:`tool` are its tools; a module with no marked function
offers every public function defined in it (not imported into it). Functions may be sync (run in a
worker thread) or async. Parameters typed with annotations — builtins, ``Optional``, ``Literal``,
``list[...]``, pydantic models, ``Annotated[..., Field(description=...)]`` — give the JSON Schema
input (through pydantic) and are validated before the call (``tool_error`` with each failing field
otherwise). The docstring's first paragraph is the description; a Google-style ``Args:`` section
describes the parameters. A parameter named ``ctx`` receives the :class:`ToolContext`. Results are
made JSON-able (pydantic models dumped).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from agentflow.core.vocabulary import Code
from agentflow.errors import ConfigError, RunError
from agentflow.runtime.extract import too_deep_result
from agentflow.runtime.tools.catalog import Tool, ToolContext, run_in_daemon_thread

ENTRY_POINT_GROUP = "agentflow.tools"
_MARK = "__agentflow_tool__"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = True,
) -> Any:
    """Mark a function as a ``user__`` tool: ``@tool`` or ``@tool(name="x", description="…")``.

    ``idempotent=False`` says that calling it twice with the same arguments is not harmless
    (it sends, appends, charges): a durable run whose process died while it ran does not run it
    again but stops with ``outcome_unknown`` (docs/durable.md).  The function is returned
    unchanged (it stays callable as before).
    """

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        setattr(f, _MARK, {"name": name, "description": description, "idempotent": idempotent})
        return f

    return mark(fn) if fn is not None else mark


def _docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """(description, {param: description}) from a docstring with an optional ``Args:`` section."""
    doc = inspect.getdoc(fn) or ""
    params: dict[str, str] = {}
    lines = doc.splitlines()
    desc_lines: list[str] = []
    i = 0
    while i < len(lines):
        if re.match(r"^(Args|Arguments|Parameters):\s*$", lines[i].strip()):
            i += 1
            current = None
            while i < len(lines) and (not lines[i].strip() or lines[i][:1].isspace()):
                m = re.match(r"^\s+(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$", lines[i])
                if m and (current is None or len(lines[i]) - len(lines[i].lstrip()) <= 4):
                    current = m.group(1).lstrip("*")
                    params[current] = m.group(3).strip()
                elif current and lines[i].strip():
                    params[current] = (params[current] + " " + lines[i].strip()).strip()
                i += 1
            continue
        if re.match(r"^(Returns|Raises|Yields|Examples?):\s*$", lines[i].strip()):
            break
        desc_lines.append(lines[i])
        i += 1
    description = "\n".join(desc_lines).strip()
    return description, params


def function_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    prefix: str = "user",
    isolation: str = "thread",
    locator: tuple[str, ...] | None = None,
    pool: Any = None,
) -> Tool:
    """A catalog :class:`Tool` ``prefix__name`` for Python function ``fn`` (see the module doc).

    ``isolation="process"`` with a ``locator`` (how a worker imports ``fn``) and a
    :class:`~agentflow.runtime.tools.isolation.ProcessPool` runs each call in a killable worker
    process (arguments are still validated here first). Raises ConfigError when a parameter's
    annotation cannot be turned into a JSON Schema.
    """
    from pydantic import ConfigDict, ValidationError, create_model

    mark = getattr(fn, _MARK, None) or {}
    tool_name = name or mark.get("name") or fn.__name__
    doc_desc, param_docs = _docstring(fn)
    desc = description or mark.get("description") or doc_desc or tool_name
    sig = inspect.signature(fn)
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except Exception:  # noqa: BLE001 - unresolvable annotations: treat as untyped
        hints = {}
    fields: dict[str, Any] = {}
    wants_ctx = False
    takes_kwargs = False
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            continue
        if p.kind is p.VAR_KEYWORD:
            takes_kwargs = True
            continue
        if p.name == "ctx" or hints.get(p.name) is ToolContext:
            wants_ctx = True
            ctx_name = p.name
            continue
        annotation = hints.get(p.name, Any)
        default = ... if p.default is p.empty else p.default
        if p.name in param_docs:
            from pydantic import Field

            default = Field(default, description=param_docs[p.name])
        fields[p.name] = (annotation, default)
    extra: Literal["allow", "forbid"] = "allow" if takes_kwargs else "forbid"
    try:
        model = create_model(f"{tool_name}_input", __config__=ConfigDict(extra=extra), **fields)
        schema = model.model_json_schema()
    except Exception:  # noqa: BLE001 - pydantic schema generation errors (their text is long)
        raise ConfigError(_schema_problem(fn, fields)) from None
    schema = inline_refs(schema)
    is_async = inspect.iscoroutinefunction(fn)
    full_name = f"{prefix}__{tool_name}"
    in_process = isolation == "process" and locator is not None and pool is not None

    async def call(args: dict[str, Any], ctx: ToolContext) -> Any:
        try:
            parsed = model.model_validate(args if isinstance(args, dict) else {})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(x) for x in e['loc']) or '(input)'}: {e['msg']}"
                for e in exc.errors()
            )
            raise RunError(Code.TOOL_ERROR, f"{full_name}: invalid arguments: {problems}") from None
        if in_process:
            return await pool.call(full_name, locator, args, ctx)
        kwargs = {k: getattr(parsed, k) for k in fields}
        if takes_kwargs and parsed.model_extra:
            kwargs.update(parsed.model_extra)
        if wants_ctx:
            kwargs[ctx_name] = ctx
        try:
            if is_async:
                result = await fn(**kwargs)
            else:
                result = await run_in_daemon_thread(fn, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
        except SystemExit as exc:  # the tool's own sys.exit(): its failure, not the process's
            raise RunError(Code.TOOL_ERROR, f"{full_name}: {_describe(exc)}") from None
        except KeyboardInterrupt:
            if is_async:
                raise  # on the loop's thread: may be the user's Ctrl-C
            # a signal never reaches a tool's thread: the tool raised it itself
            raise RunError(Code.TOOL_ERROR, f"{full_name}: it raised KeyboardInterrupt") from None
        too_deep_result(full_name, result)  # before _jsonable recurses into it
        return _jsonable(result)

    output = _result_schema(hints.get("return", inspect.Signature.empty))
    return Tool(
        name=full_name,
        description=desc,
        input_schema=schema,
        func=call,
        source="user",
        meta={
            "python": f"{fn.__module__}.{fn.__qualname__}",
            "idempotent": mark.get("idempotent", True) is not False,
            **({"isolation": "process"} if in_process else {}),
            **({"output_schema": output} if output is not None else {}),
        },
    )


def _result_schema(annotation: Any) -> dict[str, Any] | None:
    """The JSON Schema of a tool function's return annotation (``list[dict]`` → an array of
    objects), which ``flowc tools --extern`` types the result from; None when there is none, it
    is ``Any``/``None``, or pydantic cannot make one. Only listed, never enforced: the value is
    checked against the ``.flow``'s declared result type at run time."""
    if annotation is inspect.Signature.empty or annotation is Any or annotation is None:
        return None
    from pydantic import TypeAdapter

    try:
        return inline_refs(TypeAdapter(annotation).json_schema())
    except Exception:  # noqa: BLE001 - an annotation pydantic cannot describe: no schema
        return None


def _schema_problem(fn: Callable[..., Any], fields: dict[str, Any]) -> str:
    """Why ``fn``'s parameters give no JSON Schema, naming the function and each bad parameter
    (instead of pydantic's generic text)."""
    from pydantic import create_model

    bad = []
    for pname, (annotation, default) in fields.items():
        try:
            create_model("probe", **{pname: (annotation, default)}).model_json_schema()  # type: ignore[call-overload]
        except Exception:  # noqa: BLE001
            shown = getattr(annotation, "__qualname__", None) or repr(annotation)
            mod = getattr(annotation, "__module__", None)
            if isinstance(annotation, type) and mod not in (None, "builtins"):
                shown = f"{mod}.{shown}"
            bad.append(f"`{pname}: {shown}`")
    what = ", ".join(bad) if bad else "its parameters"
    module = fn.__module__ or ""
    where = "" if module.startswith("agentflow_user_tools_") else f" (module {module})"
    return (
        f"tool function `{fn.__qualname__}`{where}: {what} cannot become a JSON "
        "Schema input; annotate parameters with JSON types (str, int, float, bool, list[...], "
        "dict[str, ...]), Optional, Literal or a pydantic model"
    )


def inline_refs(schema: dict[str, Any], max_depth: int = 8) -> dict[str, Any]:
    """``schema`` with local ``#/$defs/X`` references inlined and pydantic's ``title`` keys
    dropped (some providers reject ``$defs``; docs/spec/RUNTIME.md §10). References nested deeper
    than ``max_depth`` (recursive models) keep their ``$ref`` and the ``$defs`` they need."""
    defs = schema.get("$defs") or {}
    kept: set[str] = set()

    def walk(node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return [walk(x, depth) for x in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            key = ref.removeprefix("#/$defs/")
            if key in defs and depth < max_depth:
                merged = {**defs[key], **{k: v for k, v in node.items() if k != "$ref"}}
                return walk(merged, depth + 1)
            kept.add(key)
            return dict(node)
        return {
            k: walk(v, depth)
            for k, v in node.items()
            if k != "$defs" and not (k == "title" and isinstance(v, str))
        }

    out: dict[str, Any] = walk(schema, 0)
    if kept:
        out["$defs"] = {k: defs[k] for k in sorted(kept)}
    return out


def _jsonable(value: Any) -> Any:
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return value.as_posix()
    return value


def module_tools(
    module: ModuleType, *, locate: Callable[[str], tuple[str, ...]] | None = None, pool: Any = None
) -> list[Tool]:
    """The tools of ``module``: its :func:`tool`-marked functions, or else every public function
    defined in it. Sorted by name. ``locate(qualname)`` and ``pool``: process isolation (see
    :func:`function_tool`)."""
    functions = [
        f
        for n, f in vars(module).items()
        if inspect.isfunction(f) and getattr(f, "__module__", None) == module.__name__
    ]
    marked = [f for f in functions if hasattr(f, _MARK)]
    chosen = marked or [f for f in functions if not f.__name__.startswith("_")]
    tools = []
    for f in chosen:
        if pool is not None and locate is not None:
            tools.append(
                function_tool(f, isolation="process", locator=locate(f.__qualname__), pool=pool)
            )
        else:
            tools.append(function_tool(f))
    return sorted(tools, key=lambda t: t.name)


def import_tool_module(spec: str, base_dir: Path) -> ModuleType:
    """Import ``spec``: a ``.py`` path (relative to ``base_dir``) or a dotted module name
    (``base_dir`` is put on ``sys.path`` first). Raises ConfigError naming the module."""
    if spec.endswith(".py") or "/" in spec:
        path = Path(spec)
        path = path if path.is_absolute() else base_dir / path
        if not path.is_file():
            raise ConfigError(f"[tools] modules: '{spec}' not found (looked at {path})")
        mod_name = f"agentflow_user_tools_{re.sub(r'[^A-Za-z0-9_]', '_', path.stem)}"
        loader_spec = importlib.util.spec_from_file_location(mod_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise ConfigError(f"[tools] modules: cannot import '{spec}'")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[mod_name] = module
        try:
            loader_spec.loader.exec_module(module)
        except KeyboardInterrupt:
            sys.modules.pop(mod_name, None)
            raise
        except BaseException as exc:  # noqa: BLE001 - a user module failing to import (sys.exit too)
            sys.modules.pop(mod_name, None)
            raise ConfigError(
                f"[tools] modules: importing '{spec}' failed: {_describe(exc)}"
            ) from None
        return module
    base = str(base_dir)
    if base not in sys.path:
        sys.path.insert(0, base)
    try:
        return importlib.import_module(spec)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - sys.exit() at import must not end flowc
        raise ConfigError(f"[tools] modules: importing '{spec}' failed: {_describe(exc)}") from None


def _module_locator(module: str) -> Callable[[str], tuple[str, ...]]:
    """How a worker process finds a function of the importable module ``module``."""

    def locate(qualname: str) -> tuple[str, ...]:
        return ("module", module, qualname)

    return locate


def _spec_locator(spec: str, base_dir: Path) -> Callable[[str], tuple[str, ...]]:
    """How a worker process finds a function of the ``[tools] modules`` entry ``spec``."""

    def locate(qualname: str) -> tuple[str, ...]:
        return ("spec", spec, str(base_dir), qualname)

    return locate


def _describe(exc: BaseException) -> str:
    """An import failure as one line: ``RuntimeError: boom``, ``it called sys.exit(3)``."""
    if isinstance(exc, SystemExit):
        return (
            f"it called sys.exit({exc.code!r})" if exc.code is not None else "it called sys.exit()"
        )
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_ENTRY_POINTS: dict[tuple[str, tuple[str, ...]], tuple[Any, ...]] = {}


def group_entry_points(group: str = ENTRY_POINT_GROUP) -> tuple[Any, ...]:
    """The installed packages' entry points of ``group``, sorted by name: read once per
    process for one ``sys.path`` (``importlib.metadata`` reads every installed package's
    metadata, ~20 ms; a package installed into a directory already on the path while the
    process runs is seen by the next process)."""
    key = (group, tuple(sys.path))
    found = _ENTRY_POINTS.get(key)
    if found is None:
        found = _ENTRY_POINTS[key] = tuple(sorted(entry_points(group=group), key=lambda e: e.name))
    return found


def entry_point_tools(group: str = ENTRY_POINT_GROUP, *, pool: Any = None) -> list[Tool]:
    """Tools from the installed packages' entry points of ``group`` (see the module doc); with a
    ``pool``, each call runs in a worker process.

    Raises ConfigError naming the entry point when it fails to load."""
    out: list[Tool] = []
    for ep in group_entry_points(group):
        try:
            obj = ep.load()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - sys.exit() at import must not end flowc
            raise ConfigError(
                f"entry point {group}:{ep.name} ({ep.value}) failed to load: {_describe(exc)}"
            ) from None
        if isinstance(obj, ModuleType):
            out.extend(module_tools(obj, locate=_module_locator(obj.__name__), pool=pool))
        elif callable(obj):
            name = ep.name if _NAME.match(ep.name) else None
            if pool is not None:
                out.append(
                    function_tool(
                        obj, name=name, isolation="process", locator=("entry", ep.value), pool=pool
                    )
                )
            else:
                out.append(function_tool(obj, name=name))
        else:
            raise ConfigError(
                f"entry point {group}:{ep.name} ({ep.value}) is neither a module nor a function"
            )
    return out


def load_user_tools(
    modules: list[str],
    *,
    base_dir: Path,
    entry_points: bool = True,
    where: str | None = None,
    pool: Any = None,
) -> list[Tool]:
    """Every ``user__*`` tool of ``modules`` (``[tools] modules``) and, when ``entry_points``,
    the ``agentflow.tools`` entry-point group. Raises ConfigError on an import failure (any
    exception, ``SystemExit`` included; not ``KeyboardInterrupt``), a function whose parameters
    give no JSON Schema, or a duplicate tool name (naming both sources). ``where`` (e.g.
    ``flow.toml:7:1``, the ``modules`` key) prefixes the errors of ``modules``. ``pool`` (a
    :class:`~agentflow.runtime.tools.isolation.ProcessPool`): ``[tools] isolation = "process"``,
    every call runs in a killable worker process."""
    tools: list[Tool] = []
    for spec in modules:
        try:
            module = import_tool_module(spec, base_dir)
            tools.extend(module_tools(module, locate=_spec_locator(spec, base_dir), pool=pool))
        except ConfigError as exc:
            msg = str(exc)
            if not msg.startswith("[tools]"):
                msg = f"[tools] modules: '{spec}': {msg}"
            raise ConfigError(f"{where}: {msg}" if where else msg) from None
    if entry_points:
        tools.extend(entry_point_tools(pool=pool))
    seen: dict[str, Tool] = {}
    for t in tools:
        if t.name in seen:
            raise ConfigError(
                f"tool '{t.name}' is defined twice: {seen[t.name].meta.get('python')} and "
                f"{t.meta.get('python')}"
            )
        seen[t.name] = t
    return tools


__all__ = [
    "ENTRY_POINT_GROUP",
    "entry_point_tools",
    "function_tool",
    "import_tool_module",
    "load_user_tools",
    "module_tools",
    "tool",
]
