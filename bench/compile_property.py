"""Benchmark and long sweep of the compile property (issue 15): N generated programs over every
construct and clause position (tests/support/program_gen.py) through check → compile → plan
validation → "nothing the program wrote is missing from the plan", on W worker processes.

Prints the programs drawn, how many checked clean and compiled, how many were refused as the
generator expected (settings only known at run time where the plan fixes them), internal
compiler errors, dropped clauses, unexpected diagnostics, constructs never drawn, and the time.
The test suite runs 4,000 programs of at most 900 characters from a fixed seed
(tests/compiler/test_compile_property.py); this script runs more, from any seed, of any length.

    .venv/bin/python bench/compile_property.py [N=100000] [--seed S] [--workers W] [--show K]

Exit status 0 when every program behaved, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.program_gen import CONSTRUCTS, sweep  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--show", type=int, default=2, help="failing programs to print")
    args = ap.parse_args()
    chunks = 8 * args.workers
    sizes = [args.n // chunks + (i < args.n % chunks) for i in range(chunks)]
    seeds = [args.seed * 1_000_003 + i for i in range(chunks)]
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        parts = list(pool.map(sweep, seeds, sizes))
    wall = time.perf_counter() - start
    total = {k: sum(p[k] for p in parts) for k in ("programs", "clean", "refused", "failed")}
    failures = [f for p in parts for f in p["failures"]]
    uses = sum((p["seen"] for p in parts), Counter())
    unseen = sorted(CONSTRUCTS - set(uses))
    print(
        f"programs: {total['programs']:,}  compiled: {total['clean']:,}  "
        f"refused as expected: {total['refused']:,}"
    )
    print(f"failures (ICE, dropped clause or unexpected diagnostic): {total['failed']}")
    print(f"constructs never drawn: {unseen or 'none'}")
    rarest = sorted(uses.items(), key=lambda kv: kv[1])[:5]
    print("rarest constructs: " + ", ".join(f"{tag} ({n:,})" for tag, n in rarest))
    print(f"time: {wall:.1f} s on {args.workers} workers ({1000 * wall / args.n:.2f} ms/program)")
    for source, why in failures[: args.show]:
        print("\n" + why + "\n" + source)
    return 1 if total["failed"] or unseen else 0


if __name__ == "__main__":
    raise SystemExit(main())
