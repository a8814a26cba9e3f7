"""The scanner's errors: :class:`SynErr` and the words of its messages and hints.

:class:`SynErr` carries a lexical or syntax error's message, span, hint and notes, and where
recovery may start scanning (``resume``, ``depth``) or, for an unclosed bracket, the brackets
left open (``unclosed``); it never leaves :mod:`agentflow.grammar`. The helpers word what a
mistake is in the writer's terms: what a bracket opens (:func:`_opener_words`: "the stage
body"), another language's operator or quote (``&&``, ``'…'``), a malformed number
(``1e3``), an interpolation left unclosed (:func:`_unclosed_hole`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agentflow.core.diagnostics import Replacement
from agentflow.core.spans import Span
from agentflow.grammar.tokens import Tok

if TYPE_CHECKING:
    from agentflow.grammar.scanner import Scanner

__all__ = ["SynErr"]


_OPENER_CONTEXT = [
    (re.compile(r"^\s*stage\b[^{]*$"), "the stage body"),
    (re.compile(r"^\s*type\s+\w+\s*(=\s*)?$"), "the type body"),
    (re.compile(r"\bagent\s*\(.*\)\s*$"), "the agent block"),
    (re.compile(r"\bverify\s*$"), "the `verify` block"),
    (re.compile(r"\bretry\s*$"), "the `retry` object"),
    (re.compile(r"^\s*input\s*$"), "the `input` object"),
    (re.compile(r"\b(map|reduce|loop)\b.*\bas\b(?:[^{]*|.*\}\s*)$"), "the `{0}` body"),
    (re.compile(r"\belse\s*$"), "the `else` block"),
    (re.compile(r"\bcatch\b[^{]*$"), "the `catch` block"),
    (re.compile(r"\btry\s*$"), "the `try` block"),
    (re.compile(r"(^|\})\s*(if|else)\b[^{]*$"), "the `if` block"),
    (re.compile(r"\b(use|extern)\b"), "the declaration"),
]


def _opener_words(text: str, i: int, bracket: str) -> str:
    """What the bracket at ``text[i]`` opens, in words: ``"the stage body"``, ``"the agent
    block"``, …, else ``"the `(`"``.  Looks only at the text before it on the same line."""
    if bracket == "{":
        before = text[text.rfind("\n", 0, i) + 1 : i]
        for pattern, words in _OPENER_CONTEXT:
            m = pattern.search(before)
            if m is not None:
                return words.format(m.group(1)) if "{0}" in words else words
        if before.rstrip().endswith(("=", "(", ",", ":", "[", "return")):
            return "the object"
    return f"the `{bracket}`"


#: the operators of other languages that are no token of `.flow`, and what `.flow` writes
#: (docs/reference/expressions.md "Coming from another language")
_FOREIGN_CHARACTERS = {
    "&": "`.flow` writes `a and b` for `a && b`",
    "!": "`.flow` writes `not a` for `!a` (`!=` is the one operator with `!`)",
    "~": "`.flow` writes `not a` for a negation; a regular expression is `matches(s, re)`",
    ";": "`.flow` ends a statement at the end of its line: drop the `;`",
}


#: the text of a `{ … }` up to a `;` that is a field (`a: int`) or an entry (`a: 1`) started
#: after `{`, `,` or a line break: the `;` separates fields there
_ENTRY_BEFORE = re.compile(r"(?:^|[{,\n])[ \t]*[A-Za-z_][A-Za-z0-9_]*\??[ \t]*:[^;{}\n=]*$")
FIELD_SEPARATOR_HINT = (
    "a type's fields (and an object's entries) are separated by `,` or a line break, not `;`: "
    "`type T { a: int, b: text }`"
)


def semicolon_between_fields(text: str, opened: int, i: int) -> bool:
    """Whether the ``;`` at ``text[i]`` follows a field or an entry of the ``{`` at
    ``text[opened]`` (the innermost open bracket): ``type T { a: int; b: text }``."""
    return text[opened] == "{" and _ENTRY_BEFORE.search(text, opened, i) is not None


def _single_quoted(text: str, i: int, n: int) -> str | None:
    """The hint for a ``'`` at ``i``: a string (an import path too) is written in double
    quotes — with the text it quotes when a ``'`` closes it on the same line."""
    if text[i] == "`":
        return 'a string is written in double quotes, and any string interpolates: `"hi ${name}"`'
    if text[i] != "'":
        return None
    end = text.find("'", i + 1, n)
    line_end = text.find("\n", i, n)
    if end != -1 and (line_end == -1 or end < line_end) and '"' not in text[i + 1 : end]:
        return f'a string is written in double quotes: `"{text[i + 1 : end]}"`'
    return 'a string is written in double quotes: `"…"`'


def _badnum_hint(written: str) -> str:
    """The fix of a word that starts like a number: ``1e3`` (no exponents), ``5min``, ``12px``."""
    if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?[eE][0-9]+", written):
        return "a number has no exponent in `.flow`: write its digits (`1e3` is `1000`)"
    return (
        "a number is digits with an optional fraction (`12`, `0.5`); a duration is a number "
        "with its unit `ms`, `s`, `m` or `h` right after it"
    )


class SynErr(Exception):
    """Internal syntax error: message, primary span, and where recovery may start scanning
    (``resume``: text index, ``depth``: bracket depth there), when known.  ``unclosed`` is
    set on an unclosed bracket found at a new declaration or at the end of a module:
    ``(open brackets, text index of the keyword or of the end)``, for
    :func:`agentflow.grammar.unclosed.locate_unclosed` to find where it should close."""

    def __init__(
        self,
        message: str,
        span: Span,
        resume: int | None = None,
        depth: int | None = None,
        hint: str | None = None,
        notes: list[tuple[str, Span]] | None = None,
        unclosed: tuple[list[Tok], int] | None = None,
        fix: Replacement | None = None,
        code: str = "syntax-error",
    ):
        super().__init__(message)
        self.code = code  # ``reserved-name`` when the mistake is a name (``let filter``)
        self.fix = fix  # the one exact edit ``hint`` states, when it is one
        self.message = message
        self.span = span
        self.resume = resume
        self.depth = depth
        self.hint = hint
        self.notes = notes or []
        self.unclosed = unclosed


def _unclosed_hole(e: SynErr, opener: Span, sub: Scanner) -> SynErr:
    """The error of an interpolation whose parse failed with ``e``. When the parser wanted its
    closing `}` and gave up on a later line (a triple-quoted string runs on: ``${name``, text),
    the interpolation is unclosed: reported at the `${` (what a reader must fix), with the place
    the parser stopped as a note. Otherwise ``e`` gains a note at the `${`."""
    wants_close = "`}`" in e.message and not sub.stack
    if e.message.startswith("unterminated string") and not sub.stack:
        # `"a ${x"`: the quote meant to end the string starts one inside the interpolation
        return SynErr(
            "unclosed `${`: the interpolation opened here has no `}`",
            opener,
            resume=e.resume,
            depth=e.depth,
            hint="close it with `}` (`${name}`), or write `\\${` for a literal `${`",
            notes=[("this quote starts a string inside the interpolation", e.span)],
        )
    if wants_close and e.span.line > opener.line:
        return SynErr(
            f"unclosed `${{`: the interpolation opened here is not closed on line {opener.line}",
            opener,
            resume=e.resume,
            depth=e.depth,
            hint="close it with `}` (`${name}`), or write `\\${` for a literal `${`",
            notes=[(f"the parser stopped here: {e.message}", e.span), *e.notes],
        )
    if wants_close:
        e.notes.append(("the interpolation opened here", opener))
    return e
