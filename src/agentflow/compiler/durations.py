"""Durations by value (docs/reference/lexical.md "Durations", docs/decisions.md "Durations by
value (durvalues)").

A duration is carried at run time as its text (``"1m30s"``), and the evaluator has no types:
compared as texts, ``90s == 1m30s`` would be false and ``90s < 5m`` false too. The checker knows
where both operands are durations, so the compiler writes those operations through the library's
normalizing functions (docs/reference/functions.md), and every evaluation of the checked AST
sees the same rewrite — the lowering (:meth:`ExpressionLowering.visit_Binary
<agentflow.compiler.lower_expressions.ExpressionLowering.visit_Binary>`) and the expressions
run from the AST, `test` expectations and eval scorers
(:func:`~agentflow.compiler.lower_expressions.absent_reads_null`):

- ``a == b``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` of two durations (``duration?`` or a list of
  durations, ``duration[]``, for ``==``/``!=``): ``seconds(a) == seconds(b)``;
- ``x in xs`` / ``not in`` of a duration and a list of them: ``seconds(x) in seconds(xs)``;
- ``a == b`` / ``!=`` of two objects whose type holds durations, each an object literal or a
  path: both taken apart into object literals of the same keys, durations through ``seconds``
  (:func:`_objects`);
- any other ``==``/``!=``/``in``/``not in`` whose operands' types hold durations at some depth
  (lists of objects, maps, ``Job?``, a call's or a conditional's object): both sides through
  ``canonical(x, shape)``, the shape where the type places durations (:func:`_mask`), each
  operand read once (:func:`_canonical_pair`); ``json`` and unions a run cannot tell apart
  (``duration | text``) stay texts;
- ``a - b`` of two durations: ``from_seconds(max([seconds(a) - seconds(b), 0]))`` — never below
  ``0ms`` (a duration is a length);
- two written durations (literals) are computed by the compiler: ``2h - 1500ms`` is
  ``1h59m58s500ms``, ``60s == 1m`` is ``true``;
- ``a + b`` stays: joining the texts is the right duration (``"90s" + "5m"`` is ``"90s5m"``).

Only the rewritten node is new; its operands are the nodes given (the checked ones keep their
ids, so their recorded types are still found). Plans compiled before this carry the comparison
as texts and run as they did.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

from agentflow.compiler.types import (
    DURATION,
    NULL,
    ListType,
    MapType,
    NeverType,
    ObjectType,
    OptionalType,
    Type,
    UnionType,
    widen,
)
from agentflow.core.spans import Span
from agentflow.core.vocabulary import duration_text
from agentflow.grammar import ast

if TYPE_CHECKING:
    from agentflow.compiler.checker import CheckResult

__all__ = ["by_length", "call_by_length", "needs_once"]

#: the operators compared by length when both operands are durations
_COMPARE = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_COMPARISONS = frozenset(_COMPARE)


def _shape(t: Type, result: CheckResult) -> str | None:
    """``"one"`` for a ``duration`` (or ``duration?``), ``"list"`` for a list of them (its
    elements possibly optional), ``"empty"`` for ``[]`` (``never[]``); None for anything else."""
    env = result.env
    r = env.resolve(widen(t))
    if isinstance(r, OptionalType):
        r = env.resolve(r.inner)
    if r == DURATION:
        return "one"
    if isinstance(r, ListType):
        elem = env.resolve(r.elem)
        if isinstance(elem, OptionalType):
            elem = env.resolve(elem.inner)
        if elem == DURATION:
            return "list"
        if isinstance(elem, NeverType):
            return "empty"
    if isinstance(r, ObjectType) and not isinstance(widen(t), OptionalType):
        if _holds_durations(r, result, 0):
            return "object"
    return None


#: how deep objects inside objects are looked into for durations
_MAX_OBJECT_DEPTH = 8


def _holds_durations(o: ObjectType, result: CheckResult, depth: int) -> bool:
    """True when a field of ``o`` (or of an object in a field, not optional, at most
    :data:`_MAX_OBJECT_DEPTH` deep) is a duration or a list of durations."""
    if depth > _MAX_OBJECT_DEPTH:
        return False
    for f in o.fields.values():
        r = result.env.resolve(widen(f.type))
        if isinstance(r, OptionalType):
            r = result.env.resolve(r.inner)
        if r == DURATION:
            return True
        if isinstance(r, ListType) and _elem_is_duration(r, result):
            return True
        if isinstance(r, ObjectType) and not f.optional and _holds_durations(r, result, depth + 1):
            return True
    return False


def _elem_is_duration(r: ListType, result: CheckResult) -> bool:
    elem = result.env.resolve(r.elem)
    if isinstance(elem, OptionalType):
        elem = result.env.resolve(elem.inner)
    return elem == DURATION


def _is_path(e: ast.Expr) -> bool:
    """A read that is pure and cheap to repeat: a name, its fields, literal indexes."""
    while True:
        if isinstance(e, ast.Name):
            return True
        if isinstance(e, ast.Member):
            e = e.obj
        elif isinstance(e, ast.Index) and isinstance(e.index, ast.NumberLit | ast.StringLit):
            e = e.obj
        else:
            return False


class _Unfit(Exception):
    """An operand the object comparison cannot take apart (a call, a conditional …)."""


def _objects(
    node: ast.Binary, result: CheckResult, operand: Callable[[ast.Expr], ast.Expr]
) -> ast.Expr | None:
    """``a == b`` (or ``!=``) of two objects whose type holds durations: both sides taken
    apart into object literals of the same keys, each duration (or list of them) through
    ``seconds`` — ``{ w: seconds(a.w), n: a.n } == { w: seconds(b.w), n: b.n }``. An operand is
    taken apart when it is an object literal or a path (``input.job``, ``s``, ``x.cfg[0]``):
    reading a path once per field is the same value; anything else (a call, a conditional) is
    None here, and :func:`_canonical_pair` compares it. A field one side's type lacks, or an
    optional field left out, is ``null`` on that side (an absent optional field reads
    ``null``)."""
    span = node.span

    def field_type(t: Type, key: str) -> tuple[Type | None, bool]:
        r = result.env.resolve(widen(t))
        if isinstance(r, ObjectType) and key in r.fields:
            f = r.fields[key]
            return f.type, f.optional
        return None, True

    def shape_of(types: list[Type | None]) -> str | None:
        found = {_shape(t, result) for t in types if t is not None}
        if "object" in found:
            return "object"
        if "one" in found or "list" in found:
            return "value"
        return None

    def take_apart(pairs: list[tuple[ast.Expr, Type]], depth: int) -> list[ast.Expr]:
        """One normalized expression per side of ``pairs`` (expression, its type)."""
        if depth > _MAX_OBJECT_DEPTH:
            raise _Unfit
        keys: dict[str, None] = {}
        for e, t in pairs:
            r = result.env.resolve(widen(t))
            if not isinstance(r, ObjectType):
                raise _Unfit
            if isinstance(e, ast.ObjectLit):
                keys.update((en.key, None) for en in e.entries)
            keys.update((k, None) for k in r.fields)
        sides: list[list[ast.ObjectEntry]] = [[] for _ in pairs]
        for key in keys:
            reads: list[tuple[ast.Expr, Type | None, bool]] = []
            for e, t in pairs:
                ft, optional = field_type(t, key)
                if isinstance(e, ast.ObjectLit):
                    entry = next((en.value for en in e.entries if en.key == key), None)
                    if entry is None:
                        reads.append((ast.NullLit(span), None, False))
                    else:
                        reads.append((entry, result.type_of(entry), True))
                elif ft is None:
                    reads.append((ast.NullLit(span), None, False))
                else:
                    read: ast.Expr = ast.Member(span, e, key, span)
                    if optional:
                        read = ast.Binary(span, "??", read, ast.NullLit(span), span)
                    reads.append((read, ft, False))
            kind = shape_of([t for _, t, _ in reads])
            if kind is None and any(t is not None and _mask(t, result) for _, t, _ in reads):
                raise _Unfit  # durations deeper (a list of objects, a map): `canonical` whole
            if kind == "object":
                inner: list[tuple[ast.Expr, Type]] = []
                for x, xt, original in reads:
                    if xt is None or not (
                        isinstance(x, ast.ObjectLit | ast.Member) or (original and _is_path(x))
                    ):
                        raise _Unfit  # a missing side, or a value that is not a path
                    keep = isinstance(x, ast.ObjectLit) or not original
                    inner.append((x if keep else operand(x), xt))
                values = take_apart(inner, depth + 1)
            else:
                values = []
                for x, _, original in reads:
                    v = operand(x) if original else x
                    values.append(_call("seconds", span, v) if kind == "value" else v)
            for side, v in zip(sides, values, strict=True):
                side.append(ast.ObjectEntry(span, key, span, v))
        return [ast.ObjectLit(span, entries) for entries in sides]

    pairs = []
    for e in (node.left, node.right):
        if not (isinstance(e, ast.ObjectLit) or _is_path(e)):
            return None
        pairs.append((e if isinstance(e, ast.ObjectLit) else operand(e), result.type_of(e)))
    try:
        left, right = take_apart(pairs, 0)
    except _Unfit:
        return None
    return ast.Binary(span, node.op, left, right, node.op_span)


#: where a type holds durations, as ``canonical``'s ``shape`` takes it: ``"duration"``,
#: ``{"items": S}``, ``{"fields": {name: S}}``, ``{"values": S}``; None for no durations
Shape = str | dict[str, "Shape"] | None
_DURATION_SHAPE = "duration"


def _mask(t: Type, result: CheckResult, depth: int = 0) -> Shape:
    """Where a value of type ``t`` holds durations (:data:`Shape`), or None for nowhere — and
    for what cannot be told at run time: a union of several kinds (``duration | text``), ``json``,
    parts deeper than :data:`_MAX_OBJECT_DEPTH` (a recursive type)."""
    if depth > _MAX_OBJECT_DEPTH:
        return None
    env = result.env
    r = env.resolve(widen(t))
    if isinstance(r, UnionType):
        rest = [m for m in r.members if env.resolve(m) != NULL]
        if len(rest) != 1:
            return None
        r = env.resolve(rest[0])
    if isinstance(r, OptionalType):
        r = env.resolve(r.inner)
    if r == DURATION:
        return _DURATION_SHAPE
    if isinstance(r, ListType):
        inner = _mask(r.elem, result, depth + 1)
        return None if inner is None else {"items": inner}
    if isinstance(r, MapType):
        inner = _mask(r.value, result, depth + 1)
        return None if inner is None else {"values": inner}
    if isinstance(r, ObjectType):
        fields: dict[str, Shape] = {}
        for name, f in r.fields.items():
            m = _mask(f.type, result, depth + 1)
            if m is not None:
                fields[name] = m
        return {"fields": fields} if fields else None
    return None


def _merge(a: Shape, b: Shape) -> Shape:
    """One shape for two sides compared (an object literal's type beside a declared one may
    lack an optional field); raises :class:`_Unfit` when they disagree."""
    if a == b or b is None:
        return a
    if a is None:
        return b
    if not (isinstance(a, dict) and isinstance(b, dict)):
        raise _Unfit
    if {*a, *b} == {"values", "fields"}:  # a map beside an object literal: its fields are values
        fields, values = (a, b) if "fields" in a else (b, a)
        assert isinstance(fields["fields"], dict)
        v = values["values"]
        for f in fields["fields"].values():
            v = _merge(v, f)
        return {"values": v}
    if a.keys() != b.keys():
        raise _Unfit
    (key, x), y = next(iter(a.items())), b[next(iter(b))]
    if key != "fields":
        return {key: _merge(x, y)}
    assert isinstance(x, dict) and isinstance(y, dict)
    return {key: {k: _merge(x.get(k), y.get(k)) for k in {**x, **y}}}


def _empty(t: Type, result: CheckResult) -> bool:
    """``[]`` (``never[]``): nothing in it to normalize."""
    r = result.env.resolve(t)
    return isinstance(r, ListType) and isinstance(result.env.resolve(r.elem), NeverType)


def _shape_expr(m: Shape, span: Span) -> ast.Expr:
    """The ``shape`` argument of ``canonical``, as an expression."""
    if isinstance(m, str):
        return ast.StringLit(span, [m])
    assert m is not None
    return ast.ObjectLit(
        span, [ast.ObjectEntry(span, k, span, _shape_expr(v, span)) for k, v in m.items()]
    )


def _canonical(e: ast.Expr, m: Shape, span: Span) -> ast.Expr:
    """``canonical(e, m)`` (``e`` already through the caller's ``operand``)."""
    if m == _DURATION_SHAPE:
        return _call("canonical", span, e)
    return _call("canonical", span, e, _shape_expr(m, span))


def _shapes(*types: Type, result: CheckResult, lists: tuple[bool, ...]) -> Shape:
    """The one shape of the elements of the values of ``types`` compared (``lists[i]``: the
    ``i``-th is a list, its elements compared), or None when they hold no durations or disagree;
    a ``[]`` takes any."""
    found: Shape = None
    for t, is_list in zip(types, lists, strict=True):
        if is_list and _empty(t, result):
            continue
        m = _mask(t, result)
        if is_list:
            m = m.get("items") if isinstance(m, dict) else None
        if m is None:
            return None  # no durations there, or none that can be told: texts compared
        try:
            found = _merge(found, m)
        except _Unfit:
            return None
    return found


def _canonical_pair(
    node: ast.Binary, result: CheckResult, operand: Callable[[ast.Expr], ast.Expr]
) -> ast.Expr | None:
    """``a == b`` / ``!=`` / ``in`` / ``not in`` where durations sit inside lists, objects or
    maps (at any depth the static type tells): ``canonical(a, S) == canonical(b, S)`` — each
    operand read once, every duration written one way, so the comparison is by length; None
    when the types hold no durations, disagree, or a side is ``null``."""
    op, span = node.op, node.span
    if op not in ("==", "!=", "in", "not in"):
        return None
    if isinstance(node.left, ast.NullLit) or isinstance(node.right, ast.NullLit):
        return None
    membership = op in ("in", "not in")
    lt, rt = result.type_of(node.left), result.type_of(node.right)
    m = _shapes(lt, rt, result=result, lists=(False, membership))
    if m is None:
        return None
    if not membership:
        left, right = (
            _canonical(operand(node.left), m, span),
            _canonical(operand(node.right), m, span),
        )
    else:
        left = _canonical(operand(node.left), m, span)
        right = _canonical(operand(node.right), {"items": m}, span)
    return ast.Binary(span, op, left, right, node.op_span)


def _call(name: str, span: Span, *args: ast.Expr) -> ast.FuncCall:
    return ast.FuncCall(span, name, span, list(args))


def _identity(e: ast.Expr) -> ast.Expr:
    return e


def by_length(
    node: ast.Binary,
    result: CheckResult,
    operand: Callable[[ast.Expr], ast.Expr] = _identity,
) -> ast.Expr | None:
    """The expression that computes the checked ``node`` by the durations' lengths, or None
    when ``node`` is not an operation on durations that needs it (see the module docstring).
    Types are read from ``result`` on ``node``'s own operands; each operand kept goes through
    ``operand`` (the lowering lowers the checked operands itself; ``absent_reads_null`` passes
    its own rewrite). A chain ``a - b - c`` is one subtraction, ``from_seconds(max([seconds(a)
    - seconds(b) - seconds(c), 0]))`` — the same value, as every term is ≥ 0 — so a long chain
    nests no deeper than the plain one."""
    op = node.op
    if op not in _COMPARISONS and op not in ("-", "in", "not in"):
        return None
    ls, rs = _shape(result.type_of(node.left), result), _shape(result.type_of(node.right), result)
    if ls is None or rs is None or ("object" in (ls, rs) and ls != rs):
        return _canonical_pair(node, result, operand)
    span = node.span
    if op == "-":
        if ls != "one" or rs != "one":
            return None
        terms = [node.right]
        first: ast.Expr = node.left
        while (
            isinstance(first, ast.Binary)
            and first.op == "-"
            and _shape(result.type_of(first.left), result) == "one"
            and _shape(result.type_of(first.right), result) == "one"
        ):
            terms.append(first.right)
            first = first.left
        terms.append(first)
        terms.reverse()
        if all(isinstance(t, ast.DurationLit) for t in terms):  # written: computed now
            lits = [t for t in terms if isinstance(t, ast.DurationLit)]
            ms = max(0, lits[0].ms - sum(t.ms for t in lits[1:]))
            return ast.DurationLit(span, ms, duration_text(ms))
        diff: ast.Expr = _call("seconds", span, operand(terms[0]))
        for t in terms[1:]:
            diff = ast.Binary(span, "-", diff, _call("seconds", span, operand(t)), node.op_span)
        zero = ast.NumberLit(span, 0)
        return _call("from_seconds", span, _call("max", span, ast.ListLit(span, [diff, zero])))
    left, right = node.left, node.right
    if op in ("==", "!=") and "object" in (ls, rs):
        return _objects(node, result, operand) or _canonical_pair(node, result, operand)
    if isinstance(left, ast.DurationLit) and isinstance(right, ast.DurationLit):
        if op in _COMPARISONS:  # two written durations: computed now (`60s == 1m`)
            return ast.BoolLit(span, _COMPARE[op](left.ms, right.ms))
    if op in ("in", "not in"):
        if ls != "one" or rs not in ("list", "empty"):
            return _canonical_pair(node, result, operand)
    elif ls == "one" and rs == "one":
        pass
    elif op in ("==", "!=") and {ls, rs} <= {"list", "empty"} and "list" in (ls, rs):
        pass
    else:
        return _canonical_pair(node, result, operand)
    return ast.Binary(
        span,
        op,
        _call("seconds", span, operand(left)),
        _call("seconds", span, operand(right)),
        node.op_span,
    )


def call_by_length(
    node: ast.FuncCall,
    result: CheckResult,
    operand: Callable[[ast.Expr], ast.Expr] = _identity,
    once: ast.Expr | None = None,
) -> ast.Expr | None:
    """The library call ``node`` comparing durations by length, as ``==`` and ``in`` do, or
    None when it needs no rewrite: ``index_of(xs, x)`` → ``index_of(seconds(xs),
    seconds(x))``, ``overlap(a, b)`` → ``overlap(seconds(a), seconds(b))`` of lists of
    durations; ``unique(xs)`` → ``unique(xs, seconds(xs))`` (the first element of each length
    kept, as written) when ``xs`` holds no effect (:func:`_effects`) — read twice, it is the
    same value; ``once`` (the lowering's): an expression standing for the argument already
    computed (an effect's step, read twice, run once). Elements holding durations deeper
    (objects, lists, maps) go through ``canonical`` (:func:`_canonical_pair`'s shapes):
    ``index_of(canonical(xs, {items: S}), canonical(x, S))``, ``unique(xs, canonical(xs,
    {items: S}))``. ``count_by(xs, f?)`` keys by the canonical text (``count_by(canonical(xs,
    {items: S}), f?)``: ``90s`` and ``1m30s`` one key), ``group_by(xs, "f")`` of a duration
    field by its canonical text, only that field rewritten in the members
    (docs/reference/lexical.md "Durations")."""
    args = node.args
    shapes = [_shape(result.type_of(a), result) for a in args]
    span = node.span

    def sec(a: ast.Expr) -> ast.Expr:
        return _call("seconds", span, operand(a))

    def call(*new: ast.Expr) -> ast.FuncCall:
        return ast.FuncCall(span, node.name, node.name_span, list(new))

    types = [result.type_of(a) for a in args]
    if node.name == "index_of" and len(args) == 2:
        if shapes[0] == "list" and shapes[1] == "one":
            return call(sec(args[0]), sec(args[1]))
        m = _shapes(*types, result=result, lists=(True, False))
        if m is not None:
            return call(
                _canonical(operand(args[0]), {"items": m}, span),
                _canonical(operand(args[1]), m, span),
            )
    elif node.name == "overlap" and len(args) == 2:
        if set(shapes) <= {"list", "empty"} and "list" in shapes:
            return call(sec(args[0]), sec(args[1]))
        m = _shapes(*types, result=result, lists=(True, True))
        if m is not None:
            return call(*(_canonical(operand(a), {"items": m}, span) for a in args))
    elif node.name == "unique" and len(args) == 1 and (once is not None or not _effects(args[0])):
        # read twice: the elements kept as written, the keys by length
        if shapes[0] == "list":
            xs = once or operand(args[0])
            return call(xs, _call("seconds", span, xs))
        m = _shapes(types[0], result=result, lists=(True,))
        if m is not None:
            xs = once or operand(args[0])
            return call(xs, _canonical(xs, {"items": m}, span))
    elif node.name == "count_by" and args:
        # a map's keys are texts: the canonical text of each duration, `90s` and `1m30s` one key
        m = _shapes(types[0], result=result, lists=(True,))
        if m is not None:
            return call(_canonical(operand(args[0]), {"items": m}, span), *map(operand, args[1:]))
    elif node.name == "group_by" and len(args) == 2 and isinstance(args[1], ast.StringLit):
        # the key field only: the members keep their other fields as written
        m = _shapes(types[0], result=result, lists=(True,))
        key = args[1].parts[0] if args[1].is_plain and args[1].parts else None
        fields = m.get("fields") if isinstance(m, dict) else None
        if isinstance(key, str) and isinstance(fields, dict) and key in fields:
            only: Shape = {"items": {"fields": {key: fields[key]}}}
            return call(_canonical(operand(args[0]), only, span), operand(args[1]))
    return None


def _effects(e: ast.Expr) -> bool:
    """True when evaluating ``e`` twice would do something twice (a tool call, an agent, an
    ask, a judge): library calls and operators are pure, read twice they are the same value."""
    return any(
        isinstance(n, ast.Call | ast.AgentExpr | ast.AskExpr | ast.VerifyExpr | ast.FilterExpr)
        for n in ast.walk(e)
    )


def needs_once(node: ast.FuncCall, result: CheckResult) -> bool:
    """True for ``unique(xs)`` of durations (or of values holding them) whose ``xs`` holds an
    effect: :func:`call_by_length` leaves it unless given ``once``, the argument computed once."""
    if node.name != "unique" or len(node.args) != 1 or not _effects(node.args[0]):
        return False
    t = result.type_of(node.args[0])
    return _shape(t, result) == "list" or _shapes(t, result=result, lists=(True,)) is not None
