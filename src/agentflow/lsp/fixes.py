"""Quick fixes: the mechanical edits a diagnostic's hint states exactly (the diagnostic's own
``fix``, made with its hint where the diagnostic is made: a "did you mean", another language's
type name, another language's habit; ``tools []``, an unused ``let``, an undeclared agent, the
`:` of ``count int``, a deleted `}`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentflow.core.diagnostics import Diagnostic
from agentflow.lsp import navigation

if TYPE_CHECKING:
    from agentflow.lsp.analysis import Analysis


@dataclass(slots=True)
class Fix:
    """A quick fix for one diagnostic: ``edits`` are ``(start, end, new_text)`` with
    code-point offsets into the analysed text (end exclusive); ``preferred`` marks the fix an
    editor may apply on its own (LSP ``isPreferred``)."""

    title: str
    edits: list[tuple[int, int, str]]
    preferred: bool = False


def fixes(a: Analysis, d: Diagnostic) -> list[Fix]:
    """The mechanical edits the hint of diagnostic ``d`` (one of this analysis') states.

    - the diagnostic's own ``fix`` (:class:`~agentflow.core.diagnostics.Replacement`), made
      with its hint where the diagnostic is made; preferred unless it says otherwise.  That is
      every "did you mean `X`?" of a misspelt name (:func:`~agentflow.core.diagnostics.respelling`: an unknown
      name, type, field — ``input.titel``, a record's, an agent result's, an object literal's
      key —, tool, argument, agent alias, error code, constraint, ``@format``, function,
      import, keyword, agent clause, a string literal compared or matched), another
      language's type name (``string`` → ``text``), and the habits of other languages
      (``&&``, ``||``, ``!x``, ``===``, ``?.``, ``elif``, a single-quoted string, a ``;``
      ending a line — :mod:`agentflow.grammar.habit_fixes`), ``empty-tools``' ``tools none``,
      ``optional-union-member``'s ``("a" | "b")?`` (a union on one line), and an undeclared
      agent's ``use agent "x" as x`` line after the last ``use`` item (not preferred); the
      hint's text is never read for them;
    - ``unused-variable`` of a ``let``: a rename to ``_x`` (its declaration and every use),
      only when :func:`~agentflow.lsp.navigation.rename_problem` accepts it;
    - ``syntax-error`` of ``count int`` ("fields are written `name: type`: …"): the `:`
      (:func:`missing_colon`); preferred;
    - ``syntax-error`` of a deleted `}` ("expected `}` to close …", docs/diagnostics.md): the
      `}` where the hint puts it (:func:`missing_brace`).

    Anything else (or a span that does not read as expected): no fix."""
    hint = d.hint or ""
    if d.span.file != a.module.file or not hint:
        return []
    if d.fix is not None and d.fix.span.file == d.span.file:  # the one edit the hint states
        edit = (d.fix.span.start, d.fix.span.end, d.fix.text)
        return [Fix(d.fix.title, [edit], d.fix.preferred)]
    if d.code == "unused-variable":  # a `let` never read: named `_x` everywhere
        off = d.span.start
        rt = navigation.rename_target(a, off)
        if rt is None or rt[0] != "let":
            return []
        new = "_" + rt[1]
        if navigation.rename_problem(a, off, new) is not None:
            return []
        spans = navigation.references_for_rename(a, off) or []
        return [Fix(f"Rename `{rt[1]}` to `{new}`", [(s.start, s.end, new) for s in spans])]
    if d.code == "syntax-error":
        fix = missing_colon(a, d, hint) or missing_brace(a, d, hint)
        return [fix] if fix is not None else []
    return []


#: the `name: type` hints of a syntax error (``count int``): the name is group 1
_MISSING_COLON = re.compile(
    r"(?:written `name: type`|follows a colon): `(?:let )?([A-Za-z_][A-Za-z0-9_]*\??):"
)


def missing_colon(a: Analysis, d: Diagnostic, hint: str) -> Fix | None:
    """``count int`` with the hint "fields are written `name: type`: `count: int`": a `:`
    inserted right after the name, when the text before the diagnostic's type reads as that
    name and blanks; preferred."""
    m = _MISSING_COLON.search(hint)
    if m is None:
        return None
    name = m.group(1)
    before = a.text[max(0, d.span.start - 200) : d.span.start]
    kept = before.rstrip(" \t")
    if kept == before or not kept.endswith(name):
        return None
    k = d.span.start - (len(before) - len(kept))
    return Fix(f"Insert `:` after `{name}`", [(k, k, ":")], True)


#: a `}` the hint places before a line (by indentation: group ``what`` is what it closes, and
#: ``line`` the line it goes before) or after the block's last line (``after``)
_BRACE_HINT = re.compile(
    r"by its indentation, (?:the `\}` on line (?P<at>\d+) closes .*: add the `\}` of (?P<what>.*) "
    r"before it|line (?P<line>\d+) comes after (?P<what2>.*) \(its `\{` is on line \d+\): "
    r"add its `\}` before line \d+)\Z"
    r"|add `\}` after line (?P<after>\d+) to close (?P<what3>.*)\Z"
)


def missing_brace(a: Analysis, d: Diagnostic, hint: str) -> Fix | None:
    """A deleted `}` (the hints of docs/diagnostics.md's unclosed `{`, "by its indentation, …:
    add its `}` before line 7", "add `}` after line 6 to close the type body"): a `}` on a
    line of its own, indented like the line of the `{` that is not closed (the first note at a
    `{`), inserted at the start of the diagnostic's line (it is the line the hint names) or
    after the line the hint names.  Not preferred: indentation located it, which a person
    should confirm."""
    m = _BRACE_HINT.match(hint)
    text = a.text
    opener = next(
        (
            n.span
            for n in d.notes
            if n.span is not None
            and n.span.file == d.span.file
            and text[n.span.start : n.span.start + 1] == "{"
        ),
        None,
    )
    if m is None or opener is None:
        return None
    ls = text.rfind("\n", 0, opener.start) + 1
    line = text[ls : opener.start]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    title = f"Insert `}}` to close {m.group('what') or m.group('what2') or m.group('what3')}"
    if m.group("after") is None:
        before = int(m.group("at") or m.group("line"))
        k = text.rfind("\n", 0, d.span.start) + 1
        if d.span.line != before:
            return None
        return Fix(title, [(k, k, indent + "}\n")])
    end = _line_end(text, int(m.group("after")))
    return Fix(title, [(end, end, "\n" + indent + "}")]) if end is not None else None


def _line_end(text: str, line: int) -> int | None:
    """The offset of the end of 1-based ``line`` of ``text`` (before its line break)."""
    k = 0
    for _ in range(line - 1):
        k = text.find("\n", k) + 1
        if k == 0:
            return None
    end = text.find("\n", k)
    return len(text) if end < 0 else end
