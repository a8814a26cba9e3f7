"""The longest time `await agentflow.run(...)` blocks its caller's event loop (issue 32).

A first call in a fresh interpreter (nothing of the runtime imported yet) runs
examples/bug-triage.flow against its cassette while a ticker task wakes every millisecond and
records how late each wake-up is: the largest lateness is the longest slice during which the
loop could serve nothing else (a web server's other requests). A loaded machine stretches that
wall-clock figure (the process waits for a core, the worker thread holds the GIL), so each loop
callback is also timed in the loop thread's CPU time: the longest is what the loop itself spent
in one go. ``--inline`` runs the
preparation on the loop, as before issue 32 (``asyncio.to_thread`` replaced by a direct call),
for comparison. Each measurement is a fresh interpreter; ``--rounds N`` repeats it.

    nice -n 19 .venv/bin/python bench/loop_blocking.py [--inline] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import asyncio, json, sys, time

from agentflow import run  # as an application does, at import time (the api's module loads)

# every callback the loop runs, timed in the loop thread's CPU time: a measure of how long the
# loop is busy in one go that a loaded machine does not stretch (wall-clock lateness does)
slices = []
_run = asyncio.events.Handle._run

def _timed(self):
    started = time.thread_time()
    try:
        return _run(self)
    finally:
        slices.append((time.thread_time() - started, repr(self)[:160]))

asyncio.events.Handle._run = _timed

async def main(inline):
    if inline:
        async def direct(fn, *args, **kwargs):
            return fn(*args, **kwargs)
        asyncio.to_thread = direct
    gaps = []
    done = False

    async def ticker():
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append((now - last - 0.001, now - started))
            last = now

    started = time.perf_counter()
    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    result = await run(
        "examples/bug-triage.flow",
        json.load(open("examples/bug-report.json")),
        workspace="examples/workspace",
        config="examples/flow.toml",
        replay="examples/bug-triage.cassette.jsonl",
        shape_cache=False,
    )
    total = time.perf_counter() - started
    done = True
    await tick
    worst, at = max(gaps)
    cpu, where = max(slices)
    print(json.dumps({"status": result.status, "total_s": total, "longest_block_s": worst,
                      "at_s": at - worst, "over_50ms": sum(1 for g, _ in gaps if g > 0.05),
                      "longest_cpu_s": cpu, "cpu_where": where}))

asyncio.run(main(sys.argv[1] == "inline"))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inline", action="store_true", help="prepare on the loop (before)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    mode = "inline" if args.inline else "thread"
    figures = []
    for _ in range(args.rounds):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, mode], cwd=REPO, capture_output=True, text=True,
            check=True,
        )  # fmt: skip
        figures.append(json.loads(out.stdout.strip().splitlines()[-1]))
    for f in figures:
        print(
            f"{mode}: status {f['status']}, run {f['total_s'] * 1000:.0f} ms, longest block "
            f"{f['longest_block_s'] * 1000:.1f} ms wall (from {f['at_s'] * 1000:.0f} ms), "
            f"{f['over_50ms']} block(s) over 50 ms; longest callback "
            f"{f['longest_cpu_s'] * 1000:.1f} ms CPU: {f['cpu_where']}"
        )
    worst = max(f["longest_block_s"] for f in figures)
    cpu = max(f["longest_cpu_s"] for f in figures)
    print(
        f"{mode}: over {len(figures)} round(s): longest blocking slice {worst * 1000:.1f} ms "
        f"wall-clock, longest loop callback {cpu * 1000:.1f} ms of CPU"
    )


if __name__ == "__main__":
    main()
