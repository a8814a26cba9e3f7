"""Python's integer division ``a // b`` written in `.flow`, where ``//`` starts a comment: the
hint both places that meet it give (a ``//`` inside ``${…}``, a syntax error raised by
:mod:`.scanner`; a line comment after an operand that reads as a divisor, the warning
``comment-looks-like-division`` of :mod:`agentflow.compiler.division_comments`).
"""

from __future__ import annotations

import re

__all__ = ["floor_hint", "plain_division"]

#: an operand the hint can show as written: a name, number or path, or one in parentheses
_PLAIN_OPERAND = re.compile(r"[\w.]+|\([^()\n]*\)")


def plain_division(left: str, right: str) -> str | None:
    """``floor(left / right)`` when both operands are written plainly (a name, number, path or
    a parenthesized expression, short), else None."""
    left, right = left.strip(), right.strip()
    if (
        _PLAIN_OPERAND.fullmatch(left)
        and _PLAIN_OPERAND.fullmatch(right)
        and len(left + right) <= 60
    ):
        return f"floor({left} / {right})"
    return None


def floor_hint(left: str, rest: str) -> str:
    """The hint of a ``//`` inside ``${…}``: ``left`` is the hole's text before it, ``rest``
    the comment's text after it (to the end of the line); integer division is
    ``floor(a / b)``, shown with the operands when they are plain (``${7 // 2}`` →
    ``${floor(7 / 2)}``)."""
    close = rest.find("}")
    shown = plain_division(left, rest[:close]) if close >= 0 else None
    example = f" (`${{{shown}}}`)" if shown else ""
    return f"integer division is `floor(a / b)`{example}; a comment goes after the string"
