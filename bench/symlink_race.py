"""Symlink-swap race against the builtin file tools (issue 16): N operations per tool through a
directory that a thread swaps with a symlink to outside the workspace as fast as it can.

    .venv/bin/python bench/symlink_race.py [N] [TOOL ...]     # N defaults to 10,000

Prints one line per tool (operations, accesses outside the workspace, answered/refused/crashed,
swaps) and ``N inputs, N failures`` (failures = escapes + crashes). Exit status 1 on any failure.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.symlink_race import TOOLS, race  # noqa: E402


def main(argv: list[str]) -> int:
    ops = int(argv[0]) if argv else 10_000
    tools = argv[1:] or list(TOOLS)
    total = failures = 0
    for tool in tools:
        with tempfile.TemporaryDirectory() as base:
            result = race(Path(base), tool, ops)
        print(result.line(), flush=True)
        total += result.ops
        failures += result.escaped + result.crashed
    print(f"{total} inputs, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
