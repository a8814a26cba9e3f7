"""Benchmark: memory of a run (peak RSS, and tracemalloc peak of the run itself).

Each scenario runs in a fresh interpreter so peaks do not mix:

- ``import``: ``import agentflow`` and load the runtime (the floor every run pays);
- ``map``: a ``map`` over N items (default 100,000) of a no-op async tool, concurrency 100;
- ``steps``: a plan of M steps (default 10,000) of the same tool.

Prints peak RSS (MiB), the run's own allocation peak (tracemalloc, MiB) and bytes per item/step
(target: a map item costs < 2 KiB at peak, results included).

    .venv/bin/python bench/memory.py [--items N] [--steps M]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import asyncio, json, resource, sys, tracemalloc
scenario, n = sys.argv[1], int(sys.argv[2])
import agentflow
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.executor import run_plan
from agentflow.runtime.tools.catalog import Catalog, Tool

async def noop(args, ctx):
    return args.get("n")

cat = Catalog([Tool(name="builtin__noop", description="no-op", input_schema={}, func=noop)])
if scenario == "map":
    plan = load_plan_data({"version": 1, "name": "m", "steps": [
        {"id": "items", "tool_name": "value", "input": {"value": "{{ 0.." + str(n - 1) + " }}"}},
        {"id": "M", "tool_name": "map", "input": {"over": "{{ items }}", "concurrency": 100,
         "do": {"tool_name": "builtin__noop", "input": {"n": "{{ item }}"}}}}],
        "finish": {"mode": "output", "output": "{{ M.count }}"}}, "m")
elif scenario == "steps":
    plan = load_plan_data({"version": 1, "name": "s", "steps": [
        {"id": f"E{i}", "tool_name": "builtin__noop", "input": {"n": i}} for i in range(n)]}, "s")
else:
    plan = None
tracemalloc.start()
if plan is not None:
    res = asyncio.run(run_plan(plan, {}, catalog=cat))
    assert res.status == "ok", res.error
_, peak = tracemalloc.get_traced_memory()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # ru_maxrss is KiB on Linux
print(json.dumps({"rss_mib": rss, "run_peak_mib": peak / 2**20}))
"""


def run(scenario: str, n: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, scenario, str(n)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--steps", type=int, default=10_000)
    args = ap.parse_args()
    base = run("import", 0)
    print(f"import + runtime: peak RSS {base['rss_mib']:.1f} MiB")
    for scenario, n, unit in (("map", args.items, "item"), ("steps", args.steps, "step")):
        r = run(scenario, n)
        per = r["run_peak_mib"] * 2**20 / n
        line = (
            f"{scenario}: {n:,} {unit}s: peak RSS {r['rss_mib']:.1f} MiB "
            f"(+{r['rss_mib'] - base['rss_mib']:.1f}), run allocation peak "
            f"{r['run_peak_mib']:.1f} MiB = {per:,.0f} B per {unit}"
        )
        if scenario == "map":
            line += f" (target < 2 KiB) -> {'OK' if per < 2048 else 'OVER'}"
        print(line)


if __name__ == "__main__":
    main()
