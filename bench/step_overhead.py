"""Benchmark: per-step overhead of the plan executor (issue #4).

A 10,000-step plan whose every step calls a no-op builtin tool (an async function registered as
``builtin__noop``, returning ``{}``); each step's input holds one template referring to the previous
step, so rendering is on the measured path.  Prints µs per step (target ≤ 20 µs).

    .venv/bin/python bench/step_overhead.py [--steps N] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

from agentflow.ir.loader import load_plan_data
from agentflow.runtime.events import JsonlSink
from agentflow.runtime.executor import run_plan
from agentflow.runtime.tools.catalog import Catalog, Tool


async def _noop(args, ctx):
    return {"ok": True}


def build(n: int):
    steps = [{"id": "S0", "tool_name": "builtin__noop", "input": {"x": 0}}]
    for i in range(1, n):
        steps.append(
            {
                "id": f"S{i}",
                "tool_name": "builtin__noop",
                "input": {"prev": f"{{{{ S{i - 1}.ok }}}}"},
            }
        )
    t0 = time.perf_counter()
    plan = load_plan_data({"version": 1, "name": "bench", "steps": steps}, "bench")
    load_s = time.perf_counter() - t0
    cat = Catalog([Tool(name="builtin__noop", description="no-op", input_schema={}, func=_noop)])
    return plan, cat, load_s


async def measure(plan, cat, sinks=()) -> float:
    t0 = time.perf_counter()
    res = await run_plan(plan, {}, catalog=cat, sinks=list(sinks))
    wall = time.perf_counter() - t0
    assert res.status == "ok", res.error
    return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    plan, cat, load_s = build(args.steps)
    asyncio.run(measure(plan, cat))  # warm-up
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        asyncio.run(measure(plan, cat))
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    best = min(asyncio.run(measure(plan, cat)) for _ in range(3))
    us = best / args.steps * 1e6
    print(f"steps: {args.steps}")
    print(f"load + validate: {load_s * 1000:.0f} ms ({load_s / args.steps * 1e6:.1f} µs/step)")
    print(f"run (best of 3): {best * 1000:.0f} ms")
    print(f"overhead: {us:.1f} µs per step (target ≤ 20 µs) -> {'OK' if us <= 20 else 'OVER'}")
    with tempfile.TemporaryDirectory() as tmp:
        traced = asyncio.run(measure(plan, cat, [JsonlSink(Path(tmp) / "trace.jsonl")]))
    print(
        f"with a JSON Lines trace (4 events per step): {traced / args.steps * 1e6:.1f} µs per step"
    )


if __name__ == "__main__":
    main()
