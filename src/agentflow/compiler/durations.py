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
    OptionalType,
    Type,
    widen,
)
from agentflow.core.spans import Span
from agentflow.core.vocabulary import duration_text
from agentflow.grammar import ast

if TYPE_CHECKING:
    from agentflow.compiler.checker import CheckResult

__all__ = ["by_length"]

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
    return None


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
