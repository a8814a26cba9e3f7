"""`flowc gen python`: a checked `.flow` program → a typed Python client module
(docs/reference/python-clients.md).

The module holds one Pydantic model per named object type reachable from the flow's ``input``
and output (and its stages' types), each accepting exactly the JSON the type's contract
(:mod:`agentflow.compiler.contracts`) accepts:

- objects are closed (``extra="forbid"``) and strict (no coercion: ``"1"`` is not an ``int``);
  ``int`` is :data:`agentflow.client.Int` (JSON Schema's integer: ``1.0`` is one);
- ``T?`` fields are ``T | None = None`` (absent or null); a literal union is ``Literal[…]``
  (compared as JSON by :func:`agentflow.client.exact` when it holds a number or a boolean);
  ``map<T>`` is ``dict[str, T]``; ``json`` is ``pydantic.JsonValue``; named types may be
  recursive (forward references, ``model_rebuild()`` at the end);
- constraints are Pydantic constraints (``@range`` → ``ge``/``le``, ``@length`` →
  ``min_length``/``max_length``; ``@pattern`` and ``@format`` →
  :func:`agentflow.client.pattern_check` / :func:`~agentflow.client.format_check`, which ask the
  contract validator, whose regular-expression dialect Pydantic's does not share); ``///`` docs
  are field descriptions and class docstrings;
- ``Verdict`` (the value of ``verify``), ``Error`` and ``ErrorPlace`` are models of their fields;
- type aliases are expanded where used; inline object types become models named after their
  place (``Triage`` field ``work`` of an inline object → ``TriageWork``).

Then typed functions: ``async def run_<flow>(input, *, …) -> RunResult[Output]`` and its
``_sync`` twin call :func:`agentflow.run` on the source file (found relative to the module) and
validate the output into the model (:func:`agentflow.client.typed_result`), after refusing to
run a flow whose interface is not the one the module was generated from
(:func:`agentflow.client.require_current`); ``<flow>_stages``
reads each stage's value from a result as its model.  A header names the source flow, the
digest of its text (:func:`source_digest`) and of its interface (:func:`interface_digest`: a
comment or whitespace changed is not a new interface), which :func:`stale_diagnostics` compares
for ``flowc check`` (code ``stale-generated-module``, opt-in through ``flow.toml``
``[gen] python``).
"""

from __future__ import annotations

import builtins
import hashlib
import json
import keyword
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from agentflow.compiler import types as T
from agentflow.compiler.api import check_source
from agentflow.compiler.checker import CheckResult
from agentflow.compiler.contracts import DURATION_PATTERN
from agentflow.compiler.lowering import lower_with_stages
from agentflow.core import diagnostics as D
from agentflow.core.config_file import find_config
from agentflow.core.diagnostics import Diagnostic
from agentflow.core.spans import Span
from agentflow.errors import CompileError, ContractError

__all__ = [
    "generate_python",
    "source_digest",
    "interface_digest",
    "may_import",
    "Header",
    "read_header",
    "stale_diagnostics",
    "current_interface",
    "gen_modules",
]

#: the header line of a generated module that :func:`read_header` reads back
HEADER_MARK = "# flowc-gen:"
_HEADER = re.compile(
    r"^# flowc-gen: source=(?P<source>\S+) digest=(?P<digest>sha256:[0-9a-f]{64})"
    r"(?: interface=(?P<interface>sha256:[0-9a-f]{64}))?$",
    re.M,
)

#: names the generated module itself defines or imports: a `.flow` type of the same name is
#: renamed with a trailing ``_``
_TAKEN = frozenset(
    {
        "annotations", "os", "Path", "Annotated", "Any", "Literal", "TYPE_CHECKING", "Iterable",
        "pydantic", "agentflow", "client", "RunResult", "Int", "JsonValue", "Field",
        "BaseModel", "ConfigDict", "TypeAdapter", "Config", "Hooks", "Sink", "FLOW_FILE",
        "FLOW_DIGEST", "FLOW_INTERFACE", "Callable", "Mapping", "Catalog", "ModelRouter",
        "ShapeCache",
    }
)  # fmt: skip
_BASEMODEL_ATTRS = frozenset(
    {
        "copy", "dict", "json", "schema", "schema_json", "construct", "validate", "fields",
        "parse_obj", "parse_raw", "parse_file", "from_orm", "update_forward_refs",
    }
)  # fmt: skip


#: the keyword options of a generated run function, passed on to :func:`agentflow.run`: its
#: keyword options as its signature spells them (name, annotation, default), in its order.
#: The compiler cannot import the runtime's API (docs/ARCHITECTURE.md "Layers"), so the table is
#: written here and `tests/compiler/test_gen_python_run_options.py` compares it, the generated
#: functions and :func:`agentflow.client.run_flow` with ``inspect.signature(agentflow.run)``.
RUN_OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("config", "Config | str | os.PathLike[str] | None", "None"),
    ("workspace", "str | os.PathLike[str] | None", "None"),
    ("trace", "str | os.PathLike[str] | None", "None"),
    ("sinks", "Iterable[Sink]", "()"),
    ("hooks", "Hooks | None", "None"),
    ("catalog", "Catalog | None", "None"),
    ("router", "ModelRouter | None", "None"),
    ("record", "str | os.PathLike[str] | None", "None"),
    ("replay", "str | os.PathLike[str] | None", "None"),
    ("shape_cache", "ShapeCache | Literal[False] | None", "None"),
    ("on_partial", "Callable[[str, Any], Any] | None", "None"),
    ("telemetry", "bool | str | None", "None"),
    ("model", "str | None", "None"),
    ("durable", "bool", "False"),
    ("run_id", "str | None", "None"),
    ("reuse", "str | None", "None"),
    ("ask_again", "bool", "False"),
    ("database", "str | None", "None"),
    ("fleet", "bool", "False"),
    ("on_start", "Callable[[str], Any] | None", "None"),
    ("answers", "Mapping[str, Any] | None", "None"),
)

#: what the annotations of :data:`RUN_OPTIONS` name, imported by a generated module for the
#: type checker only (``from __future__ import annotations``: never at run time)
_RUN_OPTION_IMPORTS = (
    "from agentflow.runtime.config import Config",
    "from agentflow.runtime.events import Sink",
    "from agentflow.runtime.hooks import Hooks",
    "from agentflow.runtime.models.router import ModelRouter",
    "from agentflow.runtime.shape_cache import ShapeCache",
    "from agentflow.runtime.tools.catalog import Catalog",
)


def source_digest(text: str) -> str:
    """``sha256:<hex>`` of a `.flow` source text (UTF-8, surrogate escapes kept): the digest a
    generated module's header records."""
    data = text.encode("utf-8", errors="surrogateescape")
    return "sha256:" + hashlib.sha256(data).hexdigest()


#: a line that starts an ``import`` item (docs/reference/programs.md "import")
_IMPORT_LINE = re.compile(r"^[ \t]*import\b", re.MULTILINE)


def may_import(text: str) -> bool:
    """Whether the `.flow` text ``text`` may have an ``import`` item (a line starting with the
    word ``import``; a false positive only costs a check). A generated module is current at once
    for the text it was generated from only when the text imports nothing: an imported file may
    have changed the types it encodes since, so a text that imports is compared by interface."""
    return _IMPORT_LINE.search(text) is not None


def interface_digest(result: CheckResult, flow_file: str) -> str:
    """``sha256:<hex>`` of what a client module generated from the checked program ``result``
    (which has no errors) relies on: its models (the input, output and stage types: names,
    fields, constraints), its function names and its stage templates (which steps hold each
    stage's value). A comment, a ``///`` doc, blank lines, line endings, a prompt or a setting
    changed in the `.flow` leave it as it was; two texts of a flow have the same interface digest
    exactly when `flowc gen python` writes the same module from both, docs and header aside.
    Raises :class:`~agentflow.errors.ContractError` as :func:`generate_python` does."""
    return _interface_of(*_module_parts(result, flow_file, docs=False))


class Header(NamedTuple):
    """A generated module's ``# flowc-gen:`` line read back: ``source`` (the flow file relative
    to the module's directory, ``/`` separators), ``digest`` (:func:`source_digest` of the text
    it was generated from), ``interface`` (:func:`interface_digest`; None in a module written
    before it was recorded)."""

    source: str
    digest: str
    interface: str | None = None


def read_header(module_text: str) -> Header | None:
    """The :class:`Header` of a generated module's text, or None (not a generated module)."""
    m = _HEADER.search(module_text[:4000])
    return Header(m.group("source"), m.group("digest"), m.group("interface")) if m else None


def _pascal(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[_\-]+", name) if p) or "Value"


def _snake(name: str) -> str:
    s = re.sub(r"[^0-9A-Za-z_]", "_", name)
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", s).lower()
    if not s or s[0].isdigit():
        s = "flow_" + s
    return s


def _py_str(value: str) -> str:
    """A Python string literal for ``value`` (double quotes, one line)."""
    body = repr(value)
    if body.startswith("'") and '"' not in value:
        body = '"' + body[1:-1].replace("\\'", "'") + '"'
    return body


@dataclass
class _Model:
    name: str
    obj: T.ObjectType
    doc: str | None
    lines: list[str] = field(default_factory=list)


class _Generator:
    def __init__(self, result: CheckResult, *, docs: bool = True):
        self.env = result.env
        self.docs = docs  # `///` docs as descriptions and docstrings (not in the interface)
        self.result = result
        self.models: dict[str, _Model] = {}  # python name → model, in order of first use
        self.by_type: dict[str, str] = {}  # `.flow` type name → python name
        self.inline: dict[int, str] = {}  # id(inline ObjectType) → python name
        self.done: list[str] = []  # python names in the order their fields were filled
        self.uses_format = False
        self.uses_int = False
        #: the module's own names that depend on the flow (its functions) or are its API
        flow = _snake(result.flow_name)
        self.taken = _TAKEN | {
            "_Model", "INPUT", "OUTPUT", "STAGE_TEMPLATES",
            f"run_{flow}", f"run_{flow}_sync", f"{flow}_stages",
        }  # fmt: skip
        #: the class names of the flow's own types: a generated class (the flow's input and
        #: output, a stage's value, an inline object) never takes one of them
        self.reserved = {self._base_name(name) for name in self.env.objects}

    # -- names -----------------------------------------------------------------------------------
    def _base_name(self, wanted: str) -> str:
        name = wanted if wanted.isidentifier() else _pascal(re.sub(r"\W", "_", wanted))
        if keyword.iskeyword(name) or name in self.taken or hasattr(builtins, name):
            name += "_"
        return name

    def class_name(self, wanted: str, *, own: bool = False) -> str:
        """The Python class name of a model wanted as ``wanted``: a type the flow declares
        (``own``) keeps its name; a generated class gives way to the flow's types and to the
        classes named before it, taking the first free ``<name>2``, ``<name>3`` …"""
        name = self._base_name(wanted)
        base, n = name, 2
        while name in self.models or (not own and name in self.reserved):
            name, n = f"{base}{n}", n + 1
        return name

    # -- types -----------------------------------------------------------------------------------
    def annotation(self, t: T.Type, place: str) -> str:
        """The Python annotation of ``t``; ``place`` names an inline object's model."""
        if isinstance(t, T.NamedRef):
            if t.name in self.env.aliases:
                return self.annotation(self.env.aliases[t.name], place)
            if t.name in self.env.externs:
                raise ContractError(f"`{t.name}` is an extern type and has no JSON form")
            if t.name not in self.env.objects:
                raise ContractError(f"unknown type `{t.name}`")
            return self.named(t.name)
        if isinstance(t, T.ObjectType):
            if t.name is not None and t.name in self.env.objects:
                return self.named(t.name)
            if t.name is not None:  # Error, ErrorPlace: the built-in object types
                if t.name not in self.by_type:
                    self.by_type[t.name] = self.model_for(t, t.name, t.doc)
                return self.by_type[t.name]
            key = id(t)
            if key not in self.inline:
                self.inline[key] = self.model_for(t, place, None)
            return self.inline[key]
        if isinstance(t, T.Prim):
            return self.prim(t)
        if isinstance(t, T.ListType):
            return f"list[{self.annotation(t.elem, place + 'Item')}]"
        if isinstance(t, T.OptionalType):
            inner = self.annotation(t.inner, place)
            return inner if inner in ("JsonValue", "None") else f"{inner} | None"
        if isinstance(t, T.LiteralType):
            return self.literals([t.value])
        if isinstance(t, T.UnionType):
            literals = [m.value for m in t.members if isinstance(m, T.LiteralType)]
            others = [m for m in t.members if not isinstance(m, T.LiteralType)]
            parts = [self.literals(literals)] if literals else []
            parts.extend(self.annotation(m, place) for m in others)
            if "JsonValue" in parts:
                return "JsonValue"
            return " | ".join(dict.fromkeys(parts))
        if isinstance(t, T.MapType):
            return f"dict[str, {self.annotation(t.value, place + 'Value')}]"
        if isinstance(t, T.NeverType):
            return "Never"
        if isinstance(t, T.VerdictType):  # a value at run time: `{ passed, failures }`
            if "Verdict" not in self.by_type:
                self.by_type["Verdict"] = self.model_for(T.VERDICT_OBJECT, "Verdict", None)
            return self.by_type["Verdict"]
        if isinstance(t, T.ExternType):
            raise ContractError(f"`{t.name}` is an extern type and has no JSON form")
        raise ContractError(f"`{t}` has no JSON form")

    @staticmethod
    def literal(value: Any) -> str:
        if isinstance(value, str):
            return _py_str(value)
        return repr(value)

    def literals(self, values: list[Any]) -> str:
        """``Literal[…]`` of literal types; a number or ``true``/``false`` among them also gets
        :func:`agentflow.client.exact`, which compares as JSON does (``true`` is no ``1``, ``1.0``
        is ``1``); a float (which ``Literal`` cannot hold) is a ``float`` checked by it."""
        typable = [v for v in values if not isinstance(v, float)]
        parts = [f"Literal[{', '.join(self.literal(v) for v in typable)}]"] if typable else []
        if len(typable) < len(values):
            parts.append("float")
        ann = " | ".join(parts)
        if any(isinstance(v, bool | int | float) for v in values):
            ann = f"Annotated[{ann}, client.exact({', '.join(self.literal(v) for v in values)})]"
        return ann

    def prim(self, t: T.Prim) -> str:
        if t.name in ("text", "path", "member"):
            return "str"
        if t.name == "int":
            self.uses_int = True
            return "Int"
        if t.name == "number":
            return "float"
        if t.name == "bool":
            return "bool"
        if t.name == "duration":
            return f"Annotated[str, client.pattern_check({_py_str(DURATION_PATTERN)})]"
        if t.name == "null":
            return "None"
        return "JsonValue"

    def named(self, name: str) -> str:
        if name not in self.by_type:
            obj = self.env.objects[name]
            py = self.class_name(name, own=True)
            self.by_type[name] = py  # before its fields: a recursive reference finds it
            self.models[py] = _Model(py, obj, obj.doc or self.env.docs.get(name))
            self.fill(self.models[py])
        return self.by_type[name]

    def model_for(self, obj: T.ObjectType, wanted: str, doc: str | None) -> str:
        py = self.class_name(wanted)
        self.models[py] = _Model(py, obj, doc)
        self.fill(self.models[py])
        return py

    def fill(self, model: _Model) -> None:
        lines: list[str] = []
        for fname, f in model.obj.fields.items():
            inner_t = f.type.inner if f.optional and isinstance(f.type, T.OptionalType) else f.type
            ann = self.annotation(inner_t, model.name + _pascal(fname))
            ann = self.constrained(ann, inner_t, f.constraints)
            if f.optional and ann not in ("JsonValue", "None") and not ann.endswith("| None"):
                ann = f"{ann} | None"
            attr, alias = self.attribute(fname)
            args = []
            if f.optional:
                args.append("default=None")
            if alias is not None:
                args.append(f"alias={_py_str(alias)}")
            if f.doc and self.docs:
                args.append(f"description={_py_str(f.doc)}")
            if not args and len(f"    {attr}: {ann}") > 100 and _bare_literal(ann):
                lines.append(f"    {attr}: Literal[")  # one value a line, as `ruff format` has it
                lines += [f"        {v.strip()}," for v in _split_top(ann[len("Literal[") : -1])]
                lines.append("    ]")
            elif not args:
                lines.append(f"    {attr}: {ann}")
            elif args == ["default=None"]:
                lines.append(f"    {attr}: {ann} = None")
            elif len(line := f"    {attr}: {ann} = Field({', '.join(args)})") <= 100:
                lines.append(line)
            elif len(f"        {', '.join(args)}") <= 100:  # split as `ruff format` splits it
                lines += [f"    {attr}: {ann} = Field(", f"        {', '.join(args)}", "    )"]
            else:
                lines += [f"    {attr}: {ann} = Field(", *[f"        {a}," for a in args], "    )"]
        model.lines = lines
        self.done.append(model.name)

    @staticmethod
    def attribute(fname: str) -> tuple[str, str | None]:
        """``(attribute name, alias or None)``: a field name Python or Pydantic cannot take as
        an attribute (a keyword, ``_x``, ``model_x``, a BaseModel method) gets an alias."""
        if (
            keyword.iskeyword(fname)
            or fname.startswith("_")
            or fname.startswith("model_")
            or fname in _BASEMODEL_ATTRS
        ):
            attr = "f" + fname if fname.startswith("_") else fname + "_"
            return attr, fname
        return fname, None

    def constrained(self, ann: str, t: T.Type, constraints: dict[str, tuple[Any, ...]]) -> str:
        if not constraints:
            return ann
        resolved = self.env.resolve(t)
        while isinstance(resolved, T.NamedRef | T.OptionalType):
            resolved = self.env.resolve(
                resolved.inner if isinstance(resolved, T.OptionalType) else resolved
            )
        args: list[str] = []
        extra: list[str] = []
        for name, values in constraints.items():
            lo, hi = (list(values) + [None, None])[:2]
            if name == "range":
                if lo is not None:
                    args.append(f"ge={lo!r}")
                if hi is not None:
                    args.append(f"le={hi!r}")
            elif name == "length":
                if lo is not None:
                    args.append(f"min_length={lo!r}")
                if hi is not None:
                    args.append(f"max_length={hi!r}")
            elif name == "pattern" and values:
                extra.append(f"client.pattern_check({_py_str(str(values[0]))})")
            elif name == "format" and values:
                self.uses_format = True
                extra.append(f"client.format_check({_py_str(str(values[0]))})")
        if isinstance(resolved, T.UnionType | T.ErrorType):  # constraints of a union: per member
            return ann
        parts = [ann, *([f"Field({', '.join(args)})"] if args else []), *extra]
        return f"Annotated[{', '.join(parts)}]"

    # -- the module ------------------------------------------------------------------------------
    def render_model(self, model: _Model) -> list[str]:
        out = [f"class {model.name}(_Model):"]
        if model.doc and self.docs:
            out.append(f"    {_docstring(model.doc)}")
            out.append("")
        out.extend(model.lines or ["    pass"])
        return out


def _assignment(name: str, value: str) -> list[str]:
    """``name = value``, in parentheses over three lines when it is too long for one."""
    if len(f"{name} = {value}") <= 100:
        return [f"{name} = {value}"]
    return [f"{name} = (", f"    {value}", ")"]


def _bare_literal(ann: str) -> bool:
    """Whether ``ann`` is one ``Literal[…]`` and nothing else."""
    return ann.startswith("Literal[") and ann.endswith("]") and _split_top(ann)[0] == ann


def _split_top(text: str) -> list[str]:
    """``text`` split at its top-level commas (outside brackets and string literals)."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def _docstring(text: str) -> str:
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if "\n" in body:
        return '"""' + body.replace("\n", "\n    ") + '\n    """'
    return f'"""{body}"""'


def generate_python(result: CheckResult, source_text: str, flow_file: str, module_file: str) -> str:
    """The client module's text for the checked program ``result`` of ``source_text``.

    ``flow_file`` and ``module_file`` are paths (as the user gave them); the module finds the
    flow relative to its own directory at run time. Raises
    :class:`~agentflow.errors.CompileError` when the program has errors,
    :class:`~agentflow.errors.ContractError` when a type of its input, output or stages has no
    JSON form (an ``extern type``)."""
    if not result.ok:
        raise CompileError(result.errors, {flow_file: source_text})
    title, body = _module_parts(result, flow_file)
    rel = os.path.relpath(Path(flow_file).resolve(), Path(module_file).resolve().parent)
    rel = Path(rel).as_posix()
    digest = source_digest(source_text)
    interface = _interface_of(*_module_parts(result, flow_file, docs=False))
    lines = [
        title,
        "",
        f"Generated by `flowc gen python` from {rel}.",
        "Do not edit: run the command again after changing the flow (`flowc check` warns when",
        "this file is stale and flow.toml lists it under `[gen] python`).",
        '"""',
        "",
        f"{HEADER_MARK} source={rel} digest={digest} interface={interface}",
        "",
        "from __future__ import annotations",
        "",
        "import os",
        "from collections.abc import Callable, Iterable, Mapping  # noqa: F401",
        "from pathlib import Path",
        "from typing import TYPE_CHECKING, Annotated, Any, Literal, Never  # noqa: F401",
        "",
        "from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter  # noqa: F401",
        "",
        "from agentflow import client",
        "from agentflow.client import Int  # noqa: F401",
        "from agentflow.runtime.result import RunResult",
        "",
        "if TYPE_CHECKING:",
        *(f"    {line}" for line in _RUN_OPTION_IMPORTS),
        "",
        *_assignment("FLOW_FILE", f"Path(__file__).parent / {_py_str(rel)}"),
        f"FLOW_DIGEST = {_py_str(digest)}",
        f"FLOW_INTERFACE = {_py_str(interface)}",
        "",
        "",
        *body,
    ]
    return "\n".join(lines)


def _interface_of(title: str, body: list[str]) -> str:
    """The interface digest of a module's title line and body (:func:`interface_digest`)."""
    text = "\n".join([title, *body])
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _module_parts(
    result: CheckResult, flow_file: str, *, docs: bool = True
) -> tuple[str, list[str]]:
    """``(title, body)`` of the client module of the checked program ``result``: its
    docstring's first line and everything from its ``_Model`` class on — what depends on the
    program, not on where the flow and the module are or on the flow's exact text. Without
    ``docs``, the ``///`` docs and the flow's description are left out (the interface)."""
    g = _Generator(result, docs=docs)
    flow_name = _snake(result.flow_name)
    base = _pascal(result.flow_name)
    in_ann = g.annotation(result.input_type, base + "Input")
    out_ann = g.annotation(result.output_type, base + "Output")
    stage_anns: dict[str, str] = {}
    for name, st in result.stage_types.items():
        saved = (dict(g.models), dict(g.by_type), dict(g.inline), list(g.done))
        try:
            stage_anns[name] = g.annotation(st, base + _pascal(name))
        except ContractError:  # a stage whose value has no JSON form is left out of the model
            g.models, g.by_type, g.inline, g.done = saved
    stages_class = g.class_name(base + "Stages")
    summary = (result.description if docs else None) or result.flow_name
    title = f'"""Typed client of the agentflow flow `{result.flow_name}` ({_docline(summary)}).'
    lines: list[str] = [
        "class _Model(BaseModel):",
        '    """Closed and strict, as the flow\'s contracts are (no coercion, no unknown field)."""',
        "",
        "    model_config = ConfigDict(",
        '        extra="forbid",',
        "        strict=True,",
        "        allow_inf_nan=False,",
        "        protected_namespaces=(),",
        "    )",
    ]
    for name in g.done:  # a model after the models its fields use (recursion aside)
        lines += ["", "", *g.render_model(g.models[name])]
    # the stages model: each stage's value, None until its steps have finished
    lines += ["", "", f"class {stages_class}(_Model):"]
    lines.append(f'    """The value of each stage of `{result.flow_name}`, once it has one."""')
    lines.append("")
    for name, ann in stage_anns.items():
        attr, alias = _Generator.attribute(name)
        opt = ann if ann.endswith("| None") or ann in ("JsonValue", "None") else f"{ann} | None"
        if alias:
            lines.append(f"    {attr}: {opt} = Field(default=None, alias={_py_str(alias)})")
        else:
            lines.append(f"    {attr}: {opt} = None")
    if not stage_anns:
        lines.append("    pass")
    lines += ["", ""]
    for name in g.done:
        lines.append(f"{name}.model_rebuild()")
    lines.append(f"{stages_class}.model_rebuild()")
    lines += [
        f"INPUT: TypeAdapter[{in_ann}] = TypeAdapter({_runtime_ann(in_ann)})",
        f"OUTPUT: TypeAdapter[{out_ann}] = TypeAdapter({_runtime_ann(out_ann)})",
    ]
    templates = _stage_templates(result, flow_file)
    one_line = f"STAGE_TEMPLATES: dict[str, str] = {json.dumps(templates)}"
    if len(one_line) <= 100:
        lines.append(one_line)
    else:
        lines.append("STAGE_TEMPLATES: dict[str, str] = {")
        lines += [f"    {json.dumps(k)}: {json.dumps(v)}," for k, v in templates.items()]
        lines.append("}")
    # the input model, or a dict of its fields (validated into it: client.input_json)
    given_ann = in_ann if in_ann == "JsonValue" else f"{in_ann} | Mapping[str, Any]"
    input_param = f"input: {given_ann}" + (" = None" if in_ann == "JsonValue" else "")
    for is_async in (True, False):
        fn = f"run_{flow_name}" if is_async else f"run_{flow_name}_sync"
        lines += ["", ""]
        lines.append(f"{'async ' if is_async else ''}def {fn}(")
        lines += [
            f"    {input_param},",
            "    *,",
            *(f"    {name}: {ann} = {default}," for name, ann, default in RUN_OPTIONS),
            f") -> RunResult[{out_ann}]:",
        ]
        verb = "Run" if is_async else "Run (on its own event loop)"
        lines.append(f'    """{verb} `{result.flow_name}` on ``input``; the output is validated')
        lines.append(f"    into ``{_docline(out_ann)}``.")
        lines.append("")
        lines.append(
            "    The options are :func:`agentflow.run`'s (docs/reference/python-api.md); errors"
        )
        lines.append(
            '    come back as values (``result.error``), as from :func:`agentflow.run`."""'
        )
        call = "await client.run_flow" if is_async else "client.run_flow_sync"
        lines += [
            "    client.require_current(FLOW_FILE, FLOW_DIGEST, __file__, FLOW_INTERFACE)",
            f"    result = {call}(",
            "        FLOW_FILE,",
            "        client.input_json(INPUT, input),",
            *(f"        {name}={name}," for name, _, _ in RUN_OPTIONS),
            "    )",
            "    return client.typed_result(result, OUTPUT, FLOW_FILE, __file__)",
        ]
    lines += ["", ""]
    none = " = None" if in_ann == "JsonValue" else " | None = None"
    dump = "client.input_json(INPUT, input, exclude_unset=False)"
    params = ["result: RunResult[Any]", f"input: {given_ann}{none}"]
    head = f"def {flow_name}_stages({', '.join(params)}) -> {stages_class}:"
    if len(head) > 100:  # as `ruff format` splits a signature
        inner = f"    {', '.join(params)}"
        body = [inner] if len(inner) <= 100 else [f"    {p}," for p in params]
        head = "\n".join([f"def {flow_name}_stages(", *body, f") -> {stages_class}:"])
    lines += [
        head,
        f'    """Each stage\'s value in ``result`` (a run of `{result.flow_name}`) as its model:',
        "    the stages whose steps all finished (None for the others); ``input``: the run's",
        '    input, for a stage whose value is read from it."""',
        f"    given = None if input is None else {dump}",
        "    values = client.stage_values(result, STAGE_TEMPLATES, given)",
        f"    return {stages_class}.model_validate(values)",
        "",
    ]
    return title, lines


def _docline(text: str) -> str:
    return re.sub(r"\s+", " ", text).replace('"""', "'''").replace("\\", "/").strip()


def _runtime_ann(ann: str) -> str:
    """An annotation as a run-time expression (``X | None`` works at run time for classes)."""
    return ann


def _stage_templates(result: CheckResult, flow_file: str) -> dict[str, str]:
    _, stages = lower_with_stages(result, file=flow_file)
    return {k: v for k, v in stages.items() if isinstance(v, str)}


# -------------------------------------------------------------------------------- stale modules


def gen_modules(flow_file: str | os.PathLike[str]) -> list[Path]:
    """The generated modules the nearest ``flow.toml`` (from the flow file's directory upward)
    lists under ``[gen] python`` (paths relative to that file), or ``[]``: the opt-in of the
    ``stale-generated-module`` check. An unreadable or malformed ``flow.toml`` lists none
    (``flowc run`` reports it)."""
    candidate = find_config(Path(flow_file).resolve())
    if candidate is None:
        return []
    try:
        data = tomllib.loads(candidate.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    listed = (data.get("gen") or {}).get("python") if isinstance(data.get("gen"), dict) else None
    if not isinstance(listed, list):
        return []
    return [candidate.parent / p for p in listed if isinstance(p, str)]


def stale_diagnostics(
    flow_file: str,
    source_text: str,
    modules: list[Path],
    result: CheckResult | None = None,
) -> list[Diagnostic]:
    """A ``stale-generated-module`` warning for each of ``modules`` generated from
    ``flow_file`` (its header's source resolves to the same file) whose interface is not
    ``source_text``'s (:func:`interface_digest`): a comment, blank lines or line endings changed
    are no warning, a type, a field, a stage or the flow's name changed is. A module whose
    header records no interface (written before it was recorded) is compared by the text's
    digest. The same text is current at once only when it imports nothing: a change to an
    imported file's types changes the interface too. ``result``: the check of ``source_text`` (checked here when needed and not given);
    a program with errors is no warning (its errors are what is reported). Modules that are
    missing, unreadable or generated from another flow are skipped. The span is the program's
    ``flow`` header line (else its first line)."""
    out: list[Diagnostic] = []
    here = Path(flow_file).resolve()
    digest = source_digest(source_text)
    interface: list[str | None] = []  # computed once, when a module needs it
    for module in modules:
        try:
            header = read_header(module.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if header is None:
            continue
        if (module.resolve().parent / header.source).resolve() != here:
            continue
        if header.digest == digest and (header.interface is None or not may_import(source_text)):
            continue
        if header.interface is not None:
            if not interface:
                interface.append(current_interface(flow_file, source_text, result))
            if interface[0] is None or interface[0] == header.interface:
                continue
        shown = _shown(module)
        out.append(
            Diagnostic(
                code=D.STALE_GENERATED_MODULE,
                severity="warning",
                message=f"{shown} was generated from an earlier version of this flow",
                span=_header_span(flow_file, source_text),
                hint=f"run `flowc gen python {flow_file} -o {shown}` again",
            )
        )
    return out


def current_interface(
    flow_file: str, source_text: str, result: CheckResult | None = None
) -> str | None:
    """:func:`interface_digest` of the `.flow` text ``source_text`` (``result``: its check,
    checked here when not given), or None when the program has errors or a type with no JSON
    form: then no client module can be written from it, and running it reports why."""
    if result is None:
        result = check_source(source_text, flow_file)
    if not result.ok:
        return None
    try:
        return interface_digest(result, flow_file)
    except (CompileError, ContractError):  # a type with no JSON form, a plan it cannot lower
        return None


def _header_span(flow_file: str, text: str) -> Span:
    """The span of the program's ``flow`` header line, else of its first line: where an editor
    shows a warning about the whole file."""
    lines = text.split("\n")
    index = next((i for i, line in enumerate(lines) if re.match(r"flow\b", line)), 0)
    start = sum(len(line) + 1 for line in lines[:index])
    width = len(lines[index].rstrip("\r")) if lines else 0
    return Span(flow_file, index + 1, 1, index + 1, width + 1, start, start + width)


def _shown(module: Path) -> str:
    """``module`` relative to the current directory when it is beneath it, else as it is."""
    try:
        return module.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(module)
