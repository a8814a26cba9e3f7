"""``comment-looks-like-division`` (docs/diagnostics.md): Python's integer division ``a // b``
written in `.flow`, where ``//`` starts a comment, so ``let h = input.n // 2`` checks clean
and is ``input.n``. A line comment on the line of an expression's operand whose text is itself
exactly a divisor (a number, an arithmetic expression, a call — ``// 2``, ``// (n - 1)``; not
``// 3 attempts``, ``// the count``, nor a bare name such as ``// TODO``) is this warning.

The source text is what is read (comments are not in the AST), so both parsers agree by
construction; :func:`division_comments` is called next to the parse, by
:func:`agentflow.compiler.api.check_source` and the language server's incremental check.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agentflow.core.diagnostics import COMMENT_LOOKS_LIKE_DIVISION, Diagnostic
from agentflow.core.spans import Span
from agentflow.errors import SourceError
from agentflow.grammar import ast
from agentflow.grammar.division import plain_division
from agentflow.grammar.parser import parse_expression
from agentflow.grammar.scanner import SynErr, Tok, lex

__all__ = ["division_comments"]

#: a `//` (not `///`) after what may end an operand, on one line: the cheap first look
_CANDIDATE = re.compile(r"[\w)\]\"][ \t]*//(?!/)[ \t]*([^\n]+)")
#: a run of slashes (a literal first: the search skips to each `/`); `_CANDIDATE` can match
#: only at a run of exactly two
_SLASHES = re.compile(r"//+")
#: the tokens that end an operand
_OPERAND_END = frozenset({"NAME", "NUMBER", "DURATION", "STRING", "RPAR", "RSQB"})
#: the operand before a `//`, as written: a name, number or path, or one in parentheses
_TRAILING_OPERAND = re.compile(r"([\w.]+|\([^()\n]*\))[ \t]*$")
#: Binary operators of a divisor written after `//`
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%"})


def division_comments(text: str, file: str) -> list[Diagnostic]:
    """A ``comment-looks-like-division`` warning at each ``//`` comment that follows an operand
    on its line and whose text parses as a divisor; ``[]`` for a text with none (the common
    case is one regular-expression search) or one the raw lexer cannot read."""
    if not any(_divisor(m.group(1)) is not None for m in _candidates(text)):
        return []
    found: list[Diagnostic] = []
    prev: Tok | None = None
    try:
        for tok in lex(text, file=file):
            if tok.type == "COMMENT":
                divisor = _divisor(str(tok.value)[2:])
                if (
                    divisor is not None
                    and prev is not None
                    and prev.type in _OPERAND_END
                    and prev.end_line == tok.line
                ):
                    found.append(_warning(text, file, tok, divisor))
                continue
            if tok.type not in ("NL", "DOC", "BLOCK"):
                prev = tok
    except SynErr:
        return found
    return found


def _candidates(text: str) -> Iterator[re.Match[str]]:
    """``_CANDIDATE.finditer(text)``, searched only on the lines that hold a ``//`` that is not
    part of ``///`` (a match never crosses a line end, so each line is searched on its own):
    the pattern tries every word character of the text, and most lines have no ``//``."""
    searched = -1
    for m in _SLASHES.finditer(text):
        if m.end() - m.start() != 2 or m.start() < searched:
            continue  # `///`, or a second `//` on a line already searched
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        searched = len(text) if end < 0 else end
        yield from _CANDIDATE.finditer(text, start, searched)


def _divisor(body: str) -> str | None:
    """The divisor a comment's text (after ``//``) is exactly, as written; None when it is not
    one (words, a name, a string, a duration)."""
    body = body.strip()
    if not body or body.startswith("/"):
        return None
    try:
        e = parse_expression(body)
    except SourceError:
        return None
    if isinstance(e, ast.Binary):
        fits = e.op in _ARITHMETIC
    elif isinstance(e, ast.Unary):
        fits = e.op == "-" and isinstance(e.operand, ast.NumberLit)
    else:
        fits = isinstance(e, ast.NumberLit | ast.FuncCall | ast.UserCall | ast.Call)
    if not fits:
        return None
    # a parenthesized divisor's span is its inside: keep the closing parenthesis written
    end = e.span.end
    while end < len(body) and body[end] == ")":
        end += 1
    return body[:end].rstrip()


def _warning(text: str, file: str, tok: Tok, divisor: str) -> Diagnostic:
    """The warning at the ``//`` of the comment ``tok``, which follows an operand."""
    line_start = text.rfind("\n", 0, tok.start) + 1
    operand = _TRAILING_OPERAND.search(text, line_start, tok.start)
    shown = plain_division(operand.group(1), divisor) if operand is not None else None
    example = f" (`{shown}`)" if shown is not None else ""
    span = Span(file, tok.line, tok.column, tok.line, tok.column + 2, tok.start, tok.start + 2)
    return Diagnostic(
        COMMENT_LOOKS_LIKE_DIVISION,
        f"`// {divisor}` is a comment, not a division: `//` starts a comment in `.flow`",
        span,
        hint=(
            f"integer division is `floor(a / b)`{example}; if it is a comment, put it on a line "
            "of its own or start it with words"
        ),
    )
