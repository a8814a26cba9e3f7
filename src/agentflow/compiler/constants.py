"""Constant folding of pure literal arithmetic, for the checker's ``division-by-zero``.

:func:`constant_number` computes the value an expression made only of number literals, prefix
``-`` and ``+ - * / %`` has at run time — with the run-time evaluator's rules
(``runtime/expressions.py``: ``/`` is true division, whole when two ``int`` s divide exactly;
``%`` is Python's; an ``int`` result past 64 bits when its operands are within them, a float
overflow and a division by zero are errors) — or None when it has none: anything else in it (a
name, a call, a text), or a step that fails at run time (that failure, not a zero, is what the
run meets). docs/diagnostics.md "division-by-zero".

:func:`fold_step` and :func:`overflow` are one step of it, for the checker's
``constant-overflow``: an operation on folded operands whose result the evaluator refuses;
:func:`overflow_text` quotes that operation as written.
"""

from __future__ import annotations

import math

from agentflow.core.vocabulary import MAX_INT, MIN_INT
from agentflow.grammar import ast

__all__ = ["constant_number", "fold_step", "overflow", "overflow_text"]

#: The widest whole number the evaluator computes (bits): past it a result is ``arithmetic``.
_JSON_INT_BITS = 1024

_Number = int | float


def _finite(x: _Number, *operands: _Number) -> _Number | None:
    """``x`` as the evaluator's ``_finite`` keeps it, or None where it raises."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if not MIN_INT <= x <= MAX_INT and all(
        isinstance(o, int) and MIN_INT <= o <= MAX_INT for o in operands
    ):
        return None
    return None if x.bit_length() > _JSON_INT_BITS else x


def fold_step(op: str, a: _Number, b: _Number | None = None) -> _Number | None:
    """``a op b`` (``op`` one of ``+ - * / %``), or ``-a`` when ``b`` is None, as the evaluator
    computes it; None where it fails at run time (a division by zero, an overflow)."""
    if b is None:
        return _finite(-a, a)
    return _apply(op, a, b)


def overflow(op: str, a: _Number, b: _Number | None = None) -> str | None:
    """Why ``a op b`` (``-a`` when ``b`` is None) fails at run time when that is an overflow,
    in the evaluator's words ("the result is outside the range of `int` (…)", "the result is
    too large for a JSON number"); None when it does not fail or fails otherwise (a division
    by zero: ``division-by-zero``)."""
    if fold_step(op, a, b) is not None or (b == 0 and op in ("/", "%")):
        return None
    whole = [a] if b is None else [a, b]
    if all(isinstance(o, int) and MIN_INT <= o <= MAX_INT for o in whole) and (
        op != "/" or (b is not None and a % b == 0)
    ):
        return f"the result is outside the range of `int` ({MIN_INT} to {MAX_INT})"
    return "the result is too large for a JSON number"


def _apply(op: str, a: _Number, b: _Number) -> _Number | None:
    if op == "+":
        return _finite(a + b, a, b)
    if op == "-":
        return _finite(a - b, a, b)
    if op == "*":
        return _finite(a * b, a, b)
    if b == 0:
        return None  # its own `division-by-zero` (or a run-time `arithmetic`)
    if op == "%":
        return a % b
    if isinstance(a, int) and isinstance(b, int) and a % b == 0:
        return _finite(a // b, a, b)
    try:
        return _finite(a / b)
    except OverflowError:
        return None


def constant_number(e: ast.Expr) -> int | float | None:
    """The number ``e`` evaluates to when it is pure literal arithmetic (``1 - 1``, ``-(2 * 0)``,
    ``0.5 * 4``), else None. Iterative: a chain of 10,000 operators folds without recursion."""
    values: dict[int, _Number | None] = {}
    stack: list[tuple[ast.Expr, bool]] = [(e, False)]
    while stack:
        node, ready = stack.pop()
        if isinstance(node, ast.NumberLit):
            values[id(node)] = node.value
        elif isinstance(node, ast.Unary) and node.op == "-":
            if not ready:
                stack += [(node, True), (node.operand, False)]
                continue
            v = values[id(node.operand)]
            values[id(node)] = None if v is None else _finite(-v, v)
        elif isinstance(node, ast.Binary) and node.op in ("+", "-", "*", "/", "%"):
            if not ready:
                stack += [(node, True), (node.right, False), (node.left, False)]
                continue
            a, b = values[id(node.left)], values[id(node.right)]
            values[id(node)] = None if a is None or b is None else _apply(node.op, a, b)
        else:
            values[id(node)] = None
    return values[id(e)]


#: The longest operand :func:`overflow_text` quotes whole; a longer one is `…`.
_OPERAND_CHARS = 40
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}


def _written(e: ast.Expr, budget: list[int]) -> str | None:
    """Pure literal arithmetic as the source spells it (``9223372036854775807.0 * 2.0``), with
    the parentheses its precedence needs; None past ``budget[0]`` nodes (a long chain is
    never printed, nor recursed into deeply)."""
    budget[0] -= 1
    if budget[0] < 0:
        return None
    if isinstance(e, ast.NumberLit):
        return e.written or repr(e.value)
    if isinstance(e, ast.Unary):
        inner = _written(e.operand, budget)
        if inner is None:
            return None
        return f"{e.op}({inner})" if isinstance(e.operand, ast.Binary) else f"{e.op}{inner}"
    if isinstance(e, ast.Binary):
        left, right = _written(e.left, budget), _written(e.right, budget)
        if left is None or right is None:
            return None
        return _joined(e, left, right)
    return None


def _joined(e: ast.Binary, left: str, right: str) -> str:
    """``left op right`` with an operand in parentheses where the precedence of ``e.op`` needs
    them (a quoted-away ``…`` needs none)."""
    p = _PREC.get(e.op, 0)
    if isinstance(e.left, ast.Binary) and _PREC.get(e.left.op, 0) < p and left != "…":
        left = f"({left})"
    if isinstance(e.right, ast.Binary) and _PREC.get(e.right.op, 0) <= p and right != "…":
        right = f"({right})"
    return f"{left} {e.op} {right}"


def _short(e: ast.Expr) -> str:
    """``e`` as written when it is one literal (``-1.5``) or at most :data:`_OPERAND_CHARS`
    characters, else ``…``."""
    text = _written(e, [_OPERAND_CHARS // 2])
    if text is None:
        return "…"
    literal = isinstance(e, ast.NumberLit) or (
        isinstance(e, ast.Unary) and isinstance(e.operand, ast.NumberLit)
    )
    return text if literal or len(text) <= _OPERAND_CHARS else "…"


def overflow_text(e: ast.Expr) -> str:
    """The operation ``e`` (``a op b`` or ``-a`` of pure literal arithmetic, as
    ``constant-overflow`` reports it) as written: its literals spelt as in the source
    (``9223372036854775807.0``, not ``9.223372036854776e+18``), and an operand longer than
    :data:`_OPERAND_CHARS` characters (the chain ``a * b * … * y`` before ``* z``), unless it
    is one literal, as ``…``."""
    if isinstance(e, ast.Binary):
        return _joined(e, _short(e.left), _short(e.right))
    if isinstance(e, ast.Unary):
        inner = _short(e.operand)
        wrap = isinstance(e.operand, ast.Binary) and inner != "…"
        return f"{e.op}({inner})" if wrap else f"{e.op}{inner}"
    return _short(e)
