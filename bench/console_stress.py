"""Stress: the console on a real pseudo-terminal, many times in a row (issue 28 item 8).

Each iteration runs ``flowc run`` on a pty with its live view up: a ``parallel map`` of
``--items`` items of five tool calls each (events as fast as the tools return, the view redrawn
8 times a second), then ``--asks`` items that each ask a bool question on the terminal while the
others go on; the questions are answered with ``yes``/``n``/``Y``/``FALSE``… and one nonsense
answer that must be refused and asked again (tests/support/console_stress.py). Acceptance: 200
in a row, none frozen (a run that does not end within ``--timeout`` seconds fails the iteration).

    .venv/bin/python bench/console_stress.py [--runs 200] [--items 32] [--asks 6]

Prints one line per failure, then the figures: passed/runs, seconds per run (median, max).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.console_stress import project, run_once  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--items", type=int, default=32)
    ap.add_argument("--asks", type=int, default=6)
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    times: list[float] = []
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        root = project(Path(tmp))
        for i in range(args.runs):
            try:
                outcome = run_once(root, items=args.items, asks=args.asks, timeout=args.timeout)
            except AssertionError as e:
                failures += 1
                print(f"run {i + 1}: FAILED: {str(e)[:2000]}", flush=True)
                continue
            times.append(outcome.seconds)
            if (i + 1) % 20 == 0:
                print(f"{i + 1}/{args.runs} runs, {failures} failed", flush=True)
    passed = args.runs - failures
    print(
        f"console stress: {passed}/{args.runs} runs ended with the right output "
        f"({args.items} items of 5 tool calls, {args.asks} questions answered on the terminal, "
        f"1 refused answer each)"
    )
    if times:
        print(
            f"seconds per run: median {statistics.median(times):.2f}, max {max(times):.2f} "
            "(process start-up included)"
        )
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
