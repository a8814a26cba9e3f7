"""Renderers for diagnostics: human text (rustc/ruff style), JSON and SARIF 2.1.0
(docs/spec/LANGUAGE.md §9: detection and rendering are separate).

All three take a list of :class:`~agentflow.core.diagnostics.Diagnostic` and return a string;
none of them raises for odd spans (out-of-range lines, zero-width spans, missing sources).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from agentflow.core.diagnostics import CODES, Diagnostic, Note
from agentflow.core.spans import Span
from agentflow.core.text import visible
from agentflow.core.version import __version__

__all__ = ["render_text", "render_json", "render_sarif", "summary", "diagnostic_dict", "excerpt"]

_TAB = 4
_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_RED = "\x1b[1;31m"
_YELLOW = "\x1b[1;33m"
_BLUE = "\x1b[1;34m"
_CYAN = "\x1b[1;36m"


def _sorted(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    return sorted(diags, key=lambda d: d.sort_key())


def _expand(line: str, col: int) -> tuple[str, int]:
    """Expand tabs in ``line``; return the expanded line and the 0-based display column of the
    1-based character column ``col``."""
    if "\t" not in line and "\r" not in line and "\n" not in line:  # nothing to expand
        return line, (col - 1 if col >= 1 else len(line))
    out: list[str] = []
    width = 0  # display width of `out` so far (kept, not recomputed: a line of tabs is linear)
    display_col = None
    for i, ch in enumerate(line):
        if i == col - 1:
            display_col = width
        if ch == "\t":
            pad = _TAB - width % _TAB
            out.append(" " * pad)
            width += pad
        elif ch in "\r\n":
            continue
        else:
            out.append(ch)
            width += 1
    text = "".join(out)
    if display_col is None:
        display_col = len(text) + max(0, col - 1 - len(line))
    return text, display_col


def excerpt(line: str, column: int, end_column: int | None) -> tuple[str, int, int]:
    """A source line as a terminal shows it under an excerpt, and where its carets go:
    ``(text, start, width)``: ``text`` with tabs expanded, control characters escaped
    (core/text.py ``visible``) and undecodable bytes shown as U+FFFD; ``start`` the 0-based
    display column of the 1-based character ``column`` in ``text``; ``width`` (≥ 1) the
    display width of the characters ``column`` … ``end_column - 1``, or up to the end of the
    line's text when ``end_column`` is None.  An empty range (``end_column <= column``) is
    one caret at ``column``.  Escapes widen the line, so the carets are measured on the
    shown text: they stay under what they point at (docs/diagnostics.md, the text format)."""

    def safe(s: str) -> str:
        return visible(_printable(s))

    text, start = _expand(line, column)
    if end_column is None:
        end = len(text.rstrip())
    else:
        _, end = _expand(line, end_column)
    start, end = len(safe(text[:start])), len(safe(text[:end]))
    return safe(text), start, max(1, end - start)


def _source_line(
    sources: dict[str, str], file: str, line: int, split: dict[str, list[str]] | None = None
) -> str | None:
    """Line ``line`` (1-based) of ``sources[file]``; ``split`` caches the split texts across
    calls (one split per file, not one per diagnostic)."""
    text = sources.get(file)
    if text is None or line < 1:
        return None
    if split is None:
        lines = text.split("\n")
    else:
        lines = split.get(file)  # type: ignore[assignment]
        if lines is None:
            lines = split[file] = text.split("\n")
    if line > len(lines):
        return None
    return lines[line - 1]


def render_text(
    diags: Iterable[Diagnostic], sources: dict[str, str], *, color: bool = False
) -> str:
    """Render diagnostics for a terminal, sorted by position::

        file.flow:3:11: error[type-mismatch]: expected `int`, found `text`
          |
        3 |   return { n: "one" }
          |               ^^^^^
          = note: file.flow:1:12: field `n` is declared here
          = hint: …

    ``sources`` maps a file name (as in the spans) to its text; a file not in it is rendered
    without the source excerpt.  Carets cover the primary span on its first line (at least one).
    ``color`` adds ANSI colours; the text taken from the files and the messages has its control
    characters escaped (core/text.py ``visible``).  Returns ``""`` for no diagnostics; every block ends with a
    blank line.
    """

    def paint(code: str, s: str) -> str:
        return f"{code}{s}{_RESET}" if color else s

    def safe(s: str) -> str:  # text from the files: no control character reaches the terminal
        return visible(_printable(s))

    blocks: list[str] = []
    split: dict[str, list[str]] = {}
    for d in _sorted(diags):
        sp = d.span
        sev_color = _RED if d.severity == "error" else _YELLOW
        place = f"{sp.file}:{sp.line}:{sp.column}" if sp.line else sp.file  # 0: the whole file
        head = (
            f"{paint(_BOLD, f'{safe(place)}:')} "
            f"{paint(sev_color, f'{d.severity}[{d.code}]')}: {paint(_BOLD, safe(d.message))}"
        )
        lines = [head]
        src = _source_line(sources, sp.file, sp.line, split)
        if src is not None:
            if sp.end_line == sp.line:  # a zero-width span: one caret at its column
                text, start, width = excerpt(src, sp.column, max(sp.end_column, sp.column))
            else:  # a span running on to later lines: to the end of this one
                text, start, width = excerpt(src, sp.column, None)
            gutter = str(sp.line)
            pad = " " * len(gutter)
            lines.append(f"{pad} {paint(_BLUE, '|')}")
            lines.append(f"{paint(_BLUE, gutter + ' |')} {text}")
            lines.append(f"{pad} {paint(_BLUE, '|')} {' ' * start}{paint(sev_color, '^' * width)}")
            indent = pad + " "
        else:
            indent = "  "
        for n in d.notes:
            where = f"{safe(n.span.file)}:{n.span.line}:{n.span.column}: " if n.span else ""
            note = safe(n.message)
            lines.append(f"{indent}{paint(_BLUE, '=')} {paint(_BOLD, 'note')}: {where}{note}")
        if d.hint:
            lines.append(f"{indent}{paint(_BLUE, '=')} {paint(_CYAN, 'hint')}: {safe(d.hint)}")
        blocks.append("\n".join(lines) + "\n")
    return _printable("\n".join(blocks))


#: a byte that was not UTF-8 in a source file (``read_source``: U+DC80…U+DCFF)
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def _printable(text: str) -> str:
    """``text`` with the bytes of a source file that were not UTF-8 shown as U+FFFD (one
    column each, like the byte): a lone surrogate cannot be written to a UTF-8 terminal."""
    return _NOT_UTF8.sub("\ufffd", text)


def summary(diags: Iterable[Diagnostic]) -> str:
    """A closing line such as ``"2 errors, 1 warning"`` (``"no problems"`` when empty)."""
    diags = list(diags)
    errors = sum(1 for d in diags if d.severity == "error")
    warnings = len(diags) - errors
    if not diags:
        return "no problems"
    parts = []
    if errors:
        parts.append(f"{errors} error{'s' if errors != 1 else ''}")
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    return ", ".join(parts)


def _note_dict(n: Note) -> dict[str, Any]:
    data: dict[str, Any] = {"message": n.message}
    if n.span is not None:
        data.update(
            file=n.span.file,
            line=n.span.line,
            column=n.span.column,
            end_line=n.span.end_line,
            end_column=n.span.end_column,
        )
    else:
        data.update(file=None, line=None, column=None, end_line=None, end_column=None)
    return data


def _fix_dict(d: Diagnostic) -> dict[str, Any] | None:
    """The diagnostic's one exact edit (``Diagnostic.fix``) as ``{title, text, file, line,
    column, end_line, end_column}``: the text of that span becomes ``text``; None without."""
    if d.fix is None:
        return None
    sp = d.fix.span
    return {
        "title": d.fix.title,
        "text": d.fix.text,
        "file": sp.file,
        "line": sp.line,
        "column": sp.column,
        "end_line": sp.end_line,
        "end_column": sp.end_column,
    }


def diagnostic_dict(d: Diagnostic) -> dict[str, Any]:
    """One diagnostic as plain data: ``{file, line, column, end_line, end_column, severity,
    code, message, notes: [{message, file, line, column, end_line, end_column}], hint, fix}``
    (``fix``: :func:`_fix_dict`, null when the hint is not one exact edit; docs/reference/cli.md
    "flowc check")."""
    sp = d.span
    return {
        "file": sp.file,
        "line": sp.line,
        "column": sp.column,
        "end_line": sp.end_line,
        "end_column": sp.end_column,
        "severity": d.severity,
        "code": d.code,
        "message": d.message,
        "notes": [_note_dict(n) for n in d.notes],
        "hint": d.hint,
        "fix": _fix_dict(d),
    }


def render_json(diags: Iterable[Diagnostic]) -> str:
    """Render diagnostics as a JSON array of :func:`diagnostic_dict` objects, sorted by
    position (2-space indentation, stable key order, UTF-8 kept)."""
    return _printable(
        json.dumps([diagnostic_dict(d) for d in _sorted(diags)], indent=2, ensure_ascii=False)
    )


def _region(span: Span) -> dict[str, Any]:
    region = {"startLine": max(1, span.line), "startColumn": max(1, span.column)}
    if span.end_line >= span.line:
        region["endLine"] = span.end_line
        end_col = span.end_column
        if span.end_line == span.line and end_col <= span.column:
            end_col = span.column + 1
        region["endColumn"] = max(1, end_col)
    return region


def _exact_region(span: Span) -> dict[str, Any]:
    """``span`` as a SARIF region as it is: an empty one (end = start) is an insertion point."""
    return {
        "startLine": max(1, span.line),
        "startColumn": max(1, span.column),
        "endLine": max(1, span.end_line, span.line),
        "endColumn": max(1, span.end_column) if span.end_line >= span.line else span.column,
    }


def _sarif_fix(d: Diagnostic) -> dict[str, Any] | None:
    """The diagnostic's ``fix`` as a SARIF 2.1.0 ``fix`` object (§3.55): one artifact change
    replacing its region (``deletedRegion``) by its text (``insertedContent``)."""
    if d.fix is None:
        return None
    return {
        "description": {"text": d.fix.title},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": d.fix.span.file},
                "replacements": [
                    {
                        "deletedRegion": _exact_region(d.fix.span),
                        "insertedContent": {"text": d.fix.text},
                    }
                ],
            }
        ],
    }


def render_sarif(diags: Iterable[Diagnostic], *, tool_version: str | None = None) -> str:
    """Render diagnostics as a SARIF 2.1.0 log with one run of the ``flowc`` driver.

    Every registered code is a rule (``id`` the code, ``shortDescription`` its summary,
    ``defaultConfiguration.level`` its severity); each result names its ``ruleId``/``ruleIndex``,
    ``level``, ``message``, one physical location (file URI as given, 1-based region) and the
    notes as ``relatedLocations``; a hint is in ``properties.hint`` and appended to the message;
    a diagnostic's ``fix`` (the one exact edit its hint states) is the result's ``fixes`` entry.
    """
    if tool_version is None:
        tool_version = __version__
    codes = list(CODES)
    results = []
    for d in _sorted(diags):
        text = d.message + (f" ({d.hint})" if d.hint else "")
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": codes.index(d.code),
            "level": d.severity,
            "message": {"text": text},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": d.span.file},
                        "region": _region(d.span),
                    }
                }
            ],
        }
        related = []
        for i, n in enumerate(d.notes):
            loc: dict[str, Any] = {"id": i, "message": {"text": n.message}}
            if n.span is not None:
                loc["physicalLocation"] = {
                    "artifactLocation": {"uri": n.span.file},
                    "region": _region(n.span),
                }
            related.append(loc)
        if related:
            result["relatedLocations"] = related
        fix = _sarif_fix(d)
        if fix is not None:
            result["fixes"] = [fix]
        if d.hint:
            result["properties"] = {"hint": d.hint}
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "flowc",
                        "version": str(tool_version),
                        "rules": _RULES_MARK,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    text = json.dumps(log, indent=2, ensure_ascii=False)
    # the marker stands before every result in the text, so the first occurrence is its own
    return _printable(text.replace(json.dumps(_RULES_MARK), _rules_json(), 1))


#: stands for the driver's ``rules`` in a SARIF log until its cached text replaces it
_RULES_MARK = "flowc-sarif-rules-placeholder"
_rules_cache: tuple[tuple[str, ...], str] = ((), "")


def _rules_json() -> str:
    """The SARIF driver's ``rules`` (every registered code, in registration order) as the
    indented JSON text it has inside the log (``runs[0].tool.driver.rules``, five levels deep).

    Cached while the registered codes stay the same: encoding the ~200 rules with ``indent``
    (the pure-Python encoder) was most of the cost of a log."""
    global _rules_cache
    key = tuple(CODES)
    if _rules_cache[0] != key:
        rules = [
            {
                "id": info.code,
                "name": "".join(p.capitalize() for p in info.code.split("-")),
                "shortDescription": {"text": info.summary},
                "defaultConfiguration": {"level": info.severity},
                "helpUri": f"docs/diagnostics.md#{info.code}",
            }
            for info in CODES.values()
        ]
        text = json.dumps(rules, indent=2, ensure_ascii=False).replace("\n", "\n" + " " * 10)
        _rules_cache = (key, text)
    return _rules_cache[1]
