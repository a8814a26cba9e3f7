"""``filter``, ``loop`` and ``ask`` written as an operand without parentheses
(docs/reference/control.md: they take the lowest precedence, so as an operand they need
parentheses).  Where an operator, ``map`` or ``require`` reads an operand, the word is read as a
plain name and the parse fails further on (``expected `as`, found the name `input```) or a
second statement starts on the line; the error is told at the word instead:
"`filter … where …` as an operand needs parentheses: `(filter … where …)`"."""

from __future__ import annotations

import re

from agentflow.core.spans import Span
from agentflow.grammar import ast
from agentflow.grammar.scanner import SynErr

__all__ = ["SHAPES", "operand_word_error", "operand_word_in_line", "operand_word_name"]

#: the lowest-precedence words and how each is written
SHAPES = {
    "filter": "filter … where …",
    "loop": "loop … { … }",
    "ask": "ask … expect …",
}

#: a word of :data:`SHAPES` right after something that reads one operand (a binary operator,
#: `not`, `map`, `require`), followed by what starts its construct (not an operator, `=`, `.`,
#: `,`, `:` or a closer: those make it a plain name, which the checker judges)
_OPERAND_WORD = re.compile(
    r"(?:==|!=|<=|>=|(?<![-=])>|<|\+|(?<![-=<>!])-(?!>)|\*|/|%|\?\?|\band|\bor|\bnot|\bin"
    r"|\bmap|\brequire)\s*\b(filter|loop|ask)\b(?=[ \t]+[^\s=.,:)\]}+*/%<>!?|-])"
)


def operand_word_error(
    word: str,
    span: Span,
    stopped: tuple[str, Span] | None = None,
    resume: int | None = None,
    depth: int | None = None,
) -> SynErr:
    """The error for ``word`` (a key of :data:`SHAPES`) at ``span``, read as an operand;
    ``stopped``: the parser's own message and where it stopped, kept as a note; ``resume`` and
    ``depth``: where the parser's recovery goes on (:class:`SynErr`)."""
    shape = SHAPES[word]
    return SynErr(
        f"`{shape}` as an operand needs parentheses: `({shape})`",
        span,
        hint=(
            f"`{word}` takes the lowest precedence: it starts a value only where a whole "
            f"expression is read (after `=`, `return`, `(`); inside an expression write it in "
            f'parentheses, e.g. `1 + ({shape})`, `require ({shape}) else fail "…"`'
        ),
        notes=[(f"the parser stopped here: {stopped[0]}", stopped[1])] if stopped else None,
        resume=resume,
        depth=depth,
    )


def operand_word_in_line(line: str) -> tuple[str, int] | None:
    """``(word, offset in line)`` of the first ``filter``/``loop``/``ask`` written as an
    operand in ``line`` (outside strings), or None."""
    for m in _OPERAND_WORD.finditer(line):
        if line.count('"', 0, m.start(1)) % 2 == 0:  # not inside a string
            return m.group(1), m.start(1)
    return None


def operand_word_name(e: ast.Expr | None) -> ast.Name | None:
    """The name ``filter``/``loop``/``ask`` that ends expression ``e`` as the right operand of a
    binary or unary operator (``1 + ask``: the rest of the line became another statement), or
    None."""
    operand = False
    while isinstance(e, ast.Binary | ast.Unary):
        e = e.right if isinstance(e, ast.Binary) else e.operand
        operand = True
    if operand and isinstance(e, ast.Name) and e.name in SHAPES:
        return e
    return None
