"""The one exact edit of a hint for another language's habit, when there is one: ``&&`` →
``and``, ``||`` → ``or``, ``!x`` → ``not x``, ``===`` → ``==``, ``a?.b`` → ``a.b``, ``elif`` →
``else if``, ``'text'`` → ``"text"`` and a ``;`` ending a line dropped (docs/editors.md "quick
fixes").  Each is made where its hint is (:mod:`.scanner`, :mod:`.habits`,
:mod:`.syntax_errors`) and travels on the diagnostic as its
:class:`~agentflow.core.diagnostics.Replacement`, so the editor's quick fix never re-reads a
message."""

from __future__ import annotations

from agentflow.core.diagnostics import FixedHint, Replacement
from agentflow.core.spans import Span

__all__ = ["FixedHint", "elif_fix", "fix_of", "foreign_fix", "or_fix", "widened"]


def fix_of(hint: str | None) -> Replacement | None:
    """The edit ``hint`` states, when it is a :class:`FixedHint`."""
    return hint.fix if isinstance(hint, FixedHint) else None


def widened(span: Span, by: int) -> Span:
    """``span`` (on one line) with ``by`` more characters at its end."""
    return Span(
        span.file,
        span.line,
        span.column,
        span.end_line,
        span.end_column + by,
        span.start,
        span.end + by,
    )


def spaced(text: str, i: int, j: int, word: str) -> str:
    """``word`` replacing ``text[i:j]`` (an operator), with a blank added on a side where the
    operator touched a neighbour (``a&&b`` → ``a and b``)."""
    before = "" if i == 0 or text[i - 1] in " \t(\n" else " "
    after = "" if j >= len(text) or text[j] in " \t)\n" else " "
    return before + word + after


def foreign_fix(text: str, i: int, j: int, span: Span) -> Replacement | None:
    """The fix of the character no token of `.flow` starts with at ``text[i:j]`` (``span``):
    ``&&`` → ``and``; ``!`` → ``not``; a ``;`` with nothing after it on its line but blanks or a
    comment, dropped; ``'text'`` closed on its line → ``"text"`` (nothing to escape, no
    ``${``). Anything else: None."""
    written = text[i:j]
    if written == "&&":
        return Replacement(span, spaced(text, i, j, "and"), "Replace `&&` with `and`")
    if written == "!":
        after = text[j : j + 1]
        word = "not" if after in (" ", "\t") else "not "
        return Replacement(span, word, "Replace `!` with `not`")
    if written == ";":
        end = text.find("\n", j)
        rest = text[j : len(text) if end < 0 else end].strip()
        if not rest or rest.startswith("//"):
            k = i
            while k > 0 and text[k - 1] in " \t":
                k -= 1  # the blanks before it go too
            whole = Span(
                span.file,
                span.line,
                span.column - (i - k),
                span.end_line,
                span.end_column,
                span.start - (i - k),
                span.end,
            )
            return Replacement(whole, "", "Remove the `;`")
        return None
    if written == "'":
        close = text.find("'", j)
        end = text.find("\n", j)
        if close < 0 or (0 <= end < close):
            return None
        inner = text[j:close]
        if any(c in inner for c in '"\\') or "${" in inner:
            return None
        return Replacement(
            widened(span, close + 1 - j), f'"{inner}"', "Write the string in double quotes"
        )
    return None


def or_fix(text: str, k: int, span: Span) -> Replacement | None:
    """``||`` at ``text[k:]`` (``span``: its first ``|``) → ``or``; None for a lone ``|``."""
    if not text.startswith("||", k):
        return None
    return Replacement(widened(span, 1), spaced(text, k, k + 2, "or"), "Replace `||` with `or`")


def elif_fix(text: str, ob: int, word: str, span: Span) -> Replacement | None:
    """``} elif c {`` (``word`` at ``span``; ``ob``: the offset of ``text`` in the file) →
    ``} else if c {``; None when no ``}`` comes before it on its line."""
    k = span.start - ob
    if not text[text.rfind("\n", 0, k) + 1 : k].rstrip().endswith("}"):
        return None
    return Replacement(span, "else if", f"Replace `{word}` with `else if`")
