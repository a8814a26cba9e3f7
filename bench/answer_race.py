"""Benchmark (issue 28): N pairs of concurrent `flowc answer` with different values for one
question of a durable run (tests/support/answer_race.py).  Each pair must give exactly one
`answered` (exit 0), the other told the question was already answered with the accepted value
(exit 1), and the run must use the accepted value.

    .venv/bin/python bench/answer_race.py [N]      # N defaults to 100

Prints the figures (pairs right and wrong, how far apart the two answers ended) and each wrong
pair; exit status 1 on any wrong pair.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.answer_race import race  # noqa: E402


def main(argv: list[str]) -> int:
    pairs = int(argv[0]) if argv else 100
    with tempfile.TemporaryDirectory() as base:
        result = race(Path(base), pairs)
    print(result.line(), flush=True)
    for wrong in result.wrong:
        print("  wrong:", wrong)
    return 1 if result.wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
