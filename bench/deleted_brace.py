"""Figures: where `flowc check` reports a deleted `}` (decisions.md "check messages (round 41)").

Deletes, one at a time, every `}` that stands alone on its line in the example programs (the
repository's ``examples/``, ``examples/patterns/`` and the specification's example programs) and
checks each result.  A report is *near* when its primary span is on the first non-blank line
after the deleted brace or on the line just before it (the last line of the unclosed block); the
script prints how many are near, how many point at the unclosed `{` itself (the old
behaviour), how many carry the note at an unclosed `{` and a hint placing the `}`, and the
misses with their lines.

    .venv/bin/python bench/deleted_brace.py [--show N]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agentflow.grammar.parser import parse_module

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    *sorted((ROOT / "examples").glob("*.flow")),
    *sorted((ROOT / "examples" / "patterns").glob("*.flow")),
    *sorted((ROOT / "tests" / "data" / "spec_examples").glob("*.flow")),
]


def _next_line(lines: list[str], k: int) -> int:
    """The 1-based number of the first non-blank line after line index ``k`` (0-based)."""
    for j in range(k + 1, len(lines)):
        if lines[j].strip() and not lines[j].strip().startswith("//"):
            return j + 1
    return len(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--show", type=int, default=10, help="misses to print")
    args = ap.parse_args()
    total = near = at_opener = noted = hinted = 0
    misses: list[str] = []
    for path in SOURCES:
        lines = path.read_text(encoding="utf-8").split("\n")
        for k, line in enumerate(lines):
            if line.strip() != "}":
                continue
            text = "\n".join(lines[:k] + [""] + lines[k + 1 :])
            _module, diags = parse_module(text, path.name)
            if not diags:
                continue  # the brace was not needed (never so here)
            total += 1
            d = diags[0]
            # the deleted line is kept, blank: line numbers do not shift
            want = _next_line(text.split("\n"), k)
            ok = d.span.line in (k, want) or (want == len(lines) and d.span.line >= k)
            near += ok
            noted += any("is not closed" in n.message for n in d.notes)
            hinted += "`}`" in (d.hint or "")
            at_opener += "{" in text.split("\n")[d.span.line - 1][d.span.column - 1 : d.span.column]
            if not ok:
                misses.append(
                    f"{path.name}:{k + 1} deleted → reported {d.span.line}:{d.span.column} "
                    f"(next line {want}): {d.message}"
                )
    print(f"deleted `}}` on a line of its own: {total} cases in {len(SOURCES)} files")
    print(f"reported near the deletion:        {near} ({near / max(total, 1):.0%})")
    print(f"reported at a `{{`:                  {at_opener}")
    print(f"with a note at the unclosed `{{`:    {noted}")
    print(f"with a hint placing the `}}`:        {hinted}")
    for m in misses[: args.show]:
        print("  miss:", m)


if __name__ == "__main__":
    main()
