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
    ListType,
    NeverType,
    ObjectType,
    OptionalType,
    Type,
    widen,
)
from agentflow.core.spans import Span
from agentflow.core.vocabulary import duration_text
from agentflow.grammar import ast

if TYPE_CHECKING:
    from agentflow.compiler.checker import CheckResult

__all__ = ["by_length", "call_by_length"]

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
    reading a path once per field is the same value; anything else (a call, a conditional)
    leaves the comparison as it is (texts). A field one side's type lacks, or an optional field
    left out, is ``null`` on that side (an absent optional field reads ``null``)."""
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
    if ls is None or rs is None:
        return None
    span = node.span
    if "object" in (ls, rs) and ls != rs:
        return None
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
        return _objects(node, result, operand)
    if isinstance(left, ast.DurationLit) and isinstance(right, ast.DurationLit):
        if op in _COMPARISONS:  # two written durations: computed now (`60s == 1m`)
            return ast.BoolLit(span, _COMPARE[op](left.ms, right.ms))
    if op in ("in", "not in"):
        if ls != "one" or rs not in ("list", "empty"):
            return None
    elif ls == "one" and rs == "one":
        pass
    elif op in ("==", "!=") and {ls, rs} <= {"list", "empty"} and "list" in (ls, rs):
        pass
    else:
        return None
    return ast.Binary(
        span,
        op,
        _call("seconds", span, operand(left)),
        _call("seconds", span, operand(right)),
        node.op_span,
    )


def _pure(e: ast.Expr) -> bool:
    """A path or a literal (a list literal of them): evaluating it twice is the same value and
    runs nothing twice."""
    if isinstance(e, ast.ListLit):
        return all(_pure(x) for x in e.items)
    return _is_path(e) or isinstance(
        e, ast.DurationLit | ast.StringLit | ast.NumberLit | ast.NullLit | ast.BoolLit
    )


def call_by_length(
    node: ast.FuncCall,
    result: CheckResult,
    operand: Callable[[ast.Expr], ast.Expr] = _identity,
) -> ast.Expr | None:
    """The library call ``node`` comparing durations by length, as ``==`` and ``in`` do, or
    None when it needs no rewrite: ``index_of(xs, x)`` → ``index_of(seconds(xs),
    seconds(x))``, ``overlap(a, b)`` → ``overlap(seconds(a), seconds(b))`` of lists of
    durations; ``unique(xs)`` → ``unique(xs, seconds(xs))`` (the first element of each length
    kept, as written) when ``xs`` is a path or a literal — read twice, it is the same value;
    anything else (a call) stays by text. ``count_by``/``group_by`` keys are texts (a map's
    keys): not rewritten (docs/reference/lexical.md "Durations")."""
    args = node.args
    shapes = [_shape(result.type_of(a), result) for a in args]
    span = node.span

    def sec(a: ast.Expr) -> ast.Expr:
        return _call("seconds", span, operand(a))

    if node.name == "index_of" and len(args) == 2:
        if shapes[0] == "list" and shapes[1] == "one":
            return ast.FuncCall(span, node.name, node.name_span, [sec(args[0]), sec(args[1])])
    elif node.name == "overlap" and len(args) == 2:
        if set(shapes) <= {"list", "empty"} and "list" in shapes:
            return ast.FuncCall(span, node.name, node.name_span, [sec(args[0]), sec(args[1])])
    elif node.name == "unique" and len(args) == 1:
        if shapes[0] == "list" and _pure(args[0]):
            xs = operand(args[0])
            return ast.FuncCall(span, node.name, node.name_span, [xs, _call("seconds", span, xs)])
    return None
