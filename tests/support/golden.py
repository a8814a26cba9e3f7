"""Helpers for the golden checker tests (inline marks in `.flow` files)."""

from __future__ import annotations

import os
import re

from support.paths import TESTS

HERE = TESTS / "compiler" / "check"

#: one or more marks at the very end of a line: `// error: code // warning: code`
TRAILER = re.compile(r"(\s*//\s*(?:error|warning):\s*[a-z0-9-]+)+\s*$")
MARK = re.compile(r"(error|warning):\s*([a-z0-9-]+)")


def update_requested(config) -> bool:
    """True when `--update-golden` was given (if registered) or FLOW_UPDATE_GOLDEN=1."""
    try:
        flag = config.getoption("update_golden", default=False)
    except ValueError:  # pragma: no cover - option not registered
        flag = False
    return bool(flag) or os.environ.get("FLOW_UPDATE_GOLDEN") == "1"


def expected_marks(text: str) -> set[tuple[int, str, str]]:
    """Every ``(line, severity, code)`` mark of a source text."""
    marks = set()
    for number, line in enumerate(text.splitlines(), 1):
        trailer = TRAILER.search(line)
        if trailer:
            for sev, code in MARK.findall(trailer.group(0)):
                marks.add((number, sev, code))
    return marks


def actual_marks(diags) -> set[tuple[int, str, str]]:
    return {(d.span.line, d.severity, d.code) for d in diags}


def rewrite_marks(text: str, marks: set[tuple[int, str, str]]) -> str:
    """Return ``text`` with its trailing marks replaced by ``marks`` (aligned at column 40)."""
    by_line: dict[int, list[tuple[str, str]]] = {}
    for line, sev, code in sorted(marks):
        by_line.setdefault(line, []).append((sev, code))
    out = []
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        trailer = TRAILER.search(line)
        old = set(MARK.findall(trailer.group(0))) if trailer else set()
        if old == set(by_line.get(number, [])):
            out.append(line)  # unchanged: keep the author's alignment
            continue
        if trailer:
            line = line[: trailer.start()]
        if number in by_line:
            stripped = line.rstrip()
            pad = " " * max(1, 39 - len(stripped))
            line = stripped + pad + " ".join(f"// {s}: {c}" for s, c in by_line[number])
        out.append(line)
    return "\n".join(out)
