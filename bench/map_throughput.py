"""Benchmark: ``map`` throughput (issue #4).

``map`` over 10,000 items of an async tool that sleeps 10 ms, at concurrency 100, on the stock
asyncio loop (what ``flowc run`` and ``run_sync`` use).  The same sleeps under the same bound with
bare asyncio (no executor) take what the event loop alone takes: each worker chains
items/concurrency sleeps and every sleep overshoots by the loop's timer granularity (epoll waits in
whole milliseconds), so even that is above the ideal 10,000 × 10 ms / 100 = 1.00 s.  Prints both
walls and the executor's overhead over bare asyncio (target ≤ 1.05×), and both against the ideal.

    .venv/bin/python bench/map_throughput.py [--items N] [--concurrency C] [--sleep-ms MS] [--runs R]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from agentflow.ir.loader import load_plan_data
from agentflow.runtime.executor import run_plan
from agentflow.runtime.tools.catalog import Catalog, Tool


def build(items: int, concurrency: int, sleep_ms: float):
    async def nap(args, ctx):
        await asyncio.sleep(sleep_ms / 1000)
        return {"n": args["n"]}

    plan = load_plan_data(
        {
            "version": 1,
            "name": "map_bench",
            "steps": [
                {
                    "id": "items",
                    "tool_name": "value",
                    "input": {"value": "{{ 0.." + str(items - 1) + " }}"},
                },
                {
                    "id": "M",
                    "tool_name": "map",
                    "input": {
                        "over": "{{ items }}",
                        "concurrency": concurrency,
                        "do": {"tool_name": "builtin__nap", "input": {"n": "{{ item }}"}},
                    },
                },
            ],
            "finish": {"mode": "output", "output": "{{ M.count }}"},
        },
        "map_bench",
    )
    cat = Catalog([Tool(name="builtin__nap", description="sleep", input_schema={}, func=nap)])
    return plan, cat


async def measure(plan, cat, items: int) -> float:
    t0 = time.perf_counter()
    res = await run_plan(plan, {}, catalog=cat)
    wall = time.perf_counter() - t0
    assert res.status == "ok", res.error
    assert res.output == items, res.output
    return wall


async def floor(items: int, concurrency: int, sleep_ms: float) -> float:
    """The same sleeps under the same bound with bare asyncio (no executor): what the event loop
    alone achieves."""
    indices = iter(range(items))

    async def worker() -> None:
        for _ in indices:
            await asyncio.sleep(sleep_ms / 1000)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - t0


def _runs(coro_fn, runs: int) -> list[float]:
    return [asyncio.run(coro_fn()) for _ in range(runs)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--sleep-ms", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=3, help="runs of each (the best counts)")
    args = ap.parse_args()
    plan, cat = build(args.items, args.concurrency, args.sleep_ms)
    ideal = args.items * args.sleep_ms / 1000 / args.concurrency
    print(f"items: {args.items}, concurrency: {args.concurrency}, tool sleep: {args.sleep_ms} ms")
    print(f"ideal: {ideal:.2f} s; stock asyncio loop, best of {args.runs}")
    walls: list[float] = []
    bases: list[float] = []
    for _ in range(args.runs):  # interleaved, so a burst of load hits both alike
        walls += _runs(lambda: measure(plan, cat, args.items), 1)
        bases += _runs(lambda: floor(args.items, args.concurrency, args.sleep_ms), 1)
    best, base = min(walls), min(bases)
    ratio = best / base
    verdict = "OK" if ratio <= 1.05 else "OVER"
    print(f"executor:     {', '.join(f'{w:.3f} s' for w in walls)}")
    print(f"bare asyncio: {', '.join(f'{w:.3f} s' for w in bases)}")
    print(f"executor:     {best:.3f} s = {best / ideal:.3f}× ideal")
    print(f"bare asyncio: {base:.3f} s = {base / ideal:.3f}× ideal")
    print(f"executor overhead over bare asyncio: {ratio:.3f}× (target ≤ 1.05×) -> {verdict}")


if __name__ == "__main__":
    main()
