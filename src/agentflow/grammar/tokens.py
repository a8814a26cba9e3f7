"""The tokens of `.flow` (docs/spec/LANGUAGE.md §1, §2): their kinds and the tables the scanner
reads.

:class:`Tok` is a token as the parser sees it (``type``) with its source position; ``OPS`` maps
each operator to its terminal, ``OPENERS`` / ``CLOSERS`` pair the brackets, ``TOP_LEVEL`` are the
keywords that start a top-level item (recovery points) and :func:`starts_declaration` says when
one at the start of a line ends an unclosed item. ``_TOKEN_RE`` is the one token pattern (a
group per kind, ``_KIND`` naming each group); ``MATCH_AFTER`` and the other look-aheads decide
keyword-or-name where the spelling alone does not (``match``, a word before ``:``). ``TRIVIA`` /
``COMMENTS`` are the raw-mode trivia kinds.

The scanner (:mod:`~agentflow.grammar.scanner`, its loop :mod:`~agentflow.grammar.scan_loop`)
re-exports the public names; this module imports nothing of the grammar but ``ast``.
"""

from __future__ import annotations

import re

from agentflow.core.spans import Span
from agentflow.core.vocabulary import AGENT_CLAUSES, NOT_A_MATCH_SUBJECT, TOP_LEVEL_WORDS
from agentflow.grammar import ast

__all__ = [
    "TOP_LEVEL",
    "STRONG",
    "OPS",
    "OPENERS",
    "CLOSERS",
    "MATCH_AFTER",
    "WORD_AFTER",
    "starts_declaration",
    "Tok",
    "TRIVIA",
    "COMMENTS",
    "brace_refs",
]

#: Keywords that start a top-level item (recovery points).
TOP_LEVEL = frozenset(TOP_LEVEL_WORDS)
#: Top-level keywords that can never start a line inside a body when followed by a word,
#: a string or a number on the same line (so they end an unclosed item): not those that are
#: agent clauses too (``input``, ``budget``).
STRONG = TOP_LEVEL - set(AGENT_CLAUSES) - {"test"}

OPS: dict[str, str] = {
    "(": "LPAR",
    ")": "RPAR",
    "[": "LSQB",
    "]": "RSQB",
    "{": "LBRACE",
    "}": "RBRACE",
    ",": "COMMA",
    ":": "COLON",
    ".": "DOT",
    "..": "DOTDOT",
    "->": "ARROW",
    "=>": "FATARROW",
    "|": "PIPE",
    "?": "QMARK",
    "??": "QQ",
    "@": "AT",
    "=": "EQUALS",
    "==": "EQ",
    "!=": "NE",
    "<": "LT",
    "<=": "LE",
    ">": "GT",
    ">=": "GE",
    "+": "PLUS",
    "-": "MINUS",
    "*": "STAR",
    "/": "SLASH",
    "%": "PERCENT",
}
_NL_VARIANT = {"LPAR": "LPAR_NL", "LSQB": "LSQB_NL", "MINUS": "MINUS_NL"}
OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {")": "(", "]": "[", "}": "{"}

_TOKEN_RE = re.compile(
    r"""
    [ \t\r\f\v\ufeff]*
   (?:
    (?P<nl>\n)
  | (?P<doc>///[^\n]*)
  | (?P<comment>//[^\n]*)
  | (?P<block>/\*)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<dur>(?:[0-9]+(?:ms|h|m|s))+(?![A-Za-z0-9_]))
  | (?P<num>[0-9]+(?:\.[0-9]+)?(?![A-Za-z_0-9]))
  | (?P<badnum>[0-9]+(?:\.[0-9]+)?[A-Za-z_0-9]*)
  | (?P<str3>\"\"\")
  | (?P<str>\")
  | (?P<op>\.\.|\?\?|==|=>|!=|<=|>=|->|[-+*/%<>=.,:(){}\[\]|?@])
  | (?P<eof>\Z)
   )
    """,
    re.VERBOSE,
)
#: group number → kind (leading blanks are part of every match; the group is the token)
_GROUP_NAMES = {_idx: _name for _name, _idx in _TOKEN_RE.groupindex.items()}
_KIND: tuple[str, ...] = tuple(_GROUP_NAMES.get(g, "") for g in range(_TOKEN_RE.groups + 1))


_BLANKS = re.compile(r"[ \t\r\f\v\ufeff]*")
_PLAIN_STR = re.compile(r'"([^"\\$\n]*)"')

#: ``{name}`` / ``{name.field…}`` (blanks allowed inside), or the same in ``{{…}}``, as written
_PATH = r"[ \t]*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)[ \t]*"
_BRACE_REF = re.compile(r"\{\{" + _PATH + r"\}\}|\{" + _PATH + r"\}")


def brace_refs(
    text: str, i: int, j: int, file: str, line: int, ls: int, ob: int
) -> list[tuple[str, Span]]:
    """Each ``{name…}`` of the source text ``text[i:j]`` (a run of a string's literal text on
    one line, starting at index ``ls``; ``ob`` is added to offsets), as (``name.field…``, span
    of the braces): :attr:`ast.StringLit.braces`. One right after ``$`` (``\\${x}``, the
    ``$`` escaped) is not one."""
    found: list[tuple[str, Span]] = []
    for m in _BRACE_REF.finditer(text, i, j):
        k, e = m.span()
        if k > 0 and text[k - 1] == "$":
            continue
        span = Span(file, line, k - ls + 1, line, e - ls + 1, k + ob, e + ob)
        found.append((m.group(1) or m.group(2), span))
    return found


_COLON_AFTER = re.compile(r"[ \t]*:(?!:)")
#: ``match`` is the keyword of a ``match`` expression only when its subject follows on the same
#: line (a word, a string, a number, ``(`` or ``[`` after a blank, not an operator word): the
#: library function ``match(s, re)`` and a variable named ``match`` stay names
#: (docs/decisions.md "match").  A prefix ``not`` (not of ``not in``) starts a subject too, and a
#: prefix ``-`` written against its operand when a ``{`` follows on the line (``match -x {``;
#: ``match - 1`` and ``match -1`` without a ``{`` are arithmetic on a variable ``match``).
_OPERAND = r"[A-Za-z_0-9\"(\[]"
MATCH_AFTER = re.compile(
    rf"[ \t]+(?:(?!(?:{'|'.join(NOT_A_MATCH_SUBJECT)})\b){_OPERAND}"
    rf"|not[ \t]+(?!in\b)(?:{_OPERAND}|-)"
    rf"|-{_OPERAND}[^\n{{]*\{{)"
)
WORD_AFTER = re.compile(r"[ \t]+(?:[A-Za-z_0-9\"])")
#: ``test`` is a common variable name (``test in cases``): it ends an unclosed item only when a
#: string follows it (``test "name" {``).
_STRING_AFTER = re.compile(r"[ \t]+\"")


def starts_declaration(value: str, text: str, end: int, n: int) -> bool:
    """True when the keyword ``value`` at the start of a line, ending at ``end`` of ``text``
    (``n`` long), can only start a new top-level declaration (so it ends an unclosed item)."""
    if value == "test":
        return _STRING_AFTER.match(text, end, n) is not None
    return value in STRONG and WORD_AFTER.match(text, end, n) is not None


class Tok:
    """A token as the Lark parser sees it (``type``) plus its source position.

    ``value`` is the matched text, except for STRING tokens in parse mode, whose value is an
    ``ast.StringLit``.  ``doc`` holds the ``///`` comment lines immediately before the token, if
    any (``module`` scanners); ``bol`` is True on the first token of a line.
    """

    __slots__ = (
        "type",
        "value",
        "start",
        "end",
        "line",
        "column",
        "end_line",
        "end_column",
        "file",
        "doc",
        "bol",
    )

    def __init__(
        self,
        type: str,
        value: str | ast.StringLit,
        start: int,
        end: int,
        line: int,
        column: int,
        end_line: int,
        end_column: int,
        file: str,
    ) -> None:
        self.type = type
        self.value = value
        self.start = start
        self.end = end
        self.line = line
        self.column = column
        self.end_line = end_line
        self.end_column = end_column
        self.file = file
        self.doc: str | None = None
        self.bol = False

    @property
    def span(self) -> Span:
        return Span(
            self.file,
            self.line,
            self.column,
            self.end_line,
            self.end_column,
            self.start,
            self.end,
        )

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Tok({self.type}, {self.value!r}, {self.line}:{self.column})"


#: token types of the trivia that raw mode yields with ``trivia=True``
TRIVIA = frozenset({"COMMENT", "DOC", "BLOCK", "NL"})
#: the comment token types among them
COMMENTS = frozenset({"COMMENT", "DOC", "BLOCK"})
