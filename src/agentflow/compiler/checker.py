"""The `.flow` type checker (docs/spec/LANGUAGE.md §2–9).

``check_module(module, parse_diagnostics=...)`` resolves every name and type of a parsed module,
types every expression (bidirectionally: an expected type flows into literals), and reports all
the problems it finds as :class:`~agentflow.core.diagnostics.Diagnostic` objects.  It never
raises for any module the parser can produce, and it avoids cascades: anything whose type could
not be determined gets the error type (:data:`~agentflow.compiler.types.ERROR`), which is silently
assignable to and from everything.  Items that are :class:`ast.ErrorItem` get no diagnostics.

The :class:`CheckResult` carries what the lowering needs: the type of every expression
(``expr_types``, keyed by ``id(node)``), what every name refers to (``references``), the stage
types, the tools called with their signatures, and the flow's header data.
"""

from __future__ import annotations

import difflib
import functools
import gc
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentflow.compiler import check_errors
from agentflow.compiler.check_tests import check_tests
from agentflow.compiler.types import (
    BOOL,
    DURATION,
    ERROR,
    INT,
    JSON,
    MEMBER,
    NEVER,
    NULL,
    NUMBER,
    PATH,
    PRIMS,
    TEXT,
    VERDICT,
    VERDICT_OBJECT,
    ErrorType,
    ExternType,
    Field,
    ListType,
    LiteralType,
    MapType,
    NamedRef,
    NeverType,
    ObjectType,
    OptionalType,
    RangeType,
    Type,
    TypeEnv,
    UnionType,
    UseType,
    VerdictType,
    assignable,
    finite_values,
    is_numeric,
    is_textual,
    join,
    literal_str,
    make_optional,
    make_union,
    object_mismatches,
    overlaps,
    schema_problem,
    strip_optional,
    type_str,
    widen,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Diagnostic, Note, did_you_mean
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    BUILTIN_TYPES,
    EXPRESSION_WORDS,
    MAX_CONCURRENCY,
    MAX_ITERATIONS,
    MAX_RETRY_ATTEMPTS,
    RETRYABLE_CODES,
    STATEMENT_WORDS,
    VERDICT_TYPE,
    duration_ms,
    duration_text,
)
from agentflow.grammar import ast
from agentflow.stdlib import PRELUDE

__all__ = [
    "Symbol",
    "ToolSig",
    "CheckResult",
    "check_module",
    "prelude_tools",
    "flow_name_from_file",
]

#: JSON Schema formats accepted by ``@format`` (draft 2020-12)
FORMATS = (
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
)


@dataclass(slots=True)
class Symbol:
    """What a name refers to.

    ``kind`` is one of ``input``, ``stage``, ``let``, ``loopvar``, ``acc``, ``index``, ``use``;
    ``name`` the name; ``type`` its type; ``decl`` the declaring node (``StageDecl``,
    ``LetStmt``, the ``MapExpr``/``FilterExpr``/``ReduceExpr`` binding a loop variable, the
    ``UseDecl``, or ``None`` for ``input``).
    """

    kind: str
    name: str
    type: Type = ERROR
    decl: Any = None


@dataclass(slots=True)
class ToolSig:
    """A tool signature: ``params`` maps name → ``(type, optional)``; ``declared`` is False for
    an untyped catalog tool (``server__tool`` without ``extern tool``), whose params are the
    arguments of the call and whose result is ``json``.  ``prelude`` is True for the standard
    library tools (named ``builtin__<name>`` in plans)."""

    name: str
    params: dict[str, tuple[Type, bool]]
    returns: Type
    declared: bool = True
    prelude: bool = False
    decl: Any = None
    #: the catalog tool's own name when it differs from ``name``
    #: (``extern tool "everything__get-tiny-image" as everything__get_tiny_image(…)``)
    catalog: str | None = None

    @property
    def catalog_name(self) -> str:
        """The tool's name in plans and the catalog: ``builtin__NAME`` for the prelude, the
        quoted name of an ``extern tool "…" as NAME``, else ``name``."""
        if self.prelude:
            return f"builtin__{self.name}"
        return self.catalog or self.name


@dataclass(slots=True)
class CheckResult:
    """The outcome of :func:`check_module`.

    - ``diagnostics``: parse and check diagnostics, sorted by position;
    - ``module``: the checked :class:`ast.Module`; ``env``: the named types;
    - ``expr_types``: ``id(expr node)`` → :class:`Type`, for every expression checked;
    - ``stage_types``: stage name → declared (or inferred) type; ``stages``: the stage
      declarations in order (duplicates and error items left out);
    - ``uses``: alias → :class:`ast.UseDecl`;
    - ``tools``: name → :class:`ToolSig` for every tool called;
      ``tool_decls``: every declared tool (file ``extern tool`` and prelude);
    - ``input_type`` (``json`` without ``input``), ``output_type`` (``output`` or the last
      stage's type), ``flow_name`` (header name, else the file stem with ``-`` → ``_``),
      ``description``, ``deadline_ms``;
    - ``references``: ``id(ast.Name node)`` → :class:`Symbol`;
    - ``constants``: ``id(expr)`` → the value the compiler computed for a setting written as a
      constant (``limit``, ``max_iterations``, ``timeout``, ``retry { attempts }``, budget
      limits): an int or float, a duration as its text (``"1m30s"``). A ``limit`` or
      ``max_iterations`` that is not a constant is absent: the plan evaluates it at run time
      (docs/decisions.md "Settings: compile time or run time").
    """

    diagnostics: list[Diagnostic]
    module: ast.Module
    env: TypeEnv
    expr_types: dict[int, Type]
    stage_types: dict[str, Type]
    stages: list[ast.StageDecl]
    uses: dict[str, ast.UseDecl]
    tools: dict[str, ToolSig]
    tool_decls: dict[str, ToolSig]
    input_type: Type
    output_type: Type
    flow_name: str
    description: str | None
    deadline_ms: int | None
    references: dict[int, Symbol]
    constants: dict[int, Any] = field(default_factory=dict)
    #: the ``test`` blocks (docs/reference/testing.md), checked; not part of the plan
    tests: list[ast.TestDecl] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        """The error-severity diagnostics."""
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed)."""
        return not self.errors

    def type_of(self, node: ast.Node) -> Type:
        """The type recorded for an expression node (the error type when none)."""
        return self.expr_types.get(id(node), ERROR)


# ---------------------------------------------------------------------------------------------
# helpers


_walk = ast.walk


def _const(expr: ast.Expr | None) -> tuple[bool, Any]:
    """Evaluate a literal constant: ``(True, value)`` or ``(False, None)``."""
    if isinstance(expr, ast.NumberLit):
        return True, expr.value
    if isinstance(expr, ast.Unary) and expr.op == "-" and isinstance(expr.operand, ast.NumberLit):
        return True, -expr.operand.value
    if isinstance(expr, ast.StringLit) and expr.is_plain:
        return True, expr.text
    if isinstance(expr, ast.BoolLit):
        return True, expr.value
    if isinstance(expr, ast.NullLit):
        return True, None
    return False, None


@dataclass(frozen=True, slots=True)
class _Duration:
    """A duration the compiler computed: milliseconds, and the text of a literal (kept as the
    user wrote it: ``90s`` stays ``90s``)."""

    ms: int
    text: str | None = None


def _what_is(e: ast.Expr) -> str:
    """A name for an expression in a note: its path as written (``input.t``, ``xs.count``),
    else "this value"."""
    parts = []
    while isinstance(e, ast.Member):
        parts.append(e.name)
        e = e.obj
    if isinstance(e, ast.Name):
        return "`" + ".".join([e.name, *reversed(parts)]) + "`"
    return "this value"


def _duration_hint(e: ast.Expr) -> str:
    """The hint for a number or a string where a duration goes: `timeout 2` → `2s`."""
    if isinstance(e, ast.NumberLit):
        return f"a duration needs a unit: `{e.value}s` (or `ms`, `m`, `h`)"
    if isinstance(e, ast.StringLit) and e.is_plain:
        try:
            duration_ms(e.text)
        except ValueError:
            pass
        else:
            return f"a duration is written without quotes: `{e.text.strip()}`"
    return "write a duration such as `90s`, `5m` or `1h30m`"


#: keywords that start a statement or an expression (the hint of a misspelt one read as a name)
_EXPRESSION_KEYWORDS = [
    *STATEMENT_WORDS,
    *(w for w in EXPRESSION_WORDS if w not in ("and", "or", "in")),
]


@dataclass(slots=True)
class _Expect:
    span: ast.Span
    what: str


def _expect_clause(e: ast.Expr) -> _Expect | None:
    """The ``expect`` clause that gives ``e`` its type: of an ``agent`` block (its first, the one
    that counts) or of an ``ask``; None for anything else."""
    if isinstance(e, ast.AgentExpr):
        for c in e.clauses:
            if c.kind == "expect":
                return _Expect(c.span, "agent")
    if isinstance(e, ast.AskExpr) and e.expect is not None:
        return _Expect(e.expect.span, "ask")
    return None


#: expressions that are effects (a step each, in evaluation order)
_EFFECT_NODES = (ast.Call, ast.AgentExpr, ast.AskExpr, ast.VerifyExpr, ast.FilterExpr)

#: literal expressions: a side of a comparison that is one of these is not what the hint lists
_LITERALS = (ast.StringLit, ast.NumberLit, ast.BoolLit, ast.NullLit)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


#: the binary operators the compiler folds: numbers with ``+ - *``, durations with ``+ -``
_FOLD = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
}


# ---------------------------------------------------------------------------------------------
# prelude


@functools.cache
def _prelude_module() -> ast.Module | None:
    try:
        from agentflow.grammar.parser import parse_module
    except ImportError:  # pragma: no cover - the parser is part of the package
        return None
    try:
        text = PRELUDE.read_text(encoding="utf-8")
    except OSError:  # pragma: no cover
        return None
    module, _diags = parse_module(text, "<prelude>")
    return module


@functools.cache
def prelude_tools() -> dict[str, ToolSig]:
    """The standard library tool signatures (docs/spec/LANGUAGE.md §7), parsed once from
    ``stdlib/prelude.flow`` and cached for the process."""
    module = _prelude_module()
    if module is None:
        return {}
    env = TypeEnv()
    resolver = _Checker(ast.Module(module.span, module.file, []), (), prelude=False)
    resolver.env = env
    sigs: dict[str, ToolSig] = {}
    for item in module.items:
        if isinstance(item, ast.ExternTool):
            sig = resolver.tool_sig(item)
            sig.prelude = True
            sigs[item.name.name] = sig
    return sigs


# ---------------------------------------------------------------------------------------------
# the checker


@dataclass(slots=True)
class _Var:
    symbol: Symbol
    span: Span
    used: bool = False


@dataclass(slots=True)
class _Frame:
    """A stage or control body: its expected value type and the value types it produced."""

    expected: Type | None
    values: list[Type] = field(default_factory=list)


class _Checker:
    def __init__(self, module: ast.Module, parse_diagnostics, *, prelude: bool = True) -> None:
        self.module = module
        self.use_prelude = prelude
        self.diags: list[Diagnostic] = list(parse_diagnostics)
        self.env = TypeEnv()
        self.types: dict[int, Type] = {}
        self.refs: dict[int, Symbol] = {}
        self.scopes: list[dict[str, _Var]] = []
        self.frames: list[_Frame] = []
        self.proj: list[Type] = []
        self.stage_types: dict[str, Type] = {}
        self.stage_syms: dict[str, Symbol] = {}
        self.stage_order: list[ast.StageDecl] = []
        self.all_stages: dict[str, ast.StageDecl] = {}
        self.current_stage: str | None = None
        self.uses: dict[str, ast.UseDecl] = {}
        self.use_syms: dict[str, Symbol] = {}
        self.externs: dict[str, ast.ExternTool] = {}
        self.tool_decls: dict[str, ToolSig] = {}
        self.tools: dict[str, ToolSig] = {}
        self.tool_calls: set[int] = set()
        self.error_names: set[str] = set()
        self.type_decls: dict[str, ast.Item] = {}
        self.alias_decls: dict[str, ast.TypeDecl] = {}
        self.alias_done: dict[str, Type] = {}
        self.alias_reported: set[str] = set()
        self.input_type: Type = JSON
        self.input_sym = Symbol("input", "input", JSON, None)
        self.range_ok: int | None = None
        self.target_ok: int | None = None
        self.constants: dict[int, Any] = {}

    # -- diagnostics ---------------------------------------------------------------------------

    def report(
        self,
        code: str,
        message: str,
        span: Span,
        *,
        notes: list[Note] | None = None,
        hint: str | None = None,
    ) -> None:
        sev = D.CODES[code].severity
        self.diags.append(Diagnostic(code, message, span, notes or [], hint, sev))

    def mismatch(self, expr: ast.Expr, got: Type, want: Type) -> None:
        """Report that ``expr`` (of type ``got``) is not assignable to ``want``, as precisely as
        possible (into object and list literals)."""
        want_r = self.env.resolve(strip_optional(want, self.env))
        if isinstance(expr, ast.ObjectLit) and isinstance(want_r, ObjectType):
            src = self.env.resolve(got)
            if isinstance(src, ObjectType):
                problems = object_mismatches(src, want_r, self.env)
                entries = {e.key: e for e in expr.entries}
                wname = type_str(want)
                reported = False
                missing = [f for k, f in problems if k == "missing"]
                # a misspelt key (`titel` for a missing `title`) is one mistake: one error, on
                # the key, rather than "missing `title`" and "no field `titel`" on the `{`
                typos: dict[str, str] = {}
                for kind, fname in problems:
                    if kind == "unknown":
                        hint = _suggest(fname, [m for m in missing if m not in typos.values()])
                        if hint:
                            typos[fname] = hint.split("`")[1]
                for kind, fname in problems:
                    if kind == "missing":
                        if fname in typos.values():
                            continue
                        fdecl = want_r.fields[fname]
                        self.report(
                            D.TYPE_MISMATCH,
                            f"missing field `{fname}` in an object literal of type `{wname}`",
                            expr.span,
                            notes=[Note(f"field `{fname}` is required", fdecl.span)],
                        )
                        reported = True
                    elif kind == "unknown":
                        entry = entries.get(fname)
                        meant = typos.get(fname)
                        if meant is not None:
                            notes = [
                                Note(f"field `{meant}` is required", want_r.fields[meant].span)
                            ]
                            hint = f"did you mean `{meant}`?"
                        else:
                            names = ", ".join(f"`{f}`" for f in want_r.fields) or "none"
                            notes = [Note(f"the fields of `{wname}` are {names}")]
                            hint = _suggest(fname, list(want_r.fields))
                        self.report(
                            D.TYPE_MISMATCH,
                            f"`{wname}` has no field `{fname}`",
                            entry.key_span if entry else expr.span,
                            notes=notes,
                            hint=hint,
                        )
                        reported = True
                    else:
                        entry = entries.get(fname)
                        if entry is not None:
                            self.mismatch(
                                entry.value,
                                self.types.get(id(entry.value), ERROR),
                                want_r.fields[fname].type,
                            )
                            reported = True
                if reported:
                    return
        if isinstance(expr, ast.ListLit) and isinstance(want_r, ListType):
            done = False
            for item in expr.items:
                it = self.types.get(id(item), ERROR)
                if not assignable(it, want_r.elem, self.env):
                    self.mismatch(item, it, want_r.elem)
                    done = True
            if done:
                return
        if isinstance(got, ErrorType) or isinstance(want, ErrorType):
            return
        if isinstance(got, UseType):
            self.report(
                D.TYPE_MISMATCH,
                f"`{got.alias}` is a `use {got.kind}` alias, not a value "
                f"(expected `{type_str(want)}`)",
                expr.span,
                hint="a `use` alias can only be the target of `agent(…)`",
            )
            return
        shown = got if _has_literal(want, self.env) else widen(got)
        if want == DURATION and isinstance(expr, (ast.NumberLit, ast.StringLit)):
            self.report(
                D.TYPE_MISMATCH,
                f"expected `duration`, found `{type_str(shown)}`",
                expr.span,
                hint=_duration_hint(expr),
            )
            return
        expect = _expect_clause(expr)
        if expect is not None:
            # the value of `agent(…) { … }` / `ask … expect T` is its `expect` type: that clause
            # is what to change (or the expected type), not the block's first line
            self.report(
                D.TYPE_MISMATCH,
                f"expected `{type_str(want)}`, found `{type_str(shown)}`",
                expect.span,
                notes=[
                    Note(f"the answer of this `{expect.what}` has its `expect` type", expr.span)
                ],
                hint=f"`expect {type_str(want)}` would fit here",
            )
            return
        self.report(
            D.TYPE_MISMATCH,
            f"expected `{type_str(want)}`, found `{type_str(shown)}`",
            expr.span,
        )

    # -- types ---------------------------------------------------------------------------------

    def _type_hint(self, name: str) -> str | None:
        """The hint of `unknown-type`: did-you-mean among the declared types when one is close
        (the user's own `Record` beats the foreign-name hint for `record`), else the agentflow
        spelling of a type name from another language (`string` → `text`), else did-you-mean
        among the builtin types."""
        declared = set(self.type_decls) | set(self.env.externs)
        hint = _suggest(name, declared - set(PRIMS))
        if hint:
            return hint
        builtin = _suggest(name, set(PRIMS) | {VERDICT_TYPE})
        if builtin and builtin.split("`")[1].lower() == name.lower():
            return builtin  # `Bool`, `Text`: only the case differs
        return D.foreign_type_hint(name) or builtin

    def resolve_type(self, t: ast.TypeExpr, alias_stack: tuple[str, ...] = ()) -> Type:
        """Turn a written type into a semantic type, reporting unknown names, duplicate fields
        and invalid constraints."""
        if isinstance(t, ast.NamedType):
            name = t.name
            if name in PRIMS:
                return PRIMS[name]
            if name == VERDICT_TYPE:
                return VERDICT
            if name in self.env.objects or (
                name in self.type_decls
                and isinstance(self.type_decls[name], ast.TypeDecl)
                and self.type_decls[name].body is not None
            ):
                return NamedRef(name)
            if name in self.alias_decls:
                return self.resolve_alias(name, alias_stack)
            if name in self.env.externs:
                return self.env.externs[name]
            if name in self.error_names:
                return ERROR
            self.report(
                D.UNKNOWN_TYPE, f"unknown type `{name}`", t.span, hint=self._type_hint(name)
            )
            return ERROR
        if isinstance(t, ast.ArrayType):
            return ListType(self.resolve_type(t.element, alias_stack))
        if isinstance(t, ast.OptionalType):
            inner = self.resolve_type(t.inner, alias_stack)
            return ERROR if isinstance(inner, ErrorType) else make_optional(inner)
        if isinstance(t, ast.UnionType):
            members = [self.resolve_type(m, alias_stack) for m in t.members]
            if NULL in members:
                rest = make_union([m for m in members if m != NULL])
                return make_optional(rest) if not isinstance(rest, NeverType) else NULL
            return make_union(members)
        if isinstance(t, ast.LiteralType):
            if t.value is None:
                return NULL
            return LiteralType(t.value)
        if isinstance(t, ast.MapType):
            return MapType(self.resolve_type(t.value, alias_stack))
        if isinstance(t, ast.ObjectType):
            return self.object_type(t, None, None, alias_stack)
        return ERROR

    def object_type(
        self,
        t: ast.ObjectType,
        name: str | None,
        doc: str | None,
        alias_stack: tuple[str, ...] = (),
    ) -> ObjectType:
        fields: dict[str, Field] = {}
        first: dict[str, ast.FieldDecl] = {}
        for fd in t.fields:
            fname = fd.name.name
            ft = self.resolve_type(fd.type, alias_stack)
            constraints = self.constraints(fd, ft)
            if fname in first:
                self.report(
                    D.DUPLICATE_FIELD,
                    f"field `{fname}` is declared twice",
                    fd.name.span,
                    notes=[Note("first declared here", first[fname].name.span)],
                )
                continue
            first[fname] = fd
            optional = isinstance(ft, OptionalType) or ft == NULL
            fields[fname] = Field(ft, optional, constraints, fd.doc, fd.name.span)
        return ObjectType(fields, name, doc)

    def constraints(self, fd: ast.FieldDecl, ft: Type) -> dict[str, tuple]:
        out: dict[str, tuple] = {}
        base = self.env.resolve(strip_optional(ft, self.env))
        for c in fd.constraints:
            cname = c.name.name
            if cname not in ("range", "length", "pattern", "format"):
                self.report(
                    D.INVALID_CONSTRAINT,
                    f"unknown constraint `@{cname}`",
                    c.name.span,
                    hint=_suggest(cname, ["range", "length", "pattern", "format"]),
                )
                continue
            if cname in out:
                self.report(D.INVALID_CONSTRAINT, f"constraint `@{cname}` is given twice", c.span)
                continue
            values = []
            ok = True
            for a in c.args:
                is_const, v = _const(a)
                if not is_const:
                    self.report(
                        D.INVALID_CONSTRAINT,
                        f"the arguments of `@{cname}` must be literals",
                        a.span,
                    )
                    ok = False
                    break
                values.append(v)
            if not ok:
                continue
            if isinstance(base, ErrorType) or base == JSON:
                applies = True
            elif cname == "range":
                applies = is_numeric(base, self.env)
            elif cname == "length":
                applies = is_textual(base, self.env) or isinstance(base, (ListType, MapType))
            else:
                applies = is_textual(base, self.env)
            if not applies:
                what = {
                    "range": "numbers (`int`, `number`)",
                    "length": "text, arrays and maps",
                    "pattern": "text",
                    "format": "text",
                }[cname]
                self.report(
                    D.INVALID_CONSTRAINT,
                    f"`@{cname}` does not apply to `{type_str(ft)}`: it constrains {what}",
                    c.span,
                )
                continue
            if not self.constraint_args(c, cname, values):
                continue
            out[cname] = tuple(values)
        return out

    def constraint_args(self, c: ast.Constraint, cname: str, values: list) -> bool:
        def num(v: Any) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool)

        if cname in ("range", "length"):
            if len(values) != 2 or not all(v is None or num(v) for v in values):
                self.report(
                    D.INVALID_CONSTRAINT,
                    f"`@{cname}` takes two numbers: `@{cname}(min, max)`",
                    c.span,
                )
                return False
            lo, hi = values
            if cname == "length":
                for v, a in zip(values, c.args, strict=False):
                    if v is not None and (not isinstance(v, int) or v < 0):
                        self.report(
                            D.INVALID_VALUE,
                            "a length bound must be a non-negative integer",
                            a.span,
                        )
                        return False
            if lo is not None and hi is not None and lo > hi:
                self.report(
                    D.INVALID_VALUE,
                    f"`@{cname}` minimum {lo} is greater than its maximum {hi}",
                    c.span,
                )
                return False
            return True
        if len(values) != 1 or not isinstance(values[0], str):
            self.report(
                D.INVALID_CONSTRAINT, f'`@{cname}` takes one string: `@{cname}("…")`', c.span
            )
            return False
        if cname == "pattern":
            try:
                re.compile(values[0])
            except re.error as exc:
                self.report(D.INVALID_VALUE, f"invalid regular expression: {exc}", c.args[0].span)
                return False
        if cname == "format" and values[0] not in FORMATS:
            self.report(
                D.INVALID_VALUE,
                f"unknown format `{values[0]}`",
                c.args[0].span,
                hint=_suggest(values[0], list(FORMATS)),
            )
            return False
        return True

    def resolve_alias(self, name: str, stack: tuple[str, ...]) -> Type:
        if name in self.alias_done:
            return self.alias_done[name]
        if name in stack:
            cycle = stack[stack.index(name) :]
            decls = [self.alias_decls[n] for n in cycle]
            if not any(n in self.alias_reported for n in cycle):
                first = min(decls, key=lambda d: (d.span.start, d.span.line, d.span.column))
                others = [d for d in decls if d is not first]
                chain = " → ".join([first.name.name] + [d.name.name for d in others])
                self.report(
                    D.CYCLIC_ALIAS,
                    f"type alias `{first.name.name}` refers to itself ({chain} → {first.name.name})",
                    first.name.span,
                    notes=[
                        Note(f"`{d.name.name}` is part of the cycle", d.name.span) for d in others
                    ],
                    hint="declare an object type (`type N { … }`) to make a recursive type",
                )
            for n in cycle:
                self.alias_reported.add(n)
                self.alias_done[n] = ERROR
            return ERROR
        decl = self.alias_decls[name]
        t = self.resolve_type(decl.alias, stack + (name,))
        if name in self.alias_done:  # marked by a cycle found below
            return self.alias_done[name]
        self.alias_done[name] = t
        self.env.aliases[name] = t
        return t

    def tool_sig(self, item: ast.ExternTool) -> ToolSig:
        params: dict[str, tuple[Type, bool]] = {}
        seen: dict[str, ast.Param] = {}
        for p in item.params:
            pt = self.resolve_type(p.type)
            if p.name.name in seen:
                self.report(
                    D.DUPLICATE_DEFINITION,
                    f"parameter `{p.name.name}` is declared twice",
                    p.name.span,
                    notes=[Note("first declared here", seen[p.name.name].name.span)],
                )
                continue
            seen[p.name.name] = p
            optional = p.omittable or isinstance(pt, OptionalType) or pt == NULL
            params[p.name.name] = (pt, optional)
        returns = self.resolve_type(item.returns)
        if item.catalog is not None and "__" not in item.catalog.strip("_"):
            self.report(
                D.INVALID_VALUE,
                f"`{item.catalog}` is not a catalog tool name (SERVER__tool)",
                item.catalog_span or item.span,
                hint='name the tool as the catalog does: `extern tool "server__tool-name" as '
                "server__tool_name(…)` (`flowc tools --extern` prints it)",
            )
        return ToolSig(item.name.name, params, returns, True, False, item, catalog=item.catalog)

    # -- module --------------------------------------------------------------------------------

    def check(self) -> CheckResult:
        items = [i for i in self.module.items if not isinstance(i, ast.ErrorItem)]
        for i in self.module.items:
            if isinstance(i, ast.ErrorItem) and i.name:
                self.error_names.add(i.name)

        header: ast.FlowHeader | None = None
        singles: dict[type, ast.Item] = {}
        for item in items:
            if isinstance(
                item,
                (ast.FlowHeader, ast.InputDecl, ast.OutputDecl, ast.DeadlineDecl, ast.BudgetDecl),
            ):
                kind = type(item)
                if kind in singles:
                    word = {
                        ast.FlowHeader: "flow",
                        ast.InputDecl: "input",
                        ast.OutputDecl: "output",
                        ast.DeadlineDecl: "deadline",
                        ast.BudgetDecl: "budget",
                    }[kind]
                    self.report(
                        D.DUPLICATE_DEFINITION,
                        f"`{word}` is declared twice",
                        item.span,
                        notes=[Note("first declared here", singles[kind].span)],
                    )
                else:
                    singles[kind] = item
        header = singles.get(ast.FlowHeader)  # type: ignore[assignment]
        if header is not None and self.module.items and self.module.items[0] is not header:
            # docs/spec/LANGUAGE.md §2: "optional header, first if present"
            self.report(
                D.SYNTAX_ERROR,
                "the `flow` header must be the first item of the file",
                header.span,
            )

        # 1. type names
        for item in items:
            if isinstance(item, (ast.TypeDecl, ast.ExternType)):
                name = item.name.name
                if name in BUILTIN_TYPES:
                    self.report(
                        D.DUPLICATE_DEFINITION,
                        f"`{name}` is a built-in type and cannot be redefined",
                        item.name.span,
                    )
                    continue
                if name in self.type_decls:
                    self.report(
                        D.DUPLICATE_DEFINITION,
                        f"type `{name}` is defined twice",
                        item.name.span,
                        notes=[Note("first defined here", self.type_decls[name].name.span)],
                    )
                    continue
                self.type_decls[name] = item
                if isinstance(item, ast.ExternType):
                    self.env.externs[name] = ExternType(name)
                elif item.alias is not None:
                    self.alias_decls[name] = item
                if item.doc:
                    self.env.docs[name] = item.doc
        # 2. aliases (cycles), 3. object bodies
        for name in list(self.alias_decls):
            self.resolve_alias(name, ())
        for item in items:
            if isinstance(item, ast.TypeDecl) and item.body is not None:
                obj = self.object_type(item.body, item.name.name, item.doc)
                if self.type_decls.get(item.name.name) is item:
                    self.env.objects[item.name.name] = obj

        # 4. uses and tools
        value_names: dict[str, ast.Node] = {}

        def claim(ident: Any, reserved: str) -> bool:
            """Take the value name ``ident`` (a use alias or stage name); False, reported, when
            it is taken already or is ``input`` (``reserved``: the message for that)."""
            name = ident.name
            if name in value_names or name == "input":
                first = value_names.get(name)
                self.report(
                    D.DUPLICATE_DEFINITION,
                    f"`{name}` is defined twice" if first is not None else reserved,
                    ident.span,
                    notes=[Note("first defined here", first.span)] if first is not None else [],
                )
                return False
            value_names[name] = ident
            return True

        for item in items:
            if isinstance(item, ast.UseDecl):
                if claim(item.alias, "`input` is reserved and cannot be an alias"):
                    alias = item.alias.name
                    self.uses[alias] = item
                    self.use_syms[alias] = Symbol("use", alias, UseType(item.kind, alias), item)
            elif isinstance(item, ast.StageDecl):
                if claim(item.name, "a stage cannot be named `input`"):
                    self.all_stages[item.name.name] = item
        for item in items:
            if isinstance(item, ast.ExternTool):
                name = item.name.name
                if name in self.externs:
                    self.report(
                        D.DUPLICATE_DEFINITION,
                        f"tool `{name}` is declared twice",
                        item.name.span,
                        notes=[Note("first declared here", self.externs[name].name.span)],
                    )
                    self.tool_sig(item)
                    continue
                self.externs[name] = item
        self.tool_decls = dict(prelude_tools()) if self.use_prelude else {}
        for name, item in self.externs.items():
            self.tool_decls[name] = self.tool_sig(item)

        # 5. input / output / deadline
        inp = singles.get(ast.InputDecl)
        if isinstance(inp, ast.InputDecl):
            self.input_type = self.resolve_type(inp.type)
            problem = schema_problem(self.input_type, self.env)
            if problem and not isinstance(self.input_type, ErrorType):
                self.report(
                    D.NOT_SCHEMA_GENERATABLE,
                    f"the input type has no JSON Schema: {problem}",
                    inp.type.span,
                )
        self.input_sym = Symbol("input", "input", self.input_type, inp)
        deadline_ms = None
        dl = singles.get(ast.DeadlineDecl)
        if isinstance(dl, ast.DeadlineDecl):
            self.types[id(dl.duration)] = DURATION
            if dl.duration.ms <= 0:
                self.report(
                    D.INVALID_DURATION, "the deadline must be a positive duration", dl.duration.span
                )
            else:
                deadline_ms = dl.duration.ms
        budget_decl = singles.get(ast.BudgetDecl)
        if isinstance(budget_decl, ast.BudgetDecl):
            self.budget(budget_decl.spec)
        output_decl = singles.get(ast.OutputDecl)
        declared_output: Type | None = None
        if isinstance(output_decl, ast.OutputDecl):
            declared_output = self.resolve_type(output_decl.type)

        # 6. stages, in order
        for item in items:
            if isinstance(item, ast.StageDecl):
                self.check_stage(item)

        # 7. output
        if declared_output is not None:
            output_type = declared_output
            if self.stage_order:
                last = self.stage_order[-1]
                lt = self.stage_types.get(last.name.name, ERROR)
                if not assignable(lt, declared_output, self.env):
                    self.report(
                        D.TYPE_MISMATCH,
                        f"the flow's output is `{type_str(declared_output)}` but its last stage "
                        f"`{last.name.name}` gives `{type_str(lt)}`",
                        output_decl.type.span,  # type: ignore[union-attr]
                        notes=[Note("last stage", last.name.span)],
                    )
        elif self.stage_order:
            output_type = self.stage_types.get(self.stage_order[-1].name.name, ERROR)
        else:
            output_type = JSON

        # 8. test blocks (compiler/check_tests.py)
        tests = [i for i in items if isinstance(i, ast.TestDecl)]
        check_tests(self, tests, output_type)

        if isinstance(header, ast.FlowHeader):
            flow_name = header.name.name
            description = header.description
        else:
            flow_name = flow_name_from_file(self.module.file)
            description = None

        diags = _dedupe(self.diags)
        diags.sort(key=lambda d: d.sort_key())
        return CheckResult(
            diagnostics=diags,
            module=self.module,
            env=self.env,
            expr_types=self.types,
            stage_types=dict(self.stage_types),
            stages=list(self.stage_order),
            uses=dict(self.uses),
            tools=dict(self.tools),
            tool_decls=dict(self.tool_decls),
            input_type=self.input_type,
            output_type=output_type,
            flow_name=flow_name,
            description=description,
            deadline_ms=deadline_ms,
            references=self.refs,
            constants=self.constants,
            tests=tests,
        )

    # -- stages and statements -----------------------------------------------------------------

    def check_stage(self, stage: ast.StageDecl) -> None:
        name = stage.name.name
        declared = self.resolve_type(stage.returns) if stage.returns is not None else None
        is_main = self.all_stages.get(name) is stage
        self.current_stage = name
        t = self.body(stage.body, declared, stage.name.span, f"stage `{name}`")
        self.current_stage = None
        if is_main:
            st = declared if declared is not None else widen(t)
            self.stage_types[name] = st
            self.stage_syms[name] = Symbol("stage", name, st, stage)
            self.stage_order.append(stage)

    def body(self, block: ast.Block, expected: Type | None, owner_span: Span, what: str) -> Type:
        """Check a stage or control body; returns the body's value type."""
        frame = _Frame(expected)
        self.frames.append(frame)
        self.scopes.append({})
        try:
            reachable = self.stmts(block.stmts, frame, top=True)
        finally:
            self.pop_scope()
            self.frames.pop()
        if reachable:
            self.report(
                D.MISSING_RETURN,
                f"{what} does not produce a value on every path",
                owner_span,
                hint='end it with `return <value>` (or an expression), or `fail "…"`',
            )
        if expected is not None:
            return expected
        if reachable and not frame.values:
            return ERROR
        return join(frame.values, self.env)

    def pop_scope(self) -> None:
        scope = self.scopes.pop()
        for var in scope.values():
            if var.symbol.kind == "let" and not var.used and not var.symbol.name.startswith("_"):
                self.report(
                    D.UNUSED_VARIABLE,
                    f"`{var.symbol.name}` is never used",
                    var.span,
                    hint=f"remove it, or name it `_{var.symbol.name}`",
                )

    def declare(self, symbol: Symbol, span: Span) -> None:
        scope = self.scopes[-1]
        prev = scope.get(symbol.name)
        if prev is not None and symbol.kind == "let" and prev.symbol.kind == "let":
            self.report(
                D.DUPLICATE_DEFINITION,
                f"`{symbol.name}` is defined twice in this block",
                span,
                notes=[Note("first defined here", prev.span)],
            )
            prev.used = True
        scope[symbol.name] = _Var(symbol, span)

    def stmts(self, stmts: list[ast.Stmt], frame: _Frame, *, top: bool) -> bool:
        reachable = True
        warned = False
        for i, s in enumerate(stmts):
            if not reachable and not warned:
                self.report(
                    D.UNREACHABLE_CODE,
                    "unreachable code: it follows a `return` or `fail`",
                    s.span,
                )
                warned = True
            last = top and i == len(stmts) - 1
            if isinstance(s, ast.LetStmt):
                ann = self.resolve_type(s.annotation) if s.annotation is not None else None
                vt = self.expr(s.value, ann)
                t = ann if ann is not None else widen(vt)
                self.declare(Symbol("let", s.name.name, t, s), s.name.span)
            elif isinstance(s, ast.RequireStmt):
                self.expr(s.cond, BOOL)
                self.expr(s.message, TEXT)
            elif isinstance(s, ast.FailStmt):
                self.expr(s.message, TEXT)
                reachable = False
            elif isinstance(s, ast.ReturnStmt):
                vt = self.expr(s.value, frame.expected)
                frame.values.append(vt)
                reachable = False
            elif isinstance(s, ast.IfStmt):
                after = self.if_stmt(s, frame)
                reachable = reachable and after
            elif isinstance(s, ast.ExprStmt):
                if last and reachable:
                    vt = self.expr(s.expr, frame.expected)
                    frame.values.append(vt)
                    reachable = False
                else:
                    self.expr(s.expr, None)
        return reachable

    def if_stmt(self, s: ast.IfStmt, frame: _Frame) -> bool:
        """Check an ``if``; True when control may continue after it."""
        self.expr(s.cond, BOOL)
        self.scopes.append({})
        try:
            r1 = self.stmts(s.then.stmts, frame, top=False)
        finally:
            self.pop_scope()
        if s.else_ is None:
            return True
        if isinstance(s.else_, ast.IfStmt):
            r2 = self.if_stmt(s.else_, frame)
        else:
            self.scopes.append({})
            try:
                r2 = self.stmts(s.else_.stmts, frame, top=False)
            finally:
                self.pop_scope()
        return r1 or r2

    # -- names ---------------------------------------------------------------------------------

    def lookup(self, name: str) -> Symbol | None:
        for scope in reversed(self.scopes):
            var = scope.get(name)
            if var is not None:
                var.used = True
                return var.symbol
        if name in self.stage_syms:
            return self.stage_syms[name]
        if name == "input":
            return self.input_sym
        if name in self.use_syms:
            return self.use_syms[name]
        return None

    def visible_names(self) -> set[str]:
        names = {"input"} | set(self.stage_syms) | set(self.use_syms)
        for scope in self.scopes:
            names |= set(scope)
        return names

    def name(self, e: ast.Name) -> Type:
        sym = self.lookup(e.name)
        if sym is not None:
            self.refs[id(e)] = sym
            if isinstance(sym.type, UseType):
                # agent targets resolve their aliases themselves (agent_target): here the
                # alias is used as a value, which it is not (even where `json` is expected)
                self.report(
                    D.TYPE_MISMATCH,
                    f"`{e.name}` is a `use {sym.type.kind}` alias, not a value",
                    e.span,
                    hint="a `use` alias can only be the target of `agent(…)`",
                )
                return ERROR
            return sym.type
        if e.name in self.all_stages:
            later = self.all_stages[e.name]
            if e.name == self.current_stage:
                msg = f"stage `{e.name}` cannot use its own result"
            else:
                msg = f"stage `{e.name}` is used before the stage that defines it"
            self.report(
                D.FORWARD_STAGE_REFERENCE,
                msg,
                e.span,
                notes=[Note(f"`{e.name}` is defined here", later.name.span)],
                hint="a stage sees only the stages declared before it; move it earlier",
            )
            return ERROR
        if e.name in self.error_names:
            return ERROR
        hint = _suggest(e.name, self.visible_names())
        if hint is None:
            # `paralel map …`, `retrun x`: a misspelt keyword reads as a name
            hint = did_you_mean(e.name, _EXPRESSION_KEYWORDS)
        elif hint:
            # the misspelt name was most likely meant to read that variable: not "unused"
            meant = hint.split("`")[1]
            for scope in reversed(self.scopes):
                if meant in scope:
                    scope[meant].used = True
                    break
        hint = hint or _OPERATOR_HINTS.get(e.name)
        self.report(D.UNKNOWN_NAME, f"unknown name `{e.name}`", e.span, hint=hint)
        return ERROR

    # -- expressions ---------------------------------------------------------------------------

    def expr(self, e: ast.Expr, expected: Type | None = None) -> Type:
        """Type ``e`` with the expected type flowing into it; report a ``type-mismatch`` when the
        result is not assignable to ``expected``."""
        t = self.infer(e, expected)
        if expected is not None and not assignable(t, expected, self.env):
            self.mismatch(e, t, expected)
            return ERROR
        return t

    def infer(self, e: ast.Expr, hint: Type | None = None) -> Type:
        cls = type(e)
        fn = _DISPATCH.get(cls)
        if fn is None:
            fn = _DISPATCH[cls] = getattr(_Checker, "e_" + cls.__name__, _no_rule)
        t = fn(self, e, hint)
        self.types[id(e)] = t
        return t

    def e_Name(self, e: ast.Name, hint: Type | None) -> Type:
        t = self.name(e)
        if isinstance(t, UseType):
            # an alias names an agent or team for `agent(…)`; the plan has no value for it, so a
            # `let`, field, argument or interpolation holding one could not be compiled
            self.report(
                D.TYPE_MISMATCH,
                f"`{t.alias}` is a `use {t.kind}` alias, not a value"
                + (f" (expected `{type_str(hint)}`)" if hint is not None else ""),
                e.span,
                hint=(
                    f"a `use` alias can only be the target of `agent(…)`: `agent({t.alias})`"
                    if t.kind == "agent"
                    else f"a team is an agent target through `agent({t.alias}.main)` or "
                    f'`agent({t.alias}.member("name"))`'
                ),
            )
            return ERROR
        return t

    def e_StringLit(self, e: ast.StringLit, hint: Type | None) -> Type:
        if e.is_plain:
            return LiteralType(e.text, fresh=True)
        result: Type = TEXT
        # an interpolated string literal is still a string literal: it may be a path or member
        if (
            hint is not None
            and not assignable(TEXT, hint, self.env)
            and assignable(LiteralType(""), hint, self.env)
        ):
            result = PATH if assignable(PATH, hint, self.env) else MEMBER
        for p in e.parts:
            if isinstance(p, ast.Interpolation):
                self.infer(p.expr)  # a `use` alias is reported by e_Name: it is not a value
        return result

    def e_NumberLit(self, e: ast.NumberLit, hint: Type | None) -> Type:
        return LiteralType(e.value, fresh=True)

    def e_BoolLit(self, e: ast.BoolLit, hint: Type | None) -> Type:
        return LiteralType(bool(e.value), fresh=True)

    def e_NullLit(self, e: ast.NullLit, hint: Type | None) -> Type:
        return NULL

    def e_DurationLit(self, e: ast.DurationLit, hint: Type | None) -> Type:
        return DURATION

    def _hint_parts(self, hint: Type | None) -> Type | None:
        if hint is None:
            return None
        r = self.env.resolve(strip_optional(hint, self.env))
        return r

    def e_ListLit(self, e: ast.ListLit, hint: Type | None) -> Type:
        h = self._hint_parts(hint)
        elem_hint = h.elem if isinstance(h, ListType) else None
        items = [self.infer(i, elem_hint) for i in e.items]
        if elem_hint is not None and all(assignable(t, elem_hint, self.env) for t in items):
            return ListType(elem_hint)
        if not items:
            return ListType(NEVER)
        return ListType(join(items, self.env))

    def e_ObjectLit(self, e: ast.ObjectLit, hint: Type | None) -> Type:
        h = self._hint_parts(hint)
        fields: dict[str, Field] = {}
        first: dict[str, ast.ObjectEntry] = {}
        for entry in e.entries:
            fh = None
            if isinstance(h, ObjectType) and entry.key in h.fields:
                fh = h.fields[entry.key].type
            elif isinstance(h, MapType):
                fh = h.value
            vt = self.infer(entry.value, fh)
            if entry.key in first:
                self.report(
                    D.DUPLICATE_FIELD,
                    f"key `{entry.key}` is given twice",
                    entry.key_span,
                    notes=[Note("first given here", first[entry.key].key_span)],
                )
                continue
            first[entry.key] = entry
            fields[entry.key] = Field(vt, False, {}, None, entry.key_span)
        if any(isinstance(f.type, ErrorType) for f in fields.values()):
            return ERROR
        obj = ObjectType(fields)
        if hint is not None and isinstance(h, (ObjectType, MapType)):
            if assignable(obj, h, self.env):
                return strip_optional(hint, self.env)
        return obj

    def e_RangeExpr(self, e: ast.RangeExpr, hint: Type | None) -> Type:
        lo = self.infer(e.low)
        hi = self.infer(e.high)
        bad = False
        for side, t in ((e.low, lo), (e.high, hi)):
            if not is_numeric(t, self.env) and not isinstance(t, ErrorType) and t != JSON:
                self.report(
                    D.TYPE_MISMATCH,
                    f"a range bound must be a number, found `{type_str(t)}`",
                    side.span,
                )
                bad = True
        if self.range_ok != id(e):
            self.report(D.TYPE_MISMATCH, "a range can only be used after `in`", e.span)
            return ERROR
        if bad:
            return ERROR
        return RangeType(join([lo, hi], self.env))

    def e_Unary(self, e: ast.Unary, hint: Type | None) -> Type:
        if e.op == "not":
            self.expr(e.operand, BOOL)
            return BOOL
        t = self.infer(e.operand)
        if isinstance(t, ErrorType) or t == JSON:
            return t
        if is_numeric(t, self.env) or t == DURATION:
            if isinstance(t, LiteralType):
                return LiteralType(-t.value, fresh=True)  # type: ignore[operator]
            return widen(t)
        self.report(D.TYPE_MISMATCH, f"`-` needs a number, found `{type_str(t)}`", e.operand.span)
        return ERROR

    def e_Binary(self, e: ast.Binary, hint: Type | None) -> Type:
        op = e.op
        if op in ("and", "or"):
            self.expr(e.left, BOOL)
            self.expr(e.right, BOOL)
            return BOOL
        if op == "??":
            lt = self.infer(e.left, make_optional(hint) if hint is not None else None)
            base = strip_optional(lt, self.env)
            rt = self.infer(
                e.right,
                hint
                if hint is not None
                else (widen(base) if not isinstance(base, NeverType) else None),
            )
            if isinstance(lt, ErrorType) or isinstance(rt, ErrorType):
                return ERROR
            if isinstance(base, NeverType):
                return rt
            if assignable(rt, base, self.env):
                return widen(base)
            if assignable(base, rt, self.env):
                return widen(rt)
            return make_union([widen(base), widen(rt)])
        if op in ("in", "not in"):
            if isinstance(e.right, ast.RangeExpr):
                self.range_ok = id(e.right)
            lt = self.infer(e.left)
            rt = self.infer(e.right)
            self.range_ok = None
            self.check_in(e, lt, rt)
            return BOOL
        lt = self.infer(e.left)
        rt = self.infer(e.right)
        if isinstance(lt, ErrorType) or isinstance(rt, ErrorType):
            return BOOL if op in ("==", "!=", "<", "<=", ">", ">=") else ERROR
        if op in ("==", "!="):
            comparable = (
                assignable(lt, rt, self.env)
                or assignable(rt, lt, self.env)
                or (is_numeric(lt, self.env) and is_numeric(rt, self.env))
                or (is_textual(lt, self.env) and is_textual(rt, self.env))
                or assignable(widen(lt), widen(rt), self.env)
                or assignable(widen(rt), widen(lt), self.env)
            )
            if not overlaps(lt, rt, self.env) and (comparable or self.same_kind(lt, rt)):
                self.no_overlap(e, e.left, lt, e.right, rt)
            elif not comparable:
                self.report(
                    D.TYPE_MISMATCH,
                    f"cannot compare `{type_str(widen(lt))}` with `{type_str(widen(rt))}`",
                    e.span,
                )
            return BOOL
        if op in ("<", "<=", ">", ">="):
            if lt == JSON or rt == JSON:
                return BOOL
            ok = (
                (is_numeric(lt, self.env) and is_numeric(rt, self.env))
                or (is_textual(lt, self.env) and is_textual(rt, self.env))
                or (lt == DURATION and rt == DURATION)
            )
            if not ok:
                self.report(
                    D.TYPE_MISMATCH,
                    f"`{op}` cannot order `{type_str(widen(lt))}` and `{type_str(widen(rt))}`",
                    e.span,
                    hint="comparisons need two numbers, two texts or two durations",
                )
            return BOOL
        if lt == JSON or rt == JSON:
            return JSON
        lw, rw = widen(lt), widen(rt)
        if op == "+":
            if is_numeric(lt, self.env) and is_numeric(rt, self.env):
                return INT if lw == INT and rw == INT else NUMBER
            if is_textual(lt, self.env) and is_textual(rt, self.env):
                return TEXT
            if lt == DURATION and rt == DURATION:
                return DURATION
            lr, rr = self.env.resolve(lw), self.env.resolve(rw)
            if isinstance(lr, ListType) and isinstance(rr, ListType):
                if isinstance(lr.elem, NeverType):
                    return rr
                if isinstance(rr.elem, NeverType):
                    return lr
                if assignable(rr.elem, lr.elem, self.env):
                    return lr
                if assignable(lr.elem, rr.elem, self.env):
                    return rr
                return ListType(make_union([lr.elem, rr.elem]))
            self.report(
                D.TYPE_MISMATCH,
                f"`+` cannot combine `{type_str(lw)}` and `{type_str(rw)}`",
                e.span,
                hint="`+` adds numbers and concatenates text or arrays; "
                'use interpolation ("${…}") to build text from other values',
            )
            return ERROR
        # - * / %
        if is_numeric(lt, self.env) and is_numeric(rt, self.env):
            if op == "/":
                return NUMBER
            return INT if lw == INT and rw == INT else NUMBER
        if op == "-" and lt == DURATION and rt == DURATION:
            return DURATION
        self.report(
            D.TYPE_MISMATCH,
            f"`{op}` needs numbers, found `{type_str(lw)}` and `{type_str(rw)}`",
            e.span,
        )
        return ERROR

    def check_in(self, e: ast.Binary, lt: Type, rt: Type) -> None:
        if isinstance(lt, ErrorType) or isinstance(rt, ErrorType) or rt == JSON or lt == JSON:
            return
        r = self.env.resolve(rt)
        ok = True
        if isinstance(r, RangeType):
            ok = is_numeric(lt, self.env)
        elif isinstance(r, ListType):
            ok = (
                isinstance(r.elem, NeverType)
                or assignable(lt, r.elem, self.env)
                or assignable(r.elem, widen(lt), self.env)
                or (is_textual(lt, self.env) and is_textual(r.elem, self.env))
                or (is_numeric(lt, self.env) and is_numeric(r.elem, self.env))
            )
        elif is_textual(r, self.env) or isinstance(r, MapType):
            ok = is_textual(lt, self.env)
        else:
            self.report(
                D.TYPE_MISMATCH,
                f"`{e.op}` needs an array, text, map or range on the right, found `{type_str(rt)}`",
                e.right.span,
            )
            return
        if not ok:
            self.report(
                D.TYPE_MISMATCH,
                f"`{type_str(widen(lt))}` cannot be {'in' if e.op == 'in' else 'not in'} `{type_str(rt)}`",
                e.span,
            )
        elif isinstance(r, ListType):
            elem = r.elem
            if isinstance(e.right, ast.ListLit) and e.right.items:
                # `k in ["x", "y"]`: the literals, not the widened `text`
                elem = make_union([self.types.get(id(i), ERROR) for i in e.right.items])
            if not overlaps(lt, elem, self.env):
                self.no_overlap(e, e.left, lt, e.right, elem)

    def same_kind(self, lt: Type, rt: Type) -> bool:
        """Operands whose comparison is a question of values, not of kinds: two object types,
        or ``null`` against anything (``x == null`` with ``x: int`` is always false)."""
        a, b = self.env.resolve(lt), self.env.resolve(rt)
        return a == NULL or b == NULL or (isinstance(a, ObjectType) and isinstance(b, ObjectType))

    def no_overlap(
        self, e: ast.Binary, left: ast.Expr, lt: Type, right: ast.Expr, rt: Type
    ) -> None:
        """Report `no-overlap`: ``e`` (``==``, ``!=``, ``in``, ``not in``; for ``in``, ``rt``
        is the array's element type) can never be true, or for ``!=`` / ``not in`` never false.
        The hint lists the values the finite side can be (and the closest one to a literal on
        the other side)."""
        always = "true" if e.op in ("!=", "not in") else "false"
        if e.op in ("==", "!="):
            message = (
                f"this comparison is always {always}: `{type_str(lt)}` and `{type_str(rt)}` "
                "have no value in common"
            )
        else:
            message = (
                f"this `{e.op}` test is always {always}: the array's elements are "
                f"`{type_str(rt)}`, never `{type_str(lt)}`"
            )
        hint = None
        for side, t, ot in ((left, lt, rt), (right, rt, lt)):
            values = finite_values(t, self.env)
            if values is None or len(values) < 2 and isinstance(side, _LITERALS):
                continue
            shown = [literal_str(v) for v in values]
            listed = ", ".join(shown[:-1]) + f" or {shown[-1]}" if len(shown) > 1 else shown[0]
            name = _what_is(side)
            if name == "this value":
                name = "the left side" if side is left else "the right side"
            if e.op in ("in", "not in") and side is right:
                name = "the elements"
            hint = f"{name} is always {listed}" if len(shown) == 1 else f"{name} can be {listed}"
            other_values = finite_values(ot, self.env)
            if other_values and len(other_values) == 1 and isinstance(other_values[0], str):
                close = did_you_mean(
                    other_values[0], [v for v in values if isinstance(v, str)]
                ) or _suggest(other_values[0], [v for v in values if isinstance(v, str)])
                if close:
                    meant = close.split("`")[1]
                    hint = f"did you mean {literal_str(meant)}? ({hint})"
            break
        a, b = self.env.resolve(lt), self.env.resolve(rt)
        if isinstance(a, ObjectType) and isinstance(b, ObjectType):
            for name, fa in a.fields.items():
                fb = b.fields.get(name)
                if fb and not (fa.optional or fb.optional or overlaps(fa.type, fb.type, self.env)):
                    hint = (
                        f"field `{name}` is `{type_str(fa.type)}` on one side and "
                        f"`{type_str(fb.type)}` on the other"
                    )
                    break
        for side, t, ot in ((left, lt, rt), (right, rt, lt)):
            if ot == NULL and hint is None:
                name = _what_is(side)
                name = "this value" if name == "this value" else name
                hint = f"{name} is never null: its type is `{type_str(t)}`, not `{type_str(t)}?`"
        self.report(D.NO_OVERLAP, message, e.span, hint=hint)

    # member access ------------------------------------------------------------------------

    def e_Member(self, e: ast.Member, hint: Type | None) -> Type:
        if isinstance(e.obj, ast.Name):
            # `dev.main` outside an agent target is reported by member_type, as a whole
            ot = self.types[id(e.obj)] = self.name(e.obj)
        else:
            ot = self.infer(e.obj)
        return self.member_type(ot, e.name, e.name_span, e)

    def member_type(self, ot: Type, name: str, span: Span, e: ast.Expr) -> Type:
        # fast path: a field that an object type (named or inline) has
        tp = type(ot)
        if tp is NamedRef:
            r = self.env.resolve(ot)
            tp = type(r)
        else:
            r = ot
        if tp is ObjectType:
            f = r.fields.get(name)
            if f is not None:
                return f.type
        if isinstance(ot, ErrorType):
            return ERROR
        if ot == JSON:
            return JSON
        if isinstance(ot, UseType):
            if ot.kind == "team" and name in ("main", "member"):
                self.report(
                    D.TYPE_MISMATCH,
                    f"`{ot.alias}.{name}` names an agent and can only be an agent target",
                    e.span,
                )
            else:
                self.report(
                    D.UNKNOWN_FIELD,
                    f"{type_str(ot)} has no field `{name}`",
                    span,
                    hint=_suggest(name, ["main", "member"]) if ot.kind == "team" else None,
                )
            return ERROR
        r = self.env.resolve(ot)
        if isinstance(r, ErrorType):
            return ERROR
        if isinstance(r, OptionalType):
            inner = self.member_type(r.inner, name, span, e)
            return make_optional(inner) if not isinstance(inner, ErrorType) else ERROR
        if isinstance(r, UnionType):
            members = [m for m in r.members if m != NULL]
            has_null = len(members) < len(r.members)
            found: list[Type] = []
            for m in members:
                mr = self.env.resolve(m)
                if name == "count" and self.countable(mr):
                    found.append(INT)
                elif isinstance(mr, ObjectType) and name in mr.fields:
                    found.append(mr.fields[name].type)
                elif mr == JSON:
                    found.append(JSON)
                else:
                    self.report(
                        D.UNKNOWN_FIELD,
                        f"`{name}` is not a field of every member of `{type_str(ot)}`",
                        span,
                        notes=[Note(f"`{type_str(m)}` has no field `{name}`")],
                    )
                    return ERROR
            t = make_union(found)
            return make_optional(t) if has_null else t
        if name == "count" and self.countable(r):
            if not (isinstance(r, ObjectType) and "count" in r.fields):
                return INT
        if (helper := check_errors.outcome_list_member(r, name)) is not None:
            return helper  # `.values` / `.errors` of Outcome<T>[]
        if isinstance(r, VerdictType):
            r = VERDICT_OBJECT
        if isinstance(r, ObjectType):
            f = r.fields.get(name)
            if f is not None:
                return f.type
            self.report(
                D.UNKNOWN_FIELD,
                f"`{type_str(ot)}` has no field `{name}`",
                span,
                hint=_suggest(name, list(r.fields)),
            )
            return ERROR
        if isinstance(r, MapType):
            return r.value
        hint = (_LENGTH_HINTS.get(name) or _suggest(name, ["count"])) if self.countable(r) else None
        self.report(D.UNKNOWN_FIELD, f"`{type_str(ot)}` has no field `{name}`", span, hint=hint)
        return ERROR

    def countable(self, r: Type) -> bool:
        return isinstance(r, (ListType, MapType)) or is_textual(r, self.env)

    def e_Index(self, e: ast.Index, hint: Type | None) -> Type:
        ot = self.infer(e.obj)
        it = self.infer(e.index)
        if isinstance(ot, ErrorType):
            return ERROR
        if ot == JSON:
            return JSON
        r = self.env.resolve(ot)
        opt = False
        if isinstance(r, OptionalType):
            r = self.env.resolve(r.inner)
            opt = True
        result: Type
        if isinstance(r, ListType):
            if not assignable(it, INT, self.env):
                self.report(
                    D.TYPE_MISMATCH,
                    f"an array index must be an `int`, found `{type_str(widen(it))}`",
                    e.index.span,
                )
            result = r.elem if not isinstance(r.elem, NeverType) else ERROR
        elif isinstance(r, MapType):
            if not is_textual(it, self.env) and not isinstance(it, ErrorType) and it != JSON:
                self.report(
                    D.TYPE_MISMATCH,
                    f"a map key must be text, found `{type_str(it)}`",
                    e.index.span,
                )
            result = r.value
        elif (
            isinstance(r, ObjectType) and isinstance(it, LiteralType) and isinstance(it.value, str)
        ):
            return self.member_type(ot, it.value, e.index.span, e)
        elif is_textual(r, self.env):
            if not assignable(it, INT, self.env):
                self.report(
                    D.TYPE_MISMATCH,
                    f"a text index must be an `int`, found `{type_str(it)}`",
                    e.index.span,
                )
            result = TEXT
        else:
            self.report(D.TYPE_MISMATCH, f"`{type_str(ot)}` cannot be indexed", e.obj.span)
            return ERROR
        return make_optional(result) if opt else result

    def e_Projection(self, e: ast.Projection, hint: Type | None) -> Type:
        bt = self.infer(e.base)
        elem = self.list_elem(bt, "[*]", e.base.span)
        if e.path is None:
            return bt if not isinstance(elem, ErrorType) else ERROR
        self.proj.append(elem)
        try:
            pt = self.infer(e.path)
        finally:
            self.proj.pop()
        if isinstance(pt, ErrorType) or isinstance(elem, ErrorType):
            return ERROR
        if self.path_defaults(e.path):
            self.effectful_index(e.path)
        return ListType(pt)

    def path_defaults(self, p: ast.Expr) -> bool:
        """True when a projection's per-element path reads an optional part (a `T?` field, a
        field of a `T?` value), nested projections included: lowering then computes it with a
        `map` step per element (the rule of ``lowering._path_defaults``)."""
        while True:
            if isinstance(p, ast.Member):
                if self.optional_field(p) or self.nullable(p.obj):
                    return True
                p = p.obj
            elif isinstance(p, ast.Index):
                p = p.obj
            elif isinstance(p, ast.Projection):
                if p.path is not None and self.path_defaults(p.path):
                    return True
                p = p.base
            else:
                return False

    def nullable(self, e: ast.Expr) -> bool:
        t = self.env.resolve(self.types.get(id(e), ERROR))
        return isinstance(t, OptionalType) or (isinstance(t, UnionType) and NULL in t.members)

    def optional_field(self, e: ast.Member) -> bool:
        t = self.env.resolve(self.types.get(id(e.obj), ERROR))
        if isinstance(t, OptionalType):
            t = self.env.resolve(t.inner)
        for m in t.members if isinstance(t, UnionType) else (t,):
            m = self.env.resolve(m)
            if isinstance(m, OptionalType):
                m = self.env.resolve(m.inner)
            if isinstance(m, ObjectType):
                f = m.fields.get(e.name)
                if f is not None and f.optional:
                    return True
        return False

    def effectful_index(self, path: ast.Expr) -> None:
        """An index with an effect inside a projection path over optional parts would run once
        per element of the `map` that computes the path: `unsupported-construct`, at check time
        (it used to pass the check and fail `flowc compile`)."""
        for node in _walk(path):
            if isinstance(node, ast.Index) and any(
                isinstance(n, _EFFECT_NODES) for n in _walk(node.index)
            ):
                self.report(
                    D.UNSUPPORTED_CONSTRUCT,
                    "this index has an effect (a tool call, agent, ask or judge) inside a "
                    "projection over optional fields, where it would run once per element",
                    node.index.span,
                    hint="bind it first (`let i = …`) and index with `i`",
                )
                return

    def e_ProjectionItem(self, e: ast.ProjectionItem, hint: Type | None) -> Type:
        return self.proj[-1] if self.proj else ERROR

    # calls ---------------------------------------------------------------------------------

    def lookup_tool(self, name: str) -> ToolSig | None:
        return self.tool_decls.get(name)

    def e_Call(self, e: ast.Call, hint: Type | None) -> Type:
        callee = e.callee
        if isinstance(callee, ast.Name):
            sig = self.lookup_tool(callee.name)
            if sig is None and "__" in callee.name:
                self.report(
                    D.UNTYPED_TOOL,
                    f"`{callee.name}` has no declared signature: its arguments are unchecked "
                    "and its result is `json`",
                    callee.span,
                    hint=f"declare it: `extern tool {callee.name}(…) -> T` (`flowc tools --extern` "
                    "prints it)",
                )
                for a in e.args:
                    self.infer(a.value)
                for p in e.positional:
                    self.infer(p)
                params = {a.name: (JSON, False) for a in e.args}
                prev = self.tools.get(callee.name)
                if prev is not None and not prev.declared:
                    params = {**prev.params, **params}
                self.tools[callee.name] = ToolSig(callee.name, params, JSON, False)
                self.tool_calls.add(id(e))
                self.types[id(callee)] = JSON
                return JSON
            if sig is None:
                sym = self.lookup(callee.name)
                if sym is not None:
                    self.refs[id(callee)] = sym
                    self.types[id(callee)] = sym.type
                    self.report(
                        D.NOT_CALLABLE,
                        f"`{callee.name}` is not a tool and cannot be called",
                        callee.span,
                    )
                elif callee.name not in self.error_names:
                    self.report(
                        D.UNKNOWN_TOOL,
                        f"unknown tool `{callee.name}`",
                        callee.span,
                        hint=_LENGTH_HINTS.get(callee.name) or self.tool_hint(callee.name),
                    )
                for a in e.args:
                    self.infer(a.value)
                for p in e.positional:
                    self.infer(p)
                return ERROR
            return self.tool_call(e, callee, sig)
        ct = self.infer(callee)
        for a in e.args:
            self.infer(a.value)
        for p in e.positional:
            self.infer(p)
        if not isinstance(ct, ErrorType):
            if isinstance(callee, ast.Member) and not e.args and not e.positional:
                # `xs.count()`, `m.title()`: a field read written as a method call
                path = _what_is(callee)
                shown = path.strip("`") if path != "this value" else f"….{callee.name}"
                self.report(
                    D.NOT_CALLABLE,
                    f"`.{callee.name}` is a field, not a method: it cannot be called",
                    e.span,
                    hint=f"drop the parentheses: `{shown}`",
                )
                return ct
            self.report(D.NOT_CALLABLE, "only tools can be called", callee.span)
        return ERROR

    def tool_hint(self, name: str) -> str | None:
        """The hint of `unknown-tool`: "did you mean" for a close name, else the three declared
        tools nearest by name and where catalog tools come from."""
        hint = _suggest(name, list(self.tool_decls))
        if hint:
            return hint
        near = difflib.get_close_matches(name, sorted(self.tool_decls), n=3, cutoff=0.3)
        catalog = "a catalog tool is named `server__tool` (`flowc tools` lists them)"
        if not near:
            return catalog
        shown = ", ".join(f"`{t}`" for t in near)
        nearest = "the nearest tool is" if len(near) == 1 else "the nearest tools are"
        return f"{nearest} {shown}; {catalog}"

    def tool_call(self, e: ast.Call, callee: ast.Name, sig: ToolSig) -> Type:
        self.tools[sig.name] = sig
        self.tool_calls.add(id(e))
        self.types[id(callee)] = sig.returns
        given: dict[str, ast.Argument] = {}
        unknown = False
        for p in e.positional:
            self.infer(p)
            self.report(
                D.POSITIONAL_ARGUMENT,
                "tool arguments must be named",
                p.span,
                hint="write `name: value`"
                + (f" (parameters: {', '.join(sig.params)})" if sig.params else ""),
            )
            unknown = True
        for a in e.args:
            if a.name in given:
                self.infer(a.value)
                self.report(
                    D.DUPLICATE_FIELD,
                    f"argument `{a.name}` is given twice",
                    a.name_span,
                    notes=[Note("first given here", given[a.name].name_span)],
                )
                continue
            given[a.name] = a
            if a.name not in sig.params:
                self.infer(a.value)
                unknown = True
                missing = [p for p in sig.params if p not in given]
                self.report(
                    D.UNKNOWN_ARGUMENT,
                    f"`{sig.name}` has no parameter `{a.name}`",
                    a.name_span,
                    hint=_suggest(a.name, missing or list(sig.params)),
                )
                continue
            pt, opt = sig.params[a.name]
            if opt and isinstance(a.value, ast.NullLit) and not _takes_null(pt):
                self.report(
                    D.TYPE_MISMATCH,
                    f"`{a.name}` of `{sig.name}` may be left out, but not given as `null`",
                    a.value.span,
                    hint=f"leave `{a.name}` out",
                )
                continue
            self.expr(a.value, pt)
        if not unknown:
            missing = [p for p, (_t, opt) in sig.params.items() if not opt and p not in given]
            if missing:
                names = ", ".join(f"`{m}`" for m in missing)
                self.report(
                    D.MISSING_ARGUMENT,
                    f"`{sig.name}` needs argument{'s' if len(missing) > 1 else ''} {names}",
                    callee.span,
                    notes=(
                        [Note("declared here", sig.decl.span)]
                        if sig.decl is not None and not sig.prelude
                        else []
                    ),
                )
        return sig.returns

    # control expressions --------------------------------------------------------------------

    def elem_type(self, over: ast.Expr, what: str) -> Type:
        return self.list_elem(self.infer(over), what, over.span)

    def list_elem(self, t: Type, what: str, span: Any) -> Type:
        """The element type of the list type ``t`` (``json`` and errors pass through); anything
        else is reported as "`what` needs an array" at ``span`` and gives the error type."""
        if isinstance(t, ErrorType):
            return ERROR
        if t == JSON:
            return JSON
        r = self.env.resolve(t)
        if isinstance(r, ListType):
            return r.elem if not isinstance(r.elem, NeverType) else NEVER
        self.report(D.TYPE_MISMATCH, f"`{what}` needs an array, found `{type_str(t)}`", span)
        return ERROR

    def budget(self, spec: ast.BudgetSpec) -> None:
        """A ``budget { … }``: each limit a number literal ≥ 0 (``inferences`` and ``tokens``
        whole numbers, ``cost`` dollars); an empty budget is reported (it limits nothing)."""
        if not spec.entries:
            self.report(
                D.INVALID_VALUE,
                "an empty `budget` limits nothing",
                spec.span,
                hint="give `inferences`, `tokens` and/or `cost`, e.g. `budget { inferences: 20 }`",
            )
        seen: dict[str, ast.ObjectEntry] = {}
        for entry in spec.entries:
            key, value = entry.key, entry.value
            if key in seen:
                self.report(
                    D.DUPLICATE_DEFINITION,
                    f"budget `{key}` is given twice",
                    entry.key_span,
                    notes=[Note("first given here", seen[key].key_span)],
                )
                continue
            seen[key] = entry
            whole = key != "cost"
            want = INT if whole else NUMBER
            t = self.expr(value, want)
            if isinstance(t, ErrorType) or not assignable(t, want, self.env):
                continue  # the type mismatch is reported
            unit = "a whole number" if whole else "a number of dollars"
            v = self.compile_time(
                value,
                f"budget `{key}`",
                "budgets are fixed when the flow is compiled (`flowc cost` reads them)",
                hint=f"write {unit}, e.g. `{key}: {20 if whole else 0.5}`",
            )
            if v is None:
                continue
            if v < 0 or (whole and not isinstance(v, int)):
                self.report(
                    D.INVALID_VALUE, f"budget `{key}` must be {unit} ≥ 0, found {v}", value.span
                )

    # settings: compile time or run time (docs/decisions.md) ----------------------------------

    def constant(self, e: ast.Expr, depth: int = 0) -> tuple[bool, Any]:
        """The value of ``e`` when the compiler can compute it: ``(True, value)`` or
        ``(False, None)``. Constants are literals (a duration as :class:`_Duration`), ``-`` of
        one, ``+ - *`` of two numbers, ``+ -`` of two durations, and a name bound by ``let`` to
        a constant (``let t = 90s`` … ``timeout t``). Call after ``e`` is typed (names
        resolved)."""
        if depth > 64:
            return False, None
        if isinstance(e, ast.DurationLit):
            return True, _Duration(e.ms, e.text)
        if isinstance(e, ast.Name):
            sym = self.refs.get(id(e))
            if sym is not None and sym.kind == "let" and isinstance(sym.decl, ast.LetStmt):
                return self.constant(sym.decl.value, depth + 1)
            return False, None
        if isinstance(e, ast.Unary) and e.op == "-":
            ok, v = self.constant(e.operand, depth + 1)
            if ok and isinstance(v, _Duration):
                return True, _Duration(-v.ms)
            if ok and _is_number(v):
                return True, -v
            return False, None
        if isinstance(e, ast.Binary) and e.op in _FOLD:
            ok, a = self.constant(e.left, depth + 1)
            ok2, b = self.constant(e.right, depth + 1)
            if not (ok and ok2):
                return False, None
            if _is_number(a) and _is_number(b):
                return True, _FOLD[e.op](a, b)
            if isinstance(a, _Duration) and isinstance(b, _Duration) and e.op != "*":
                return True, _Duration(_FOLD[e.op](a.ms, b.ms))
            return False, None
        return _const(e)

    def run_time_part(self, e: ast.Expr) -> ast.Expr:
        """The first part of a non-constant ``e`` that is only known at run time (``input.t``
        in ``input.t + 1s``), for the note of a compile-time setting."""
        if isinstance(e, ast.Binary):
            for side in (e.left, e.right):
                if not self.constant(side)[0]:
                    return self.run_time_part(side)
        if isinstance(e, ast.Unary):
            return self.run_time_part(e.operand)
        return e

    def compile_time(self, e: ast.Expr, what: str, why: str, *, hint: str) -> Any:
        """The constant value of a setting the plan fixes when the flow is compiled (``timeout``,
        ``retry { attempts }``, budget limits), recorded in ``constants``; None, reported as
        `invalid-value`, when ``e`` is not a constant. Durations come back as
        :class:`_Duration`."""
        ok, v = self.constant(e)
        if ok and not isinstance(v, bool) and (_is_number(v) or isinstance(v, _Duration)):
            if isinstance(v, _Duration):
                self.constants[id(e)] = v.text or duration_text(v.ms)
            else:
                self.constants[id(e)] = v
            return v
        part = self.run_time_part(e)
        self.report(
            D.INVALID_VALUE,
            f"{what} must be a constant: {why}",
            e.span,
            notes=[Note(f"{_what_is(part)} is only known when the flow runs", part.span)],
            hint=hint,
        )
        return None

    def count_setting(self, e: ast.Expr, what: str, maximum: int) -> None:
        """``limit`` / ``max_iterations``: any `int` expression (docs/spec/LANGUAGE.md §6). A constant is
        checked here (1 … ``maximum``) and written into the plan as a number; anything else is
        a template the run evaluates and checks the same way (a `validation` error naming the
        `.flow` source)."""
        t = self.expr(e, INT)
        if isinstance(t, ErrorType):
            return
        ok, v = self.constant(e)
        if not ok or not isinstance(v, int) or isinstance(v, bool):
            return
        if v < 1:
            self.report(D.INVALID_VALUE, f"{what} must be positive, found {v}", e.span)
        elif v > maximum:
            self.report(
                D.INVALID_VALUE,
                f"{what} must be at most {maximum}, found {v}",
                e.span,
            )
        else:
            self.constants[id(e)] = v

    def loop_scope(self, var: ast.Ident, elem: Type, decl: ast.Node) -> None:
        self.scopes.append({})
        self.declare(Symbol("loopvar", var.name, elem, decl), var.span)
        if var.name != "index":
            self.declare(Symbol("index", "index", INT, decl), var.span)

    def e_MapExpr(self, e: ast.MapExpr, hint: Type | None) -> Type:
        elem = self.elem_type(e.over, "map")
        if e.limit is not None:
            self.count_setting(e.limit, "`limit`", MAX_CONCURRENCY)
            if not e.parallel:
                self.report(
                    D.SYNTAX_ERROR,
                    "`limit` needs `parallel map`: a `map` runs its items one at a time",
                    e.limit.span,
                    hint="write `parallel map … limit N { … }` to run up to N items at once",
                )
        h = self._hint_parts(hint)
        body_hint = h.elem if isinstance(h, ListType) else None
        if e.tolerate is not None:  # `tolerate …`: the map yields Outcome<T>[]
            check_errors.check_tolerance(e, self.report)
            body_hint = check_errors.outcome_value_type(body_hint) if body_hint else None
        self.loop_scope(e.var, elem, e)
        try:
            span = e.keyword_span or e.span
            bt = self.body(e.body, body_hint, span, "the `map` body")
        finally:
            self.pop_scope()
        if isinstance(bt, ErrorType):
            return ERROR
        if e.tolerate is not None:
            return ListType(check_errors.outcome_type(bt))
        return ListType(bt)

    def e_CatchExpr(self, e: ast.CatchExpr, hint: Type | None) -> Type:
        return check_errors.check_catch(self, e, hint)

    def e_FilterExpr(self, e: ast.FilterExpr, hint: Type | None) -> Type:
        ot = self.infer(e.over)
        elem = self.list_elem(ot, "filter", e.over.span)
        self.loop_scope(e.var, elem, e)
        try:
            if e.cond is not None:
                self.expr(e.cond, BOOL)
                self.check_pure(e.cond)
            if e.judge is not None:
                self.expr(e.judge, TEXT)
        finally:
            self.pop_scope()
        if isinstance(elem, ErrorType):
            return ERROR
        if ot == JSON:
            return ListType(JSON)
        return widen(ot) if not isinstance(ot, NamedRef) else ot

    def check_pure(self, cond: ast.Expr) -> None:
        for n in _walk(cond):
            what = None
            if isinstance(n, ast.Call) and id(n) in self.tool_calls:
                what = "a tool call"
            elif isinstance(n, ast.AgentExpr):
                what = "an agent"
            elif isinstance(n, ast.AskExpr):
                what = "an `ask`"
            elif isinstance(n, ast.VerifyExpr):
                what = "a `verify`"
            if what:
                self.report(
                    D.EFFECTFUL_GATE,
                    f"a `filter` condition must be pure, but this is {what}",
                    n.span,
                    hint='compute it before the filter, or use `where judge "…"` for an LLM gate',
                )
                return

    def e_ReduceExpr(self, e: ast.ReduceExpr, hint: Type | None) -> Type:
        elem = self.elem_type(e.over, "reduce")
        if e.acc_type is not None:
            acc_t = self.resolve_type(e.acc_type)
            self.expr(e.init, acc_t)
        elif hint is not None:
            acc_t = hint
            self.expr(e.init, acc_t)
        else:
            acc_t = widen(self.infer(e.init))
        self.loop_scope(e.var, elem, e)
        self.declare(Symbol("acc", e.acc.name, acc_t, e), e.acc.span)
        try:
            self.body(e.body, acc_t, e.span, "the `reduce` body")
        finally:
            self.pop_scope()
        return acc_t

    def e_AskExpr(self, e: ast.AskExpr, hint: Type | None) -> Type:
        self.expr(e.question, TEXT)
        t = self.resolve_type(e.expect) if e.expect is not None else TEXT
        if e.expect is not None and not isinstance(t, ErrorType):
            problem = schema_problem(t, self.env)
            if problem:
                self.report(
                    D.NOT_SCHEMA_GENERATABLE,
                    f"`ask … expect {type_str(t)}` has no JSON Schema: {problem}",
                    e.expect.span,
                )
        if e.default is not None:
            self.expr(e.default, t)
        if e.else_fail is not None:
            self.expr(e.else_fail, TEXT)
        return t

    def e_VerifyExpr(self, e: ast.VerifyExpr, hint: Type | None) -> Type:
        if not e.items:
            self.report(
                D.INVALID_VALUE,
                "an empty `verify` checks nothing",
                e.span,
                hint='give it `check COND else "message"` and/or `judge "…"` items',
            )
        for item in e.items:
            if isinstance(item, ast.VerifyCheck):
                self.expr(item.cond, BOOL)
                self.expr(item.message, TEXT)
            else:
                self.expr(item.prompt, TEXT)
        return VERDICT

    # agent blocks -------------------------------------------------------------------------

    def agent_target(self, target: ast.Expr) -> None:
        def invalid(msg: str) -> None:
            self.report(
                D.INVALID_AGENT_TARGET,
                msg,
                target.span,
                hint="use an alias from `use agent`, `TEAM.main` or `TEAM.member(name)`",
            )

        def use_of(n: ast.Expr) -> Symbol | None:
            if isinstance(n, ast.Name):
                sym = self.lookup(n.name)
                if sym is not None:
                    self.refs[id(n)] = sym
                    self.types[id(n)] = sym.type
                    return sym
            return None

        if isinstance(target, ast.Name):
            sym = use_of(target)
            if (
                sym is None
                and target.name not in self.error_names
                and not self.in_names(target.name)
            ):
                self.report(
                    D.UNKNOWN_NAME,
                    f"unknown agent `{target.name}`",
                    target.span,
                    hint=_suggest(target.name, list(self.use_syms))
                    or f'declare it: `use agent "{target.name}" as {target.name}`',
                )
                return
            if sym is None:
                return
            if sym.kind == "use" and self.uses[sym.name].kind == "agent":
                self.types[id(target)] = sym.type
                return
            if sym.kind == "use":
                invalid(
                    f"`{target.name}` is a team: use `{target.name}.main` or `{target.name}.member(…)`"
                )
                return
            if isinstance(sym.type, ErrorType):
                return  # already reported where it was bound (e.g. `let who = alias`)
            invalid(f"`{target.name}` is not an agent")
            return
        if isinstance(target, ast.Member) and isinstance(target.obj, ast.Name):
            sym = use_of(target.obj)
            if sym is not None and sym.kind == "use" and self.uses[sym.name].kind == "team":
                if target.name == "main":
                    self.types[id(target)] = sym.type
                    return
                invalid(
                    f"a team target is `{sym.name}.main` or `{sym.name}.member(…)`, "
                    f"not `{sym.name}.{target.name}`"
                )
                return
        if (
            isinstance(target, ast.Call)
            and isinstance(target.callee, ast.Member)
            and isinstance(target.callee.obj, ast.Name)
        ):
            sym = use_of(target.callee.obj)
            if sym is not None and sym.kind == "use" and self.uses[sym.name].kind == "team":
                if target.callee.name == "member":
                    values = list(target.positional) + [a.value for a in target.args]
                    if len(values) == 1:
                        self.expr(values[0], make_union([TEXT, MEMBER]))
                        self.types[id(target)] = sym.type
                        self.types[id(target.callee)] = sym.type
                        return
                    for v in values:
                        self.infer(v)
                    invalid(f"`{sym.name}.member(…)` takes exactly one member name")
                    return
                invalid(
                    f"a team target is `{sym.name}.main` or `{sym.name}.member(…)`, "
                    f"not `{sym.name}.{target.callee.name}(…)`"
                )
                return
        # anything else: type it silently for the record, then report the target
        for n in _walk(target):
            if isinstance(n, ast.Name):
                sym = self.lookup(n.name)
                if sym is not None:
                    self.refs[id(n)] = sym
        if isinstance(target, ast.StringLit) and target.is_plain:
            # `agent("classifier")`: the agent's name where its `use agent` alias goes
            aliases = [
                a for a, u in self.uses.items() if u.kind == "agent" and u.target == target.text
            ]
            ident = re.sub(r"\W", "_", target.text) if target.text else "name"
            self.report(
                D.INVALID_AGENT_TARGET,
                "an agent target is a `use agent` alias, not a string",
                target.span,
                hint=(
                    f"use its alias: `agent({aliases[0]})`"
                    if aliases
                    else f'declare it: `use agent "{target.text}" as {ident}`, then '
                    f"`agent({ident})`"
                ),
            )
            return
        invalid("this is not an agent target")

    def in_names(self, name: str) -> bool:
        return name in self.all_stages or any(name in s for s in self.scopes)

    def e_AgentExpr(self, e: ast.AgentExpr, hint: Type | None) -> Type:
        self.agent_target(e.target)
        seen: dict[str, ast.Clause] = {}
        result: Type = ERROR
        for c in e.clauses:
            if c.kind in seen:
                self.report(
                    D.DUPLICATE_CLAUSE,
                    f"`{c.kind}` is given twice in this agent block",
                    c.keyword_span,
                    notes=[Note("first given here", seen[c.kind].keyword_span)],
                )
                # still check it, but its result does not count
                self.clause(c)
                continue
            seen[c.kind] = c
            t = self.clause(c)
            if c.kind == "expect":
                result = t
        for required in ("task", "expect"):
            if required not in seen:
                self.report(
                    D.MISSING_CLAUSE,
                    f"this agent block has no `{required}` clause",
                    e.keyword_span,
                    hint=(
                        'add `task "…"` saying what the agent must do'
                        if required == "task"
                        else "add `expect T` naming the type of the agent's answer"
                    ),
                )
        return result

    def clause(self, c: ast.Clause) -> Type:
        kind, v = c.kind, c.value
        if kind in ("task", "system", "model"):
            self.expr(v, TEXT)
        elif kind == "input":
            if isinstance(v, ast.Expr):
                t = self.infer(v)
                if not isinstance(v, ast.ObjectLit) and not isinstance(t, ErrorType):
                    r = self.env.resolve(t)
                    if not isinstance(r, (ObjectType, MapType)) and t != JSON:
                        self.report(
                            D.TYPE_MISMATCH,
                            f"`input` must be an object, found `{type_str(t)}`",
                            v.span,
                        )
        elif kind == "tools":
            if v is not None and len(v) == 0:
                self.report(
                    D.EMPTY_TOOLS,
                    "`tools []` grants no tools",
                    c.span,
                    hint="write `tools none` for an agent without tools",
                )
            for ref in v or []:
                if ref.pattern:
                    continue
                if ref.name in self.tool_decls or "__" in ref.name:
                    continue
                if ref.name in self.error_names:
                    continue
                self.report(
                    D.UNKNOWN_TOOL,
                    f"unknown tool `{ref.name}`",
                    ref.span,
                    hint=self.tool_hint(ref.name),
                )
        elif kind == "write":
            t = self.infer(v, ListType(PATH))
            if not isinstance(t, ErrorType) and not assignable(t, ListType(PATH), self.env):
                self.report(
                    D.WRITE_NOT_PATH_ARRAY,
                    f"`write` must be `path[]`, found `{type_str(t)}`",
                    v.span,
                    hint='give a `path[]` field, or a list of paths such as `[input.dir, "notes.md"]`',
                )
        elif kind == "expect":
            t = self.resolve_type(v)
            if isinstance(t, ErrorType):
                return ERROR
            problem = schema_problem(t, self.env)
            if problem:
                self.report(
                    D.NOT_SCHEMA_GENERATABLE,
                    f"`expect {type_str(t)}` has no JSON Schema: {problem}",
                    v.span,
                    hint="an agent's answer must be plain data (no `Verdict` or extern types)",
                )
                return ERROR
            return t
        elif kind == "timeout":
            t = self.expr(v, DURATION)
            if not isinstance(t, ErrorType):
                d = self.compile_time(
                    v,
                    "`timeout`",
                    "the plan gives the step a fixed timeout when the flow is compiled",
                    hint="write a duration such as `timeout 90s` (or a `let` of one)",
                )
                if isinstance(d, _Duration) and d.ms <= 0:
                    del self.constants[id(v)]
                    self.report(D.INVALID_DURATION, "`timeout` must be a positive duration", v.span)
        elif kind == "max_iterations":
            self.count_setting(v, "`max_iterations`", MAX_ITERATIONS)
        elif kind == "budget":
            if isinstance(v, ast.BudgetSpec):
                self.budget(v)
        elif kind == "retry":
            if isinstance(v, ast.RetrySpec):
                if v.attempts is not None and not isinstance(self.expr(v.attempts, INT), ErrorType):
                    n = self.compile_time(
                        v.attempts,
                        "`attempts`",
                        "the plan fixes a step's retries when the flow is compiled",
                        hint="write a number of extra tries, e.g. `attempts: 2`",
                    )
                    if n is None:
                        pass
                    elif n < 0:
                        self.report(
                            D.INVALID_VALUE,
                            f"`attempts` must be zero or more, found {n}",
                            v.attempts.span,
                        )
                    elif n > MAX_RETRY_ATTEMPTS:
                        self.report(
                            D.INVALID_VALUE,
                            f"`attempts` must be at most {MAX_RETRY_ATTEMPTS}, found {n}",
                            v.attempts.span,
                        )
                for code in v.on or []:
                    if code.name not in RETRYABLE_CODES:
                        self.report(
                            D.UNKNOWN_ERROR_CODE,
                            f"`{code.name}` is not a retryable error code",
                            code.span,
                            hint=_suggest(code.name, list(RETRYABLE_CODES))
                            or f"retry on {', '.join(RETRYABLE_CODES)}",
                        )
        return ERROR


#: node class → the ``_Checker.e_<Class>`` function typing it (filled on first use)
_DISPATCH: dict[type, Any] = {}


def _no_rule(checker: _Checker, e: ast.Expr, hint: Type | None) -> Type:
    """Typing rule of a node class with no ``e_`` method: the error type."""
    return ERROR


#: what users of other languages write for a length: ``xs.length``, ``len(xs)`` …
_LENGTH_HINTS = {
    name: "the length of an array, a text or a map is `.count` (`xs.count`)"
    for name in ("length", "len", "size", "count", "Count", "Length")
}


#: operators of other languages written between two values (``s matches "x"``): a name to
#: the checker, which then says what `.flow` has instead
_OPERATOR_HINTS = {
    name: "`.flow` has no `"
    + name
    + '` operator: `needle in text` tests for a substring, `@pattern("…")` constrains a'
    " type, and the `grep` tool searches files"
    for name in ("matches", "like", "contains")
}


def _suggest(name: str, candidates) -> str | None:
    """``did_you_mean``, plus one swap of adjacent letters (``titel`` → ``title``) and
    case-only differences."""
    hint = did_you_mean(name, candidates)
    if hint:
        return hint
    for cand in sorted(candidates):
        if cand.lower() == name.lower():
            return f"did you mean `{cand}`?"
        if len(cand) == len(name):
            diff = [i for i, (a, b) in enumerate(zip(name, cand, strict=True)) if a != b]
            if (
                len(diff) == 2
                and diff[1] == diff[0] + 1
                and name[diff[0]] == cand[diff[1]]
                and name[diff[1]] == cand[diff[0]]
            ):
                return f"did you mean `{cand}`?"
    return None


def _has_literal(t: Type, env: TypeEnv) -> bool:
    t = env.resolve(t) if isinstance(t, NamedRef) and t.name in env.aliases else t
    if isinstance(t, LiteralType):
        return True
    if isinstance(t, (UnionType,)):
        return any(_has_literal(m, env) for m in t.members)
    if isinstance(t, OptionalType):
        return _has_literal(t.inner, env)
    if isinstance(t, ListType):
        return _has_literal(t.elem, env)
    return False


_NOT_PLAN_NAME_CHAR = re.compile(r"[^a-z0-9_]")


def flow_name_from_file(file: str) -> str:
    """The plan name of a flow without a ``flow`` header, from its file name
    (docs/spec/LANGUAGE.md §2, extended in docs/decisions.md "Lowering"): the stem lower-cased,
    ``-`` and every other character outside ``[a-z0-9_]`` replaced by ``_``, prefixed with ``flow_``
    when it starts with a digit, and ``flow`` when empty — so it always matches ``[a-z_][a-z0-9_]*``
    (docs/spec/PLAN_IR.md).

    ``"bug-triage.flow"`` → ``bug_triage``; ``"v1.2.flow"`` → ``v1_2``; ``"1st.flow"`` →
    ``flow_1st``; ``"café.flow"`` → ``caf_``; ``"<input>"`` → ``_input_``.
    """
    name = _NOT_PLAN_NAME_CHAR.sub("_", Path(file).stem.lower())
    if not name:
        return "flow"
    if name[0].isdigit():
        name = "flow_" + name
    return name


def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    seen = set()
    out = []
    for d in diags:
        key = (d.code, d.span.file, d.span.line, d.span.column, d.message)
        if key in seen:
            continue
        seen.add(key)
        out.append(d)
    return out


def check_module(
    module: ast.Module, *, parse_diagnostics: tuple | list = (), prelude: bool = True
) -> CheckResult:
    """Type-check a parsed module (docs/spec/LANGUAGE.md §2–9) and return a :class:`CheckResult`.

    ``parse_diagnostics`` (the parser's ``syntax-error`` list) are merged into the sorted
    result.  ``prelude=False`` leaves the standard library tools out.  Never raises for any
    module the parser produces: a program nested too deeply to check gets one
    ``syntax-error`` diagnostic instead.
    """
    # The check allocates many small acyclic objects; pausing the cyclic collector for its
    # duration halves the time on big files (the same trick as the parser's).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _check_module(module, parse_diagnostics, prelude)
    finally:
        if was_enabled:
            gc.enable()


def _check_module(module: ast.Module, parse_diagnostics, prelude: bool) -> CheckResult:
    checker = _Checker(module, parse_diagnostics, prelude=prelude)
    try:
        return checker.check()
    except RecursionError:
        checker = _Checker(module, parse_diagnostics, prelude=prelude)
        checker.report(D.SYNTAX_ERROR, "the program is nested too deeply to check", module.span)
        return _empty_result(checker)


def _empty_result(checker: _Checker) -> CheckResult:
    module = checker.module
    return CheckResult(
        diagnostics=sorted(_dedupe(checker.diags), key=lambda d: d.sort_key()),
        module=module,
        env=checker.env,
        expr_types={},
        stage_types={},
        stages=[],
        uses={},
        tools={},
        tool_decls=dict(prelude_tools()) if checker.use_prelude else {},
        input_type=JSON,
        output_type=JSON,
        flow_name=flow_name_from_file(module.file),
        description=None,
        deadline_ms=None,
        references={},
    )


def _takes_null(t: Type) -> bool:
    """Whether ``null`` is a value of ``t`` (``T?``, ``null``, ``json``)."""
    return isinstance(t, OptionalType) or t == NULL or t == JSON
