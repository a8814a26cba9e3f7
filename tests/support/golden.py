"""The one golden-file helper: every golden test (checker marks, renderer snapshots, compiled plans,
``flowc plan fmt`` output) compares text it produced with a file in the repository through
:class:`Golden`, and ``pytest --update-golden`` is the one switch that rewrites those files instead.
Review the rewritten files with ``git diff`` before committing them.

Checker goldens keep their expectations inside the ``.flow`` files: a line the checker must report a
diagnostic on (its primary span starts there) ends with ``// error[code]: message`` or
``// warning[code]: message`` — several marks in a row when several diagnostics start on the line,
like mypy's ``# E: message  [code]``. :func:`with_marks` writes the marks of a list of diagnostics
into a source text, so "the file is its own expected output" and the update switch rewrites it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

from support.paths import REPO

#: the command-line switch (declared in tests/conftest.py) that rewrites golden files
UPDATE_OPTION = "--update-golden"

#: a line's trailing marks: from the first `// error[` or `// warning[` to the end of the line
_TRAILER = re.compile(r"[ \t]*//[ \t]*(?:error|warning)\[[a-z0-9-]+\]:.*$")
#: one mark of a trailer
_MARK = re.compile(
    r"//[ \t]*(error|warning)\[([a-z0-9-]+)\]:[ \t]*(.*?)[ \t]*(?=//[ \t]*(?:error|warning)\[|$)"
)
#: marks of a changed line start at this column (when the code is shorter)
_MARK_COLUMN = 40

Mark = tuple[int, str, str, str]  # (line, severity, code, message)


class Golden:
    """Compares produced text with golden files; rewrites them under ``--update-golden``."""

    def __init__(self, update: bool) -> None:
        self.update = update

    def check(self, path: Path, actual: str, *, context: str = "") -> None:
        """Assert that ``path`` holds exactly ``actual`` (UTF-8); under ``--update-golden`` write
        ``actual`` to ``path`` instead (only when it differs). A missing golden file fails unless
        updating. The failure shows a unified diff (golden → actual) and then ``context``."""
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if self.update:
            if old != actual:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(actual, encoding="utf-8")
            return
        name = _shown(path)
        if old is None:
            pytest.fail(f"{name} does not exist: run pytest {UPDATE_OPTION}", pytrace=False)
        if old != actual:
            diff = "".join(
                difflib.unified_diff(
                    old.splitlines(keepends=True),
                    actual.splitlines(keepends=True),
                    f"{name} (golden)",
                    f"{name} (now)",
                )
            )
            pytest.fail(
                f"{name} differs from the output (if the change is intended, run pytest "
                f"{UPDATE_OPTION} and review the diff):\n{diff}"
                + (f"\n{context}" if context else ""),
                pytrace=False,
            )


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


# ------------------------------------------------------------------ checker marks


def marks_in(text: str) -> list[Mark]:
    """Every ``(line, severity, code, message)`` mark of a source text, sorted."""
    out = []
    for number, line in enumerate(text.split("\n"), 1):
        trailer = _TRAILER.search(line)
        if trailer:
            out += [(number, s, c, m) for s, c, m in _MARK.findall(trailer.group(0))]
    return sorted(out)


def marks_of(diagnostics: Iterable) -> list[Mark]:
    """The marks of diagnostics (their primary span's line, severity, code and message), sorted; a
    line break in a message is written ``\\n`` so a mark stays on its line."""
    return sorted(
        (d.span.line, d.severity, d.code, d.message.replace("\n", "\\n")) for d in diagnostics
    )


def with_marks(text: str, marks: Iterable[Mark]) -> str:
    """``text`` with its trailing marks replaced by ``marks``. A line whose marks do not change is
    kept as it is; changed marks start where the line's old marks started, else at column 40."""
    by_line: dict[int, list[Mark]] = {}
    for mark in sorted(marks):
        by_line.setdefault(mark[0], []).append(mark)
    out = []
    for number, line in enumerate(text.split("\n"), 1):
        want = by_line.get(number, [])
        trailer = _TRAILER.search(line)
        if marks_in(line if trailer else "") == [(1, *m[1:]) for m in want]:
            out.append(line)
            continue
        code = line[: trailer.start()] if trailer else line
        if want:
            if trailer:  # the author's alignment
                code += re.match(r"[ \t]*", trailer.group(0)).group(0)
            else:
                code = code.rstrip()
                code += " " * max(1, _MARK_COLUMN - 1 - len(code))
            code += "  ".join(f"// {s}[{c}]: {m}" for _, s, c, m in want)
        out.append(code)
    return "\n".join(out)
