"""AST node classes for `.flow` programs and `{{ … }}` templates.

Every node carries a :class:`~agentflow.core.spans.Span` (1-based line/column, end exclusive
column, plus 0-based character offsets into the source text).  Nodes are plain dataclasses;
visitors dispatch on the node class (``type(node).__name__``), in the manner of Jinja2's
``NodeVisitor``.

The same expression nodes are produced for `.flow` source and for plan templates, so the
checker types, and the runtime evaluates, one expression language (docs/spec/LANGUAGE.md §4,
docs/spec/PLAN_IR.md §3).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from agentflow.core.spans import Span
from agentflow.core.vocabulary import MAX_EXPR_DEPTH


@dataclass(slots=True, eq=False)
class Node:
    """Base class of every AST node."""

    span: Span


# ---------------------------------------------------------------------------------------------
# Names and types


@dataclass(slots=True, eq=False)
class Ident(Node):
    """An identifier token where a *name* is declared or referenced outside expressions
    (type names, field names, stage names, clause names)."""

    name: str


@dataclass(slots=True, eq=False)
class TypeExpr(Node):
    """Base class of written types."""


@dataclass(slots=True, eq=False)
class NamedType(TypeExpr):
    """``text``, ``int``, ``BugReport``, ``Verdict``… (resolved by the checker)."""

    name: str


@dataclass(slots=True, eq=False)
class ArrayType(TypeExpr):
    """``T[]``."""

    element: TypeExpr


@dataclass(slots=True, eq=False)
class OptionalType(TypeExpr):
    """``T?``."""

    inner: TypeExpr


@dataclass(slots=True, eq=False)
class UnionType(TypeExpr):
    """``A | B | …`` (members may be literal types: ``"low" | "high"``)."""

    members: list[TypeExpr]


@dataclass(slots=True, eq=False)
class LiteralType(TypeExpr):
    """A literal used as a type: ``"low"``, ``1``, ``true``."""

    value: str | int | float | bool | None


@dataclass(slots=True, eq=False)
class MapType(TypeExpr):
    """``map<T>``."""

    value: TypeExpr


@dataclass(slots=True, eq=False)
class GenericType(TypeExpr):
    """``Name<T>``: a built-in type that takes a type argument (``Outcome<Report>``;
    docs/reference/errors-as-values.md).  ``name_span`` covers the name alone."""

    name: str
    arg: TypeExpr
    name_span: Span


@dataclass(slots=True, eq=False)
class Constraint(Node):
    """``@range(0, 10)``, ``@length(1, 80)``, ``@pattern("…")``, ``@format("uri")``."""

    name: Ident
    args: list[Expr]


@dataclass(slots=True, eq=False)
class FieldDecl(Node):
    """``name: T @constraint…`` inside a type body or inline object type."""

    name: Ident
    type: TypeExpr
    constraints: list[Constraint] = field(default_factory=list)
    doc: str | None = None


@dataclass(slots=True, eq=False)
class ObjectType(TypeExpr):
    """``{ f: T, g: U }`` (closed)."""

    fields: list[FieldDecl]


# ---------------------------------------------------------------------------------------------
# Expressions


@dataclass(slots=True, eq=False)
class Expr(Node):
    """Base class of expressions."""


@dataclass(slots=True, eq=False)
class Name(Expr):
    """A name reference: ``input``, a stage, a ``let``, a loop variable, a ``use`` alias, a step
    id (templates)."""

    name: str


@dataclass(slots=True, eq=False)
class StringLit(Expr):
    """A string, possibly interpolated.

    ``parts`` alternates freely between literal text (``str``, escapes already decoded,
    ``\"\"\"`` indentation already trimmed) and :class:`Interpolation` nodes.  A plain string
    has ``parts == ["text"]`` (or ``[]`` when empty).
    """

    parts: list[str | Interpolation]
    triple: bool = False
    #: each ``{name}`` / ``{name.field…}`` (or ``{{…}}``) written as source text in the string
    #: (never one made by an escape, ``\u{7B}``, nor ``\${…}``): (``name.field…``, its span).
    #: The checker warns for those naming a value in scope (``brace-not-interpolation``).
    braces: list[tuple[str, Span]] = field(default_factory=list)

    @property
    def is_plain(self) -> bool:
        """True when the string has no interpolation."""
        return all(isinstance(p, str) for p in self.parts)

    @property
    def text(self) -> str:
        """The literal text (only meaningful when :attr:`is_plain`)."""
        return "".join(p for p in self.parts if isinstance(p, str))


@dataclass(slots=True, eq=False)
class Interpolation(Node):
    """``${expr}`` inside a string; the span covers ``${`` through ``}``."""

    expr: Expr


@dataclass(slots=True, eq=False)
class NumberLit(Expr):
    """``42`` (``value`` is an ``int``) or ``3.5`` (a ``float``); ``written`` is the literal as
    the source spells it (``9223372036854775807.0``, which ``value`` rounds), empty for one the
    compiler makes."""

    value: int | float
    written: str = ""


@dataclass(slots=True, eq=False)
class BoolLit(Expr):
    value: bool


@dataclass(slots=True, eq=False)
class NullLit(Expr):
    pass


@dataclass(slots=True, eq=False)
class DurationLit(Expr):
    """``250ms``, ``90s``, ``1h30m``; ``ms`` is the total in milliseconds, ``text`` as written."""

    ms: int
    text: str


@dataclass(slots=True, eq=False)
class ListLit(Expr):
    items: list[Expr]


@dataclass(slots=True, eq=False)
class ObjectEntry(Node):
    """``key: value`` in an object literal; ``key_span`` is the key token's span."""

    key: str
    key_span: Span
    value: Expr


@dataclass(slots=True, eq=False)
class ObjectLit(Expr):
    entries: list[ObjectEntry]


@dataclass(slots=True, eq=False)
class RangeExpr(Expr):
    """``lo..hi`` (inclusive both ends)."""

    low: Expr
    high: Expr


BinaryOp = Literal[
    "??", "or", "and", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "+", "-", "*", "/", "%"
]


@dataclass(slots=True, eq=False)
class Binary(Expr):
    """A binary operator; ``op_span`` is the operator token."""

    op: str
    left: Expr
    right: Expr
    op_span: Span | None = None


@dataclass(slots=True, eq=False)
class Unary(Expr):
    """``not x`` or ``-x``."""

    op: str
    operand: Expr


@dataclass(slots=True, eq=False)
class Member(Expr):
    """``obj.name``; ``name_span`` is the span of the name token (for ``unknown-field``)."""

    obj: Expr
    name: str
    name_span: Span


@dataclass(slots=True, eq=False)
class Index(Expr):
    """``obj[index]``."""

    obj: Expr
    index: Expr


@dataclass(slots=True, eq=False)
class Projection(Expr):
    """``base[*]`` followed by a path applied to every element: ``xs[*].owner.name``.

    ``path`` holds the :class:`Member`/:class:`Index` chain *relative to one element*, whose
    innermost ``obj`` is a :class:`ProjectionItem` placeholder.  ``path is None`` for a bare
    ``xs[*]``.  The value is the list of the path's value for every element of ``base``.
    """

    base: Expr
    path: Expr | None
    #: True once the projection is closed by parentheses: ``(xs[*].a).count`` applies
    #: ``.count`` to the projected list instead of extending the per-element path.
    closed: bool = False


@dataclass(slots=True, eq=False)
class ProjectionItem(Expr):
    """The element placeholder at the root of a :attr:`Projection.path`."""


@dataclass(slots=True, eq=False)
class Argument(Node):
    """A named argument ``name: value`` of a tool call."""

    name: str
    name_span: Span
    value: Expr


@dataclass(slots=True, eq=False)
class Call(Expr):
    """``callee(arg: value, …)``; ``callee`` is any expression (the checker reports
    ``not-callable`` for anything but a tool name)."""

    callee: Expr
    args: list[Argument]
    #: positional arguments, which are a checker error (tools take named arguments only);
    #: kept so the checker can say so precisely rather than the parser failing.
    positional: list[Expr] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class FuncCall(Expr):
    """``name(a, b, …)``: a call of a library function (docs/reference/functions.md), written
    with positional arguments only; ``name_span`` covers the name.  The parser builds it for a
    name of ``core.functions.FUNCTIONS`` called with positional arguments only; any other call is
    a :class:`Call` (a tool call, or a mistake the checker explains)."""

    name: str
    name_span: Span
    args: list[Expr]


@dataclass(slots=True, eq=False)
class UserCall(Expr):
    """``name(a, b, …)`` of a name that is no library function, with positional arguments only
    (at least one): a call of a user function ``fn name(…)`` (docs/reference/programs.md "User
    functions"). The checker reports it as the parser used to read it — a tool called without
    named arguments, an unknown function — when ``name`` is no user function. ``function`` is
    set by the plan loader (:mod:`agentflow.ir.functions`) on its own copy of a template: the
    plan's function the call runs; None in a checked program."""

    name: str
    name_span: Span
    args: list[Expr]
    function: Any = None


@dataclass(slots=True, eq=False)
class UserFunction:
    """A user function ready to run (not a node): its name, its parameters' names, its body
    (its own calls bound) and where it was declared (``file.flow:line:col``, None when
    unknown). What a bound :class:`UserCall`'s ``function`` is: the plan loader's
    (``ir.functions``) or, for an expression run from the checked AST (``test`` blocks, eval
    scorers), the compiler's (``lower_expressions.absent_reads_null``)."""

    name: str
    params: tuple[str, ...]
    body: Expr
    source: str | None = None


@dataclass(slots=True, eq=False)
class CondExpr(Expr):
    """``if cond then a else b`` (docs/reference/expressions.md): only the chosen arm is
    evaluated."""

    cond: Expr
    then: Expr
    else_: Expr


@dataclass(slots=True, eq=False)
class MatchArm(Node):
    """One arm ``p1 | p2 => value`` of a :class:`MatchExpr`: ``patterns`` are literal
    expressions (``StringLit`` without interpolation, ``NumberLit`` — a negative one is a
    ``Unary`` ``-`` of it — ``DurationLit``, ``BoolLit``, ``NullLit``); an empty list is the
    wildcard ``_`` (``wildcard_span`` covers it)."""

    patterns: list[Expr]
    value: Expr
    wildcard_span: Span | None = None


@dataclass(slots=True, eq=False)
class MatchExpr(Expr):
    """``match subject { pattern => value, … }`` (docs/reference/expressions.md "match"): the
    first arm whose pattern equals the subject (as ``==`` compares) gives the value; only that
    arm is evaluated."""

    subject: Expr
    arms: list[MatchArm]
    keyword_span: Span | None = None


@dataclass(slots=True, eq=False)
class Block(Node):
    """``{ stmt … }``."""

    stmts: list[Stmt]


@dataclass(slots=True, eq=False)
class MapExpr(Expr):
    """``[parallel] map over as var [limit N] [tolerate N | tolerate P%] { body }``."""

    parallel: bool
    over: Expr
    var: Ident
    limit: Expr | None
    body: Block
    keyword_span: Span | None = None
    #: ``tolerate N`` / ``tolerate P%``: how many failed items the map tolerates (then it yields
    #: ``Outcome<T>`` per item); ``tolerate_percent`` when written as a percentage.
    tolerate: int | float | None = None
    tolerate_percent: bool = False
    tolerate_span: Span | None = None


@dataclass(slots=True, eq=False)
class ParallelExpr(Expr):
    """``parallel [limit N] { name: expr, … }``: each branch's expression run side by side, the
    value an object of the branches' values by name (docs/reference/control.md "parallel
    blocks"). ``branches`` are written as an object's entries."""

    branches: list[ObjectEntry]
    limit: Expr | None
    keyword_span: Span | None = None


@dataclass(slots=True, eq=False)
class CatchExpr(Expr):
    """``guarded catch [on [code, …]] [as var] { fallback }``: the guarded expression's value, or,
    when it fails (with one of ``codes``, when given), the fallback's, with ``var`` bound to the
    error."""

    guarded: Expr
    codes: list[Ident] | None
    var: Ident | None
    body: Block
    keyword_span: Span | None = None


@dataclass(slots=True, eq=False)
class TryExpr(Expr):
    """``try { … } catch [on [code, …]] [as var] { fallback }``: the block form of
    :class:`CatchExpr` — the guarded block's value (its ``return``, else its last expression),
    or, when one of its statements fails (with one of ``codes``, when given), the fallback's.
    A statement when its value is not used.  ``keyword_span`` covers ``catch``, ``try_span``
    ``try``."""

    block: Block
    codes: list[Ident] | None
    var: Ident | None
    body: Block
    keyword_span: Span | None = None
    try_span: Span | None = None


@dataclass(slots=True, eq=False)
class FilterExpr(Expr):
    """``filter over as var where cond`` or ``… where judge "prompt"``."""

    over: Expr
    var: Ident
    cond: Expr | None
    judge: Expr | None


@dataclass(slots=True, eq=False)
class ReduceExpr(Expr):
    """``reduce over as var, acc[: T] = init { body }``."""

    over: Expr
    var: Ident
    acc: Ident
    acc_type: TypeExpr | None
    init: Expr
    body: Block


@dataclass(slots=True, eq=False)
class LoopExpr(ReduceExpr):
    """``loop up to bound as var, acc[: T] = init { body } [until cond else (fail m | value)]``
    (docs/reference/control.md "loop"): a :class:`ReduceExpr` whose ``over`` is the bound (an
    ``int``), ``var`` the round number (1-based), ``acc`` the state.  ``until`` is checked after
    each round on the new state; when every round ran without meeting it, the loop fails with
    ``else_fail`` (code ``loop_exhausted``) or takes ``else_value`` (the last state in scope).
    ``keyword_span`` covers ``loop``."""

    until: Expr | None = None
    else_fail: Expr | None = None
    else_value: Expr | None = None
    keyword_span: Span | None = None


@dataclass(slots=True, eq=False)
class AskExpr(Expr):
    """``ask question [expect T] [default v | else fail "m"]``."""

    question: Expr
    expect: TypeExpr | None
    default: Expr | None
    else_fail: Expr | None


@dataclass(slots=True, eq=False)
class VerifyCheck(Node):
    """``check cond else "message"``."""

    cond: Expr
    message: Expr


@dataclass(slots=True, eq=False)
class VerifyJudge(Node):
    """``judge "prompt"``."""

    prompt: Expr


@dataclass(slots=True, eq=False)
class VerifyExpr(Expr):
    items: list[VerifyCheck | VerifyJudge]


@dataclass(slots=True, eq=False)
class ToolRef(Node):
    """One entry of ``tools [...]``: a bare name (``pattern=False``) or a quoted pattern."""

    name: str
    pattern: bool


@dataclass(slots=True, eq=False)
class RetrySpec(Node):
    """``retry { attempts: N, on: [code, …] }``; each ``on`` entry keeps its span."""

    attempts: Expr | None
    on: list[Ident] | None


@dataclass(slots=True, eq=False)
class BudgetSpec(Node):
    """``budget { inferences: N, tokens: N, cost: X }`` (docs/models.md "Budgets"): its
    ``key: value`` entries in source order (keys already checked to be one of the three)."""

    entries: list[ObjectEntry]

    def limit(self, key: str) -> Expr | None:
        """The value expression of limit ``key``, or None."""
        for e in self.entries:
            if e.key == key:
                return e.value
        return None


@dataclass(slots=True, eq=False)
class Clause(Node):
    """One clause of an ``agent { … }`` block.

    ``kind`` and the type of ``value``:

    - ``task``, ``system``, ``model``: :class:`Expr` (text)
    - ``input``: :class:`ObjectLit`
    - ``tools``: ``list[ToolRef]`` (``[]`` for ``tools []``) or ``None`` for ``tools none``
    - ``write``: :class:`Expr`
    - ``expect``: :class:`TypeExpr`
    - ``timeout``, ``max_iterations``: :class:`Expr`
    - ``retry``: :class:`RetrySpec`
    - ``budget``: :class:`BudgetSpec`

    ``keyword_span`` is the clause keyword's span.
    """

    kind: str
    value: Any
    keyword_span: Span


@dataclass(slots=True, eq=False)
class CallOptions(Expr):
    """``call timeout D retry { … }``: a tool call's clauses (docs/reference/tools.md "Timeout
    and retry"), each a :class:`Clause` of kind ``timeout`` (an :class:`Expr`) or ``retry`` (a
    :class:`RetrySpec`), in source order.  The grammar takes them after any operand chain; the
    checker reports `invalid-clause` unless ``call`` is a tool call."""

    call: Expr
    clauses: list[Clause]

    def clause(self, kind: str) -> Clause | None:
        """The first clause of that kind, or None."""
        for c in self.clauses:
            if c.kind == kind:
                return c
        return None


@dataclass(slots=True, eq=False)
class AgentExpr(Expr):
    """``agent(target) { clause … }``; ``keyword_span`` is the ``agent`` keyword."""

    target: Expr
    clauses: list[Clause]
    keyword_span: Span

    def clause(self, kind: str) -> Clause | None:
        """The first clause of that kind, or None."""
        for c in self.clauses:
            if c.kind == kind:
                return c
        return None


# ---------------------------------------------------------------------------------------------
# Statements


@dataclass(slots=True, eq=False)
class Stmt(Node):
    """Base class of statements."""


@dataclass(slots=True, eq=False)
class LetStmt(Stmt):
    name: Ident
    annotation: TypeExpr | None
    value: Expr


@dataclass(slots=True, eq=False)
class RequireStmt(Stmt):
    """``require cond else fail "message"``."""

    cond: Expr
    message: Expr


@dataclass(slots=True, eq=False)
class FailStmt(Stmt):
    message: Expr


@dataclass(slots=True, eq=False)
class SleepStmt(Stmt):
    """``sleep DURATION``: wait, durably in a durable run (docs/reference/statements.md)."""

    duration: Expr


@dataclass(slots=True, eq=False)
class ReturnStmt(Stmt):
    value: Expr


@dataclass(slots=True, eq=False)
class IfStmt(Stmt):
    """``if cond { … } [else if …] [else { … }]``; ``else_`` is a Block, another IfStmt or None."""

    cond: Expr
    then: Block
    else_: Block | IfStmt | None


@dataclass(slots=True, eq=False)
class ExprStmt(Stmt):
    expr: Expr


# ---------------------------------------------------------------------------------------------
# Top-level items


@dataclass(slots=True, eq=False)
class Item(Node):
    """Base class of top-level declarations."""


@dataclass(slots=True, eq=False)
class FlowHeader(Item):
    """``flow name ["description"]``."""

    name: Ident
    description: str | None


@dataclass(slots=True, eq=False)
class InputDecl(Item):
    type: TypeExpr


@dataclass(slots=True, eq=False)
class OutputDecl(Item):
    type: TypeExpr


@dataclass(slots=True, eq=False)
class DeadlineDecl(Item):
    duration: DurationLit


@dataclass(slots=True, eq=False)
class BudgetDecl(Item):
    """``budget { … }`` at the top level: the model budget of each run."""

    spec: BudgetSpec


@dataclass(slots=True, eq=False)
class UseDecl(Item):
    """``use agent "repo-investigator" as investigator`` / ``use team "dev-team" as dev``."""

    kind: Literal["agent", "team"]
    target: str
    target_span: Span
    alias: Ident


@dataclass(slots=True, eq=False)
class ImportDecl(Item):
    """``import { Ticket, Severity as Level } from "./shared.flow"`` (docs/reference/programs.md
    "import"): the named declarations of another `.flow` file (``path``, relative to this one;
    ``path_span``: its string's span). ``names`` are the names as the other file declares them;
    ``aliases`` is empty when nothing is renamed, else one entry per name: the ``as`` name, or
    None (see :meth:`local`)."""

    names: list[Ident]
    path: str
    path_span: Span
    aliases: list[Ident | None] = field(default_factory=list)

    def local(self, i: int) -> Ident:
        """The name the ``i``-th import is known by in this file (its ``as`` name, else the
        name itself)."""
        alias = self.aliases[i] if self.aliases else None
        return alias if alias is not None else self.names[i]

    def pairs(self) -> Iterator[tuple[Ident, Ident]]:
        """``(name in the other file, name in this one)`` for each import, in order."""
        for i, name in enumerate(self.names):
            yield name, self.local(i)


@dataclass(slots=True, eq=False)
class Param(Node):
    """``name: T``, or ``name?: T`` (``omittable``: the argument may be left out, and when
    given it is a ``T`` — unlike ``name: T?``, which also takes ``null``)."""

    name: Ident
    type: TypeExpr
    omittable: bool = False


@dataclass(slots=True, eq=False)
class ExternTool(Item):
    """``extern tool name(param: T, …) -> R``, or ``extern tool "catalog-name" as name(…) -> R``
    (``catalog``: the catalog tool's own name, for names that are not `.flow` identifiers, such
    as MCP tools with ``-`` or ``.``; ``catalog_span``: its string's span)."""

    name: Ident
    params: list[Param]
    returns: TypeExpr
    doc: str | None = None
    catalog: str | None = None
    catalog_span: Span | None = None


@dataclass(slots=True, eq=False)
class FnDecl(Item):
    """``fn name(p: T, …) -> R = body`` (docs/reference/programs.md "User functions"): a pure
    function of its parameters, called positionally (:class:`UserCall`)."""

    name: Ident
    params: list[Param]
    returns: TypeExpr
    body: Expr
    doc: str | None = None


@dataclass(slots=True, eq=False)
class ExternType(Item):
    """``extern type Name`` (opaque, not schema-generatable)."""

    name: Ident
    doc: str | None = None


@dataclass(slots=True, eq=False)
class TypeDecl(Item):
    """``type N { fields }`` (``body`` is an :class:`ObjectType`) or ``type N = T``
    (``alias`` set)."""

    name: Ident
    body: ObjectType | None
    alias: TypeExpr | None
    doc: str | None = None


@dataclass(slots=True, eq=False)
class StageDecl(Item):
    """``stage name [-> T] { body }``."""

    name: Ident
    returns: TypeExpr | None
    body: Block
    doc: str | None = None


@dataclass(slots=True, eq=False)
class TestInput(Node):
    """``input V`` in a test: the run's input."""

    value: Expr


@dataclass(slots=True, eq=False)
class StubFails(Node):
    """``fails "code"`` in a stub's answers (``stub agent A fails "timeout"``, ``… returns V then
    fails "timeout"``): that call fails with run-time error ``code`` (``code_span``: its string)."""

    code: str
    code_span: Span


@dataclass(slots=True, eq=False)
class TestStub(Node):
    """``stub agent|stage|tool|ask NAME returns V [then V2 …]``, ``stub step NAME[.BRANCH] returns V``
    or ``stub agent|stage|tool NAME fails "code"``.

    ``kind``: ``agent`` (an alias), ``stage`` (every agent call inside the stage), ``tool``,
    ``ask`` (the human's answer to the ``ask`` bound by ``let NAME``, or to every ``ask`` of stage
    ``NAME``) or ``step`` (the value of the step bound by ``let NAME``: it does not run);
    ``values``: every answer, in call order (one answers every call, several answer the calls in
    turn); for agents, stages and tools an answer may be a :class:`StubFails` (that call fails);
    ``value``: the first answer when it is a value (None when it fails); ``fails``: the error
    code when the only answer is a failure, with ``fails_span`` its string's span;
    ``always``: the sequence ends ``then always V`` — the last answer answers every later call.
    """

    kind: str  # agent, stage, tool, ask or step
    target: Ident
    value: Expr | None
    fails: str | None = None
    fails_span: Span | None = None
    values: list[Expr | StubFails] = field(default_factory=list)
    always: bool = False
    #: ``stub step NAME.BRANCH``: the branch of the ``parallel`` block of ``let NAME``
    branch: Ident | None = None

    @property
    def written(self) -> str:
        """The target as written: ``NAME``, or ``NAME.BRANCH``."""
        return self.target.name + (f".{self.branch.name}" if self.branch is not None else "")


@dataclass(slots=True, eq=False)
class TestReplay(Node):
    """``replay "cassette.jsonl"`` in a test: model requests answer from that cassette (a
    ``--record`` file; ``path`` relative to the ``.flow`` file's directory, ``path_span`` its
    string's span)."""

    path: str
    path_span: Span


@dataclass(slots=True, eq=False)
class TestExpect(Node):
    """``expect E`` (``cond``: a ``bool`` expression) or ``expect fail "code"`` (``fail_code``,
    with ``code_span`` its string's span)."""

    cond: Expr | None
    fail_code: str | None = None
    code_span: Span | None = None


@dataclass(slots=True, eq=False)
class TestDecl(Item):
    """``test "name" [map CASES as case] { … }`` (docs/reference/testing.md): ``body`` holds its
    inputs, stubs and expectations in source order; a parametrised test has ``cases`` (a list)
    and ``case`` (the name each element is bound to in the body)."""

    name: str
    name_span: Span
    body: list[TestInput | TestStub | TestExpect | TestReplay]
    cases: Expr | None = None
    case: Ident | None = None

    @property
    def inputs(self) -> list[TestInput]:
        return [i for i in self.body if isinstance(i, TestInput)]

    @property
    def stubs(self) -> list[TestStub]:
        return [i for i in self.body if isinstance(i, TestStub)]

    @property
    def expects(self) -> list[TestExpect]:
        return [i for i in self.body if isinstance(i, TestExpect)]

    @property
    def replays(self) -> list[TestReplay]:
        return [i for i in self.body if isinstance(i, TestReplay)]


@dataclass(slots=True, eq=False)
class EvalDataset(Node):
    """``dataset "cases.jsonl"`` in an eval block: a file of cases (JSON Lines or YAML; ``path``
    relative to the ``.flow`` file's directory, ``path_span`` its string's span)."""

    path: str
    path_span: Span


@dataclass(slots=True, eq=False)
class EvalExpect(Node):
    """``expect T`` in an eval block: the type of the cases' ``expected`` (default: the flow's
    output type)."""

    type: TypeExpr


@dataclass(slots=True, eq=False)
class EvalScorer(Node):
    """``score NAME = E [threshold N]`` (``kind="score"``: ``E`` a ``bool`` or a ``number`` in
    0..1) or ``judge NAME "rubric" [threshold N]`` (``kind="judge"``: the judge model's verdict
    ``{ score, reason }`` on the rubric); ``threshold``: the least score of a passing case
    (``N%`` is ``N/100``; None: the default), ``threshold_span`` its span."""

    kind: str  # score or judge
    name: Ident
    expr: Expr
    threshold: float | None = None
    threshold_span: Span | None = None


@dataclass(slots=True, eq=False)
class EvalDecl(Item):
    """``eval "name" { … }`` (docs/reference/evals.md): its datasets, the type of ``expected``
    and its scorers, in source order."""

    name: str
    name_span: Span
    body: list[EvalDataset | EvalExpect | EvalScorer]

    @property
    def datasets(self) -> list[EvalDataset]:
        return [i for i in self.body if isinstance(i, EvalDataset)]

    @property
    def expects(self) -> list[EvalExpect]:
        return [i for i in self.body if isinstance(i, EvalExpect)]

    @property
    def scorers(self) -> list[EvalScorer]:
        return [i for i in self.body if isinstance(i, EvalScorer)]


@dataclass(slots=True, eq=False)
class ErrorItem(Item):
    """A top-level item that failed to parse; the parser already reported it.  The checker
    skips it (docs/spec/LANGUAGE.md §9: an item with a syntax error gets no other diagnostics)."""

    name: str | None = None
    #: the names a broken ``import { … }`` item would bring (their uses are not reported)
    names: tuple[str, ...] = ()


@dataclass(slots=True, eq=False)
class Module(Node):
    """A whole `.flow` file."""

    file: str
    items: list[Item]

    def of(self, cls: type) -> list[Any]:
        """All items of the given class, in source order."""
        return [i for i in self.items if isinstance(i, cls)]


# ---------------------------------------------------------------------------------------------
# Templates (docs/spec/PLAN_IR.md §3)


@dataclass(slots=True, eq=False)
class Template(Node):
    """A plan string with ``{{ expr }}`` holes.

    ``parts`` mixes literal text and :class:`Expr`.  ``whole`` is the expression when the string
    is exactly one ``{{ expr }}`` (surrounding whitespace outside the braces not allowed), which
    renders to the typed value; otherwise the template renders to text.
    """

    parts: list[str | Expr]

    @property
    def whole(self) -> Expr | None:
        if len(self.parts) == 1 and isinstance(self.parts[0], Expr):
            return self.parts[0]
        return None

    @property
    def is_static(self) -> bool:
        return all(isinstance(p, str) for p in self.parts)


AnyNode = Node | Span


#: node class → its fields other than ``span``, last first (:func:`walk` pushes them in that order)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def walk(node: Any) -> Iterator[Node]:
    """Yield ``node`` and every AST node below it (depth first, source order); lists and tuples
    of nodes are entered, other field values skipped."""
    stack = [node]
    fields = _CHILD_FIELDS
    while stack:
        n = stack.pop()
        if isinstance(n, Node):
            yield n
            cls = type(n)
            names = fields.get(cls)
            if names is None:
                names = fields[cls] = tuple(
                    name for name in reversed(cls.__dataclass_fields__) if name != "span"
                )
            stack.extend([getattr(n, name, None) for name in names])
        elif isinstance(n, (list, tuple)):
            stack.extend(reversed(n))


def too_deep(root: Any, limit: int = MAX_EXPR_DEPTH) -> Node | None:
    """The first AST node found deeper than ``limit`` levels under ``root``, or None.

    Iterative (no recursion), so it is safe on trees of any depth; use it before walking a parsed
    tree recursively. A node is one level below its parent; a list field is a level of its own
    (its items sit at the list's level). Plans bound templates and conditions with it
    (``vocabulary.MAX_EXPR_DEPTH``), and ``flowc check`` the templates a program compiles to.
    """
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, list | tuple):
            stack.extend((item, depth) for item in node)
            continue
        if not isinstance(node, Node):
            continue
        if depth > limit:
            return node
        for name in type(node).__dataclass_fields__:
            value = getattr(node, name)
            if isinstance(value, Node | list | tuple):
                stack.append((value, depth + 1))
    return None
