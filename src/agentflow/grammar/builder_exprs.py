"""The AST builder's expressions (:mod:`agentflow.grammar.builder`): operators arranged by
precedence climbing (:func:`_climb`, docs/spec/LANGUAGE.md §4), prefix ``-`` and ``not``,
members, indexes, projections, calls and their arguments, literals, lists, objects and
parentheses (:class:`ExprBuilder`, a base of :class:`~agentflow.grammar.builder.Builder`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentflow.core.functions import FUNCTIONS
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    MAX_OPERATORS,
    MAX_PREFIX,
    NOT_PRECEDENCE,
    PRECEDENCE,
)
from agentflow.core.vocabulary import duration_ms as _duration_ms
from agentflow.grammar import ast
from agentflow.grammar.builder_shared import (
    COMPUTED_KEY_HINT,
    _Acc,
    _Args,
    _comma_list,
    _cover,
    _Kids,
    _number,
    _Op,
    _sep_next,
    _string_value,
)
from agentflow.grammar.scanner import SynErr, Tok

__all__ = ["ExprBuilder"]


class _Not:
    """A prefix ``not`` waiting for precedence climbing."""

    __slots__ = ("tok", "operand")

    def __init__(self, tok: Tok, operand: ast.Expr | _Not) -> None:
        self.tok = tok
        self.operand = operand


_PREC = PRECEDENCE
_NOT_PREC = NOT_PRECEDENCE


def _operand_span(x: Any) -> Span:
    if isinstance(x, _Not):
        return x.tok.span.to(_operand_span(x.operand))
    out: Span = x.span
    return out


def _climb(seq: list[Any]) -> ast.Expr:
    """Arrange ``[operand, (op, tok, tok2), operand, …]`` by precedence
    (docs/spec/LANGUAGE.md §4)."""
    if len(seq) > 2 * MAX_OPERATORS:
        raise SynErr(
            f"expression too long (more than {MAX_OPERATORS} operators); split it with `let`",
            _operand_span(seq[0]),
        )
    pos = 0
    n = len(seq)

    def level(p: int) -> ast.Expr:
        nonlocal pos
        x = seq[pos]
        if isinstance(x, _Not):
            if p > _NOT_PREC:
                raise SynErr(
                    "`not` needs parentheses here: write `(not …)`",
                    x.tok.span,
                )
            seq[pos] = x.operand
            inner = level(_NOT_PREC)
            left: ast.Expr = ast.Unary(x.tok.span.to(inner.span), "not", inner)
        else:
            pos += 1
            left = x
        while pos < n:
            op, t1, t2 = seq[pos]
            q = _PREC[op]
            if q < p:
                break
            pos += 1
            right = level(q + 1)
            if q in (5, 6) and pos < n and _PREC[seq[pos][0]] == q:
                what = "comparisons" if q == 5 else "ranges"
                nxt = seq[pos]
                raise SynErr(
                    f"{what} do not chain: combine them with `and` or add parentheses",
                    nxt[1].span.to(nxt[2].span),
                )
            op_span = t1.span.to(t2.span) if t2 is not t1 else t1.span
            if op == "..":
                left = ast.RangeExpr(left.span.to(right.span), left, right)
            else:
                left = ast.Binary(left.span.to(right.span), op, left, right, op_span)
        return left

    return level(0)


def _push_projection(
    p: ast.Projection, build: Callable[[ast.Expr], ast.Expr], end_span: Span
) -> ast.Projection:
    """Extend an open projection's per-element path with ``build(inner)``."""
    inner = p.path
    if isinstance(inner, ast.Projection) and not inner.closed:
        p.path = _push_projection(inner, build, end_span)
    else:
        if inner is None:
            inner = ast.ProjectionItem(p.span)
        p.path = build(inner)
    p.span = p.span.to(end_span)
    return p


class ExprBuilder:
    """The callbacks of expressions' rules, from operator sequences down to literals."""

    # -- operators ------------------------------------------------------------------------------

    def opexpr_single(self, c: _Kids) -> ast.Expr:
        x = c[0]
        if type(x) is _Not:
            return _climb([x])
        out: ast.Expr = x
        return out

    def climb(self, c: _Kids) -> ast.Expr:
        return _climb(c[0])

    def opseq_first(self, c: _Kids) -> _Kids:
        return c

    def opseq_next(self, c: _Kids) -> _Kids:
        seq = c[0]
        seq.append(c[1])
        seq.append(c[2])
        out: _Kids = seq
        return out

    def operand_not(self, c: _Kids) -> _Not:
        inner = c[1]
        depth = 1
        x = inner
        while isinstance(x, _Not):
            depth += 1
            x = x.operand
        if depth > MAX_PREFIX:
            raise SynErr("too many `not` in a row", c[0].span)
        return _Not(c[0], inner)

    def binop(self, c: _Kids) -> _Op:
        t = c[0]
        if len(c) == 2:
            return ("not in", t, c[1])
        return (t.value, t, t)

    def neg(self, c: _Kids) -> ast.Unary:
        operand = c[1]
        if isinstance(operand, ast.Unary) and operand.op == "-":
            depth = 1
            x: ast.Expr = operand
            while isinstance(x, ast.Unary) and x.op == "-":
                depth += 1
                x = x.operand
            if depth > MAX_PREFIX:
                raise SynErr("too many `-` in a row", c[0].span)
        return ast.Unary(_cover(c[0], operand), "-", operand)

    # -- postfix --------------------------------------------------------------------------------

    def member(self, c: _Kids) -> ast.Expr:
        obj, name = c[0], c[2]
        nspan = name.span
        if isinstance(obj, ast.Projection) and not obj.closed:
            return _push_projection(
                obj, lambda inner: ast.Member(inner.span.to(nspan), inner, name.value, nspan), nspan
            )
        return ast.Member(obj.span.to(nspan), obj, name.value, nspan)

    def index(self, c: _Kids) -> ast.Expr:
        obj, idx, close = c[0], c[2], c[3].span
        if isinstance(obj, ast.Projection) and not obj.closed:
            return _push_projection(
                obj, lambda inner: ast.Index(inner.span.to(close), inner, idx), close
            )
        return ast.Index(obj.span.to(close), obj, idx)

    def project(self, c: _Kids) -> ast.Projection:
        obj, close = c[0], c[3].span
        if isinstance(obj, ast.Projection) and not obj.closed:

            def build(inner: ast.Expr) -> ast.Expr:
                return ast.Projection(inner.span.to(close), inner, None)

            return _push_projection(obj, build, close)
        return ast.Projection(obj.span.to(close), obj, None)

    def call(self, c: _Kids) -> ast.Expr:
        callee = c[0]
        close = c[-1].span
        named: list[ast.Argument] = []
        positional: list[ast.Expr] = []
        if len(c) == 4:
            for a in c[2]:
                (named if isinstance(a, ast.Argument) else positional).append(a)
        if isinstance(callee, ast.Name) and positional and not named and callee.name in FUNCTIONS:
            # `join(xs, ", ")`: a library function (docs/reference/functions.md); named arguments
            # make a tool call, even of a tool with a library function's name
            return ast.FuncCall(callee.span.to(close), callee.name, callee.span, positional)
        if isinstance(callee, ast.Name) and positional and not named:
            # `rank(x)`: a user function's call (or a mistake the checker explains)
            return ast.UserCall(callee.span.to(close), callee.name, callee.span, positional)
        return ast.Call(callee.span.to(close), callee, named, positional)

    def args(self, c: _Kids) -> _Args:
        return _Acc(c) if len(c) == 1 else _comma_list(c, "an argument", "arguments")

    def named_arg(self, c: _Kids) -> ast.Argument:
        return ast.Argument(_cover(c[0], c[2]), c[0].value, c[0].span, c[2])

    # -- atoms ----------------------------------------------------------------------------------

    def name(self, c: _Kids) -> ast.Name:
        t = c[0]
        return ast.Name(t.span, t.value)

    def number(self, c: _Kids) -> ast.NumberLit:
        t = c[0]
        return ast.NumberLit(t.span, _number(t.value), str(t.value))

    def duration(self, c: _Kids) -> ast.DurationLit:
        t = c[0]
        return ast.DurationLit(t.span, _duration_ms(t.value), t.value)

    def string(self, c: _Kids) -> ast.StringLit:
        out: ast.StringLit = c[0].value
        return out

    def true(self, c: _Kids) -> ast.BoolLit:
        return ast.BoolLit(c[0].span, True)

    def false(self, c: _Kids) -> ast.BoolLit:
        return ast.BoolLit(c[0].span, False)

    def null(self, c: _Kids) -> ast.NullLit:
        return ast.NullLit(c[0].span)

    def list(self, c: _Kids) -> ast.ListLit:
        return ast.ListLit(_cover(c[0], c[2]), list(c[1]))

    def object(self, c: _Kids) -> ast.ObjectLit:
        return ast.ObjectLit(_cover(c[0], c[2]), list(c[1]))

    def entries_next(self, c: _Kids) -> _Acc:
        return _sep_next(c, "object entries")

    def branches_next(self, c: _Kids) -> _Acc:
        return _sep_next(c, "branches")

    def branches_comma(self, c: _Kids) -> _Acc:
        return _comma_list(c, "a branch", "branches")

    def entry(self, c: _Kids) -> ast.ObjectEntry:
        k = c[0]
        key = (
            _string_value(k, "an object key", COMPUTED_KEY_HINT) if k.type == "STRING" else k.value
        )
        return ast.ObjectEntry(_cover(k, c[2]), key, k.span, c[2])

    def paren(self, c: _Kids) -> ast.Expr:
        e = c[1]
        if isinstance(e, ast.Projection):
            e.closed = True
        out: ast.Expr = e
        return out
