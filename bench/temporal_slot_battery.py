"""A battery of the Temporal fleet run whose model calls wait for fleet-wide rate slots.

The run of ``tests/runtime/durable/test_durable_fleet.py``
(``test_two_workers_split_a_map_and_a_fleet_wide_model_rate_limit_holds[temporal]``: two
``flowc worker`` processes and the run's own process share a 12-item map whose items call a
tool, then a model limited to 5 requests a second and 2 at once) asserts that each item's tool
ran exactly once, every request within the limits.  Before the model calls waited for their
slots in workflow code (temporal_engine.TemporalEngine.take_model_slot), the wait held the
item's workflow task open with the tool's result unrecorded, and on a loaded machine one run in
six ran a tool twice (docs/decisions.md).  The race needs load, so it is repeated here; this
prints the runs that passed and, for each that did not, its assertion::

    .venv/bin/python bench/temporal_slot_battery.py --rounds 10
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST = (
    "tests/runtime/durable/test_durable_fleet.py::"
    "test_two_workers_split_a_map_and_a_fleet_wide_model_rate_limit_holds[temporal]"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    passed = 0
    failures: list[str] = []
    took: list[float] = []
    for k in range(args.rounds):
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q", TEST],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        took.append(time.monotonic() - t0)
        load = os.getloadavg()[0]
        if proc.returncode == 0:
            passed += 1
            print(f"round {k + 1}: ok ({took[-1]:.0f} s, load {load:.1f})", flush=True)
        else:
            why = re.findall(r"^E\s+(.*)$", proc.stdout, re.M)[:3] or [proc.stdout[-500:]]
            failures.append(" | ".join(why))
            print(f"round {k + 1}: FAILED ({took[-1]:.0f} s, load {load:.1f}): {failures[-1]}")
    print(f"{passed} of {args.rounds} runs held (each item's tool once, every request within")
    print(f"the limits); {len(failures)} did not")


if __name__ == "__main__":
    main()
