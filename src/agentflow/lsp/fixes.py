"""Quick fixes: the mechanical edits a diagnostic's hint states exactly (the diagnostic's own
``fix``, made with its hint where the diagnostic is made: a "did you mean", another language's
type name, another language's habit; ``tools []``, an unused ``let``, an undeclared agent, the
`:` of ``count int``, a deleted `}`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentflow.core.diagnostics import Diagnostic
from agentflow.grammar import ast
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


_UNUSED_HINT = re.compile(r"remove it, or name it `(_[A-Za-z0-9_]*)`\Z")


_DECLARE_USE = re.compile(r'declare it: `(use agent "([A-Za-z_][A-Za-z0-9_]*)" as \2)`\Z')


_EMPTY_TOOLS = re.compile(r"tools\s*\[\s*\]\Z")


def fixes(a: Analysis, d: Diagnostic) -> list[Fix]:
    """The mechanical edits the hint of diagnostic ``d`` (one of this analysis') states.

    - the diagnostic's own ``fix`` (:class:`~agentflow.core.diagnostics.Replacement`), made
      with its hint where the diagnostic is made; preferred.  That is every "did you mean
      `X`?" of a misspelt name (:func:`~agentflow.core.diagnostics.respelling`: an unknown
      name, type, field — ``input.titel``, a record's, an agent result's, an object literal's
      key —, tool, argument, agent alias, error code, constraint, ``@format``, function,
      import, keyword, agent clause, a string literal compared or matched), another
      language's type name (``string`` → ``text``), and the habits of other languages
      (``&&``, ``||``, ``!x``, ``===``, ``?.``, ``elif``, a single-quoted string, a ``;``
      ending a line — :mod:`agentflow.grammar.habit_fixes`); the hint's text is never read
      for them;
    - ``empty-tools`` "write `tools none`": the clause, when it reads ``tools [ ]``;
      preferred;
    - ``unused-variable`` "name it `_x`": a rename to ``_x``, only when
      :func:`~agentflow.lsp.navigation.rename_problem` accepts it;
    - ``unknown-name`` of an agent "declare it: `use agent "x" as x`": that line, inserted
      after the last ``use`` item (else after the ``flow`` header, else at the top);
    - ``syntax-error`` of ``count int`` ("fields are written `name: type`: …"): the `:`
      (:func:`missing_colon`); preferred;
    - ``syntax-error`` of a deleted `}` ("expected `}` to close …", docs/diagnostics.md): the
      `}` where the hint puts it (:func:`missing_brace`).
    - ``optional-union-member`` "write `("a" | "b")?` …": the union replaced by that form,
      when it is written on one line without comments; preferred.

    Anything else (or a span that does not read as expected): no fix."""
    hint = d.hint or ""
    if d.span.file != a.module.file or not hint:
        return []
    if d.fix is not None and d.fix.span.file == d.span.file:  # the one edit the hint states
        return [Fix(d.fix.title, [(d.fix.span.start, d.fix.span.end, d.fix.text)], True)]
    if d.code == "empty-tools" and "`tools none`" in hint:
        if _EMPTY_TOOLS.match(a.text[d.span.start : d.span.end]):
            edit = (d.span.start, d.span.end, "tools none")
            return [Fix("Replace `tools []` with `tools none`", [edit], True)]
        return []
    m = _UNUSED_HINT.match(hint)
    if m and d.code == "unused-variable":
        new, off = m.group(1), d.span.start
        rt = navigation.rename_target(a, off)
        if rt is None or rt[0] != "let" or rt[1] != new[1:]:
            return []
        if navigation.rename_problem(a, off, new) is not None:
            return []
        spans = navigation.references_for_rename(a, off) or []
        return [Fix(f"Rename `{rt[1]}` to `{new}`", [(s.start, s.end, new) for s in spans])]
    m = _DECLARE_USE.match(hint)
    if m and d.code == "unknown-name":
        return [Fix(f"Declare `{m.group(1)}`", [top_insertion(a, m.group(1))])]
    if d.code == "syntax-error":
        fix = missing_colon(a, d, hint) or missing_brace(a, d, hint)
        return [fix] if fix is not None else []
    m = _WHOLE_UNION.match(hint)
    if m and d.code == "optional-union-member":
        written = a.text[d.span.start : d.span.end]
        if "?" not in written or "\n" in written or "//" in written:
            return []  # a union over lines or with comments is left to the writer
        return [Fix(f"Write `{m.group(1)}`", [(d.span.start, d.span.end, m.group(1))], True)]
    return []


#: the hint of ``optional-union-member``: the whole union, parenthesised and optional
_WHOLE_UNION = re.compile(r"write `(\(.*\)\?)` to say the whole union is optional\Z")


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


def top_insertion(a: Analysis, line: str) -> tuple[int, int, str]:
    """An insertion of the top-level ``line`` after the last ``use`` item (else after the
    ``flow`` header, else at the start of the file)."""
    anchor = None
    for item in a.module.items:
        if isinstance(item, (ast.UseDecl, ast.FlowHeader)):
            if anchor is None or isinstance(item, ast.UseDecl):
                anchor = item
    if anchor is None:
        return (0, 0, line + "\n\n")
    nl = a.text.find("\n", anchor.span.end)
    if nl < 0:
        return (len(a.text), len(a.text), "\n" + line + "\n")
    return (nl + 1, nl + 1, line + "\n")
