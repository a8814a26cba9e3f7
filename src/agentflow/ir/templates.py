"""Templates in plan values, parsed once at load time (docs/spec/PLAN_IR.md §3–4).

:func:`compile_value` turns a plan value into its *compiled* form: the same structure, where every
string holding ``{{`` is an :class:`agentflow.grammar.ast.Template`, every condition's ``expr`` is an
:class:`agentflow.grammar.ast.Expr`, and nested :class:`~agentflow.ir.models.Step` objects are kept
as they are (they carry their own ``compiled``).  Schemas (``output_schema``, ``input_schema``,
``schema``) are never compiled.

Positions: the loader records where each YAML node sits in a :class:`SourceMap`; spans of parsed
templates are rewritten to point into the plan file, so errors name file:line:col of the YAML.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agentflow.core.diagnostics import (
    PLAN_EFFECTFUL_TEMPLATE,
    PLAN_FUNCTION_CALL,
    PLAN_TEMPLATE_SYNTAX,
    PLAN_TOO_DEEP,
    Diagnostic,
)
from agentflow.core.functions import FUNCTIONS, KIND_WORDS, PARAM_KINDS, arity, function_hint
from agentflow.core.spans import Span
from agentflow.core.vocabulary import MAX_EXPR_DEPTH, PLAN_SCHEMA_KEYS
from agentflow.errors import PlanLoadError, SourceError
from agentflow.grammar import ast
from agentflow.grammar.ast import too_deep as too_deep  # re-exported: runtime/expressions.py
from agentflow.grammar.parser import parse_expression, parse_template
from agentflow.ir.models import Step

Path = tuple[str | int, ...]

#: Keys whose values are JSON Schemas: never compiled.
SCHEMA_KEYS: frozenset[str] = PLAN_SCHEMA_KEYS

#: Expression nodes that have effects and so are not allowed in templates (docs/spec/PLAN_IR.md §3:
#: the *pure* part of the expression language).
EFFECTFUL_NODES: tuple[type, ...] = (
    ast.Call,
    ast.CallOptions,
    ast.MapExpr,
    ast.CatchExpr,
    ast.FilterExpr,
    ast.ReduceExpr,
    ast.AskExpr,
    ast.AgentExpr,
    ast.VerifyExpr,
    ast.ParallelExpr,
)

_LOC_PREFIX = re.compile(r"^.*?:\d+:\d+: ")


def path_str(path: Path) -> str:
    """Render a value path: ``("steps", 2, "input", "do")`` → ``steps[2].input.do``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


# ---------------------------------------------------------------------------------------------
# Source positions


@dataclass(slots=True)
class NodeSource:
    """Where a YAML node sits in its plan file.

    ``at``: the whole node, from its first character (the quote or ``|`` included) to one past
    its last; ``key``: its mapping key, when it is a mapping value (the key's text); ``text``:
    the first character of a scalar's text, a point (None for mappings and sequences);
    ``block_indent``: the column (1-based) where the later lines of a scalar's text start (a
    ``|``/``>`` block's indentation, else 1).
    """

    at: Span
    key: Span | None = None
    text: Span | None = None
    block_indent: int | None = None
    #: one-line quoted scalars with escapes (``\"``, ``''``): the raw offset, from the text's
    #: first character, of each decoded character (and one past the last), so columns inside
    #: the text map to the file exactly
    raw_offsets: list[int] | None = None


@dataclass
class SourceMap:
    """Where the nodes of one plan file sit, keyed by value path (see :func:`path_str`)."""

    file: str
    nodes: dict[Path, NodeSource] = field(default_factory=dict)
    line_starts: list[int] = field(default_factory=list)

    def get(self, path: Path) -> NodeSource | None:
        """The node at ``path``, or its nearest recorded ancestor."""
        path = tuple(path)
        while True:
            node = self.nodes.get(path)
            if node is not None or not path:
                return node
            path = path[:-1]

    def offset(self, line: int, column: int) -> int:
        """The 0-based character offset of 1-based ``line``/``column`` (0 when out of range)."""
        if 0 < line <= len(self.line_starts):
            return self.line_starts[line - 1] + column - 1
        return 0

    def location(self, path: Path, *, key: bool = False) -> Span:
        """The span of the value at ``path`` (of its key when ``key`` and known), or of its
        nearest recorded ancestor; the whole file when nothing is recorded."""
        node = self.nodes.get(tuple(path)) if key else None
        if node is not None and node.key is not None:
            return node.key
        node = self.get(path)
        if node is None:
            return Span.at(self.file)
        return node.at

    def map_point(self, path: Path, rel_line: int, rel_col: int) -> tuple[int, int, int]:
        """Map a (line, column) inside a scalar's text to the file: ``(line, column, offset)``."""
        node = self.nodes.get(tuple(path))
        if node is None or node.text is None:
            return rel_line, rel_col, 0
        text = node.text
        if rel_line <= 1:
            shift = rel_col - 1
            raw = node.raw_offsets
            if raw is not None and 0 <= shift < len(raw):
                shift = raw[shift]
            line, col = text.line, text.column + shift
        else:
            line = text.line + rel_line - 1
            col = (node.block_indent or 1) + rel_col - 1
        offset = 0
        if 0 < line <= len(self.line_starts):
            offset = self.line_starts[line - 1] + col - 1
        return line, col, offset

    def map_span(self, path: Path, span: Span) -> Span:
        """Map a span relative to a scalar's text to a span in the file."""
        line, col, start = self.map_point(path, span.line, span.column)
        end_line, end_col, end = self.map_point(path, span.end_line, span.end_column)
        return Span(self.file, line, col, end_line, end_col, start, end)


def _problem(
    smap: SourceMap | None,
    file: str,
    path: Path,
    code: str,
    message: str,
    *,
    hint: str | None = None,
    span: Span | None = None,
    mapped: bool = False,
) -> Diagnostic:
    """A template problem at ``span`` (relative to the text at ``path``, mapped into the file
    through ``smap``; already in the file when ``mapped``), else at the value at ``path``, else
    the whole file."""
    if span is not None and smap is not None and tuple(path) in smap.nodes:
        loc = span if mapped else smap.map_span(path, span)
    elif smap is not None:
        loc = smap.location(path)
    else:
        loc = Span.at(file)
    prefix = path_str(path)
    return Diagnostic(code, f"{prefix}: {message}" if prefix else message, loc, hint=hint)


# ---------------------------------------------------------------------------------------------
# AST walking


def iter_nodes(node: Any) -> Iterator[ast.Node]:
    """Every AST node under ``node`` (itself included), depth first; lists are walked."""
    return ast.walk(node)


def _remap_spans(root: ast.Node, fn: Callable[[Span], Span]) -> None:
    for node in ast.walk(root):
        for name in type(node).__dataclass_fields__:
            value = getattr(node, name)
            if isinstance(value, Span):
                setattr(node, name, fn(value))


def _relocate(root: ast.Node, smap: SourceMap | None, file: str, path: Path) -> None:
    if smap is not None and tuple(path) in smap.nodes:
        _remap_spans(root, lambda s: smap.map_span(path, s))
    # otherwise the spans stay relative to the text; they already name ``file`` (the parser
    # was given it), so no walk is needed


def iter_compiled(compiled: Any) -> Iterator[ast.Template | ast.Expr]:
    """Every parsed template or condition expression in a compiled tree; does not enter nested
    :class:`~agentflow.ir.models.Step` objects (bodies)."""
    if isinstance(compiled, ast.Template | ast.Expr):
        yield compiled
    elif isinstance(compiled, dict):
        for v in compiled.values():
            yield from iter_compiled(v)
    elif isinstance(compiled, list | tuple):
        for v in compiled:
            yield from iter_compiled(v)


def iter_compiled_paths(compiled: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Like :func:`iter_compiled`, with each item's value path (``path`` + keys/indices)."""
    if isinstance(compiled, ast.Template | ast.Expr):
        yield tuple(path), compiled
    elif isinstance(compiled, dict):
        for k, v in compiled.items():
            yield from iter_compiled_paths(v, (*path, k))
    elif isinstance(compiled, list | tuple):
        for i, v in enumerate(compiled):
            yield from iter_compiled_paths(v, (*path, i))


def iter_names(compiled: Any) -> Iterator[ast.Name]:
    """Every root-name reference (:class:`ast.Name`) in a compiled tree, bodies excluded."""
    for tpl in iter_compiled(compiled):
        for node in iter_nodes(tpl):
            if isinstance(node, ast.Name):
                yield node


def template_refs(compiled: Any) -> set[str]:
    """The root names (``input``, step ids, ``item``…) referenced by a compiled tree.

    Nested :class:`Step` objects (bodies) are not entered: check them with their own scope.
    """
    return {n.name for n in iter_names(compiled)}


# ---------------------------------------------------------------------------------------------
# Compilation


def _parse_template(text: str, file: str) -> ast.Template:
    return parse_template(text, file)


def _parse_expression(text: str, file: str) -> ast.Expr:
    return parse_expression(text, file)


def compile_value(
    value: Any,
    *,
    file: str = "<plan>",
    path: Path = (),
    source_map: SourceMap | None = None,
    problems: list[Diagnostic] | None = None,
    conditions: bool = True,
) -> Any:
    """Compile a plan value: a copy where each ``str`` containing ``{{`` is an ``ast.Template``.

    - Other strings, numbers, bools and None are kept; dicts and lists are copied.
    - Nested ``Step`` objects are kept as they are (compile them first, separately).
    - With ``conditions``, the value of a ``when`` or ``until`` key (and items of ``all``/``any``, the value of
      ``not`` inside it) is a condition: its ``expr`` string is parsed with ``parse_expression``.
    - Values under :data:`SCHEMA_KEYS` are returned uncompiled.
    - ``path`` is the value's path in the plan (``("steps", 1, "input")``); with ``source_map``
      the spans of parsed nodes point into the plan file.

    Template errors (syntax, effectful expressions) are appended to ``problems`` (the bad string is
    then kept as ``str``); when ``problems`` is None, a :class:`PlanLoadError` is raised instead.
    """
    own = problems is None
    errs: list[Diagnostic] = [] if problems is None else problems
    out = _compile(value, file, tuple(path), source_map, errs, conditions, False)
    if own and errs:
        raise PlanLoadError(errs)
    return out


def compile_expression(
    text: str,
    *,
    file: str = "<plan>",
    path: Path = (),
    source_map: SourceMap | None = None,
    problems: list[Diagnostic],
) -> ast.Expr | None:
    """``text`` parsed as one pure expression (a plan function's body: docs/spec/PLAN_IR.md
    "functions"), its spans in the plan file with ``source_map``; None when it does not parse,
    is too deep or has effects (the problem appended to ``problems``)."""
    node = _compile_text(text, file, tuple(path), source_map, problems, template=False)
    return node if isinstance(node, ast.Expr) else None


#: Keys whose mapping is a condition (docs/spec/PLAN_IR.md §4): a gate's ``when``, a ``loop``'s
#: ``until``, and ``not`` inside a condition.
_CONDITION_KEYS = ("when", "until", "not")


def _compile(
    value: Any,
    file: str,
    path: Path,
    smap: SourceMap | None,
    errs: list[Diagnostic],
    conditions: bool,
    in_condition: bool,
) -> Any:
    if isinstance(value, Step):
        return value
    if isinstance(value, str):
        if "{{" not in value:
            return value
        return _compile_text(value, file, path, smap, errs, template=True)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            sub = (*path, k)
            if k in SCHEMA_KEYS:
                out[k] = v
            elif in_condition and k == "expr" and isinstance(v, str):
                out[k] = _compile_text(v, file, sub, smap, errs, template=False)
            elif in_condition and k in ("all", "any") and isinstance(v, list):
                out[k] = [
                    _compile(item, file, (*sub, i), smap, errs, conditions, isinstance(item, dict))
                    for i, item in enumerate(v)
                ]
            elif (conditions or in_condition) and k in _CONDITION_KEYS and isinstance(v, dict):
                if k == "not" and not in_condition:
                    out[k] = _compile(v, file, sub, smap, errs, conditions, False)
                else:
                    out[k] = _compile(v, file, sub, smap, errs, conditions, True)
            else:
                out[k] = _compile(v, file, sub, smap, errs, conditions, False)
        return out
    if isinstance(value, list):
        return [
            _compile(v, file, (*path, i), smap, errs, conditions, False)
            for i, v in enumerate(value)
        ]
    return value


@functools.lru_cache(maxsize=4096)
def _parse_shared(
    text: str, file: str, template: bool
) -> tuple[ast.Template | ast.Expr, ast.Node | None, ast.Node | None]:
    """The parse of a template or condition whose spans stay relative to its text (no source
    map), with its first too-deep node and first effectful node (None when there is none):
    shared by every place that holds the same text (``{{ result.output }}`` in each agent step,
    a compiled plan's repeated reads; ~70% of a compiled plan's templates), so each text is
    parsed and walked once. Nothing mutates a parsed template after :func:`_compile_text`,
    which relocates only fresh parses."""
    node = _parse_template(text, file) if template else _parse_expression(text, file)
    return node, *_verdicts(node)


def _verdicts(node: ast.Node) -> tuple[ast.Node | None, ast.Node | None]:
    """``node``'s first node nested too deeply, else its first effectful node (when too deep,
    the tree is not walked further)."""
    deep = too_deep(node)
    if deep is not None:
        return deep, None
    return None, next((n for n in iter_nodes(node) if isinstance(n, EFFECTFUL_NODES)), None)


def _bad_function_call(
    effectful: ast.Node | None, node: ast.Node
) -> tuple[str, str | None, Span] | None:
    """A call the library cannot run, as ``(message, hint, span)``: a name called with
    positional arguments that is no library function (the parser made it a tool
    :class:`ast.Call`, ``effectful``), or a library function given too few or too many arguments
    (docs/reference/functions.md)."""
    if (
        isinstance(effectful, ast.Call)
        and isinstance(effectful.callee, ast.Name)
        and effectful.positional
        and not effectful.args
    ):
        name = effectful.callee.name
        meant = function_hint(name)
        return (
            f"unknown function `{name}`",
            f"did you mean `{meant}`? `{FUNCTIONS[meant].signature}`"
            if meant
            else "the library functions are in docs/reference/functions.md",
            effectful.callee.span,
        )
    for n in iter_nodes(node):
        if isinstance(n, ast.FuncCall):
            spec = FUNCTIONS[n.name]
            if not spec.min_args <= len(n.args) <= spec.max_args:
                return (
                    f"`{n.name}` takes {arity(spec)}, {len(n.args)} given",
                    f"`{spec.signature}`",
                    n.span,
                )
            for p, kind, arg in zip(spec.params, PARAM_KINDS[n.name], n.args, strict=False):
                got = _literal_kind(arg)
                if got is not None and kind != "any" and not _kind_fits(got, kind):
                    return (
                        f"argument `{p.name}` of `{n.name}` must be {KIND_WORDS[kind]}, "
                        f"not {_LITERAL_WORDS[got]}",
                        f"`{spec.signature}`",
                        arg.span,
                    )
    return None


#: literal nodes → the JSON kind of their value
_LITERAL_KINDS: dict[type, str] = {
    ast.StringLit: "text",
    ast.BoolLit: "bool",
    ast.NullLit: "null",
    ast.ListLit: "list",
    ast.ObjectLit: "map",
}
_LITERAL_WORDS = {
    "text": "a text",
    "bool": "a bool",
    "null": "null",
    "list": "a list",
    "map": "an object",
    "int": "an integer",
    "number": "a number",
}


def _literal_kind(arg: ast.Expr) -> str | None:
    """The kind of a literal argument (None for anything computed)."""
    if isinstance(arg, ast.NumberLit):
        return "int" if isinstance(arg.value, int) else "number"
    if isinstance(arg, ast.StringLit) and not arg.is_plain:
        return "text"
    return _LITERAL_KINDS.get(type(arg))


def _kind_fits(got: str, kind: str) -> bool:
    if got == kind or (got == "int" and kind == "number"):
        return True
    if kind == "int" and got == "number":
        return False
    return got in kind.split("|")


def _compile_text(
    text: str,
    file: str,
    path: Path,
    smap: SourceMap | None,
    errs: list[Diagnostic],
    *,
    template: bool,
) -> str | ast.Node:
    try:
        if smap is not None and tuple(path) in smap.nodes:
            node = _parse_template(text, file) if template else _parse_expression(text, file)
            deep, effectful = _verdicts(node)
        else:
            node, deep, effectful = _parse_shared(text, file, template)
    except SourceError as exc:
        exc.message = _LOC_PREFIX.sub("", exc.message)
        message = exc.message
        if exc.span is not None and smap is None:
            # no file positions: say where inside the string
            message = f"{message} (at {exc.span.line}:{exc.span.column} of the text)"
        errs.append(
            _problem(smap, file, path, PLAN_TEMPLATE_SYNTAX, message, hint=exc.hint, span=exc.span)
        )
        return text
    if deep is not None:
        what = "template" if template else "expression"
        errs.append(
            _problem(
                smap,
                file,
                path,
                PLAN_TOO_DEEP,
                f"{what} nested too deeply (more than {MAX_EXPR_DEPTH} levels)",
                hint="split it into several steps",
                span=Span.at(file, deep.span.line, deep.span.column),
            )
        )
        return text
    _relocate(node, smap, file, path)  # moves the spans of a fresh parse, `effectful`'s too
    bad_call = _bad_function_call(effectful, node) if "(" in text else None
    if bad_call is not None:
        message, hint, span = bad_call
        errs.append(
            _problem(
                smap, file, path, PLAN_FUNCTION_CALL, message, hint=hint, span=span, mapped=True
            )
        )
        return text
    if effectful is not None:
        kind = type(effectful).__name__.removesuffix("Expr").lower()
        kind = "a tool call" if kind == "call" else f"`{kind}`"
        errs.append(
            _problem(
                smap,
                file,
                path,
                PLAN_EFFECTFUL_TEMPLATE,
                f"templates hold pure expressions only; {kind} is not allowed here",
                span=effectful.span,
                mapped=True,
            )
        )
        return text
    return node
