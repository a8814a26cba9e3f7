"""Benchmark: per-item cost of a ``map`` of stubbed agents under ``flowc test`` (usage totals).

Each finished step asks :class:`agentflow.runtime.result.StepUsage` for the usage of its path
and everything nested under it.  That total used to scan every step path seen so far, so time
per map item grew with the number of items already run (16,000 items: 32 s against 1.1 s for
1,000).  It is now kept per path prefix as calls are counted; this prints the wall time of
``flowc test`` for a map of N stubbed agent calls and the time per item, which should stay flat
as N grows.

    .venv/bin/python bench/map_usage_totals.py [--items 1000 4000 16000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOW = """\
use agent "w" as w
type R {{ a: int }}
stage s -> int[] {{
  map range({n}) as i {{
    let r = agent(w) {{ task "give ${{i}}" tools none expect R }}
    return r.a
  }}
}}
test "every item is answered" {{
  stub agent w returns {{ a: 1 }}
  expect inferences == {n}
}}
"""


def measure(n: int) -> float:
    """Wall seconds of ``flowc test`` on a map of ``n`` stubbed agent calls."""
    with tempfile.TemporaryDirectory() as tmp:
        flow = Path(tmp) / "wide.flow"
        flow.write_text(FLOW.format(n=n))
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "agentflow.cli", "test", str(flow)],
            capture_output=True,
            text=True,
            cwd=tmp,
        )
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"flowc test failed for N={n}:\n{proc.stdout}\n{proc.stderr}")
        return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, nargs="+", default=[1000, 4000, 16000])
    args = parser.parse_args()
    for n in args.items:
        wall = measure(n)
        print(f"N={n:>6}  wall {wall:7.2f} s  per item {wall / n * 1000:6.3f} ms")


if __name__ == "__main__":
    main()
