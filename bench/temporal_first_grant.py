"""How long a model's first fleet-wide rate-limit slot takes on Temporal.

A limited model's request (``[models.named.X] rate_limit``) takes a slot of its limiter
workflow before it is sent (``temporal_engine.fleet_slot``, runtime/durable/temporal_rate.py);
the first request of a model starts that workflow (signal-with-start).  On a real dev server
(tests/support/temporal.py) with one worker, this prints, over ``--rounds`` rounds, the time to
the grant of: a first request (a new model, so a new limiter each round), and a second request
of the same model once its limiter runs (tokens available in both)::

    .venv/bin/python bench/temporal_first_grant.py --rounds 8
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.temporal import TemporalServer  # noqa: E402

from agentflow.runtime.durable import temporal_engine as te  # noqa: E402
from agentflow.runtime.durable.temporal_workflows import serve  # noqa: E402


async def grant_time(url: str, model: str) -> float:
    """Seconds from asking for a slot of ``model`` to holding it."""
    t0 = time.perf_counter()
    async with te.fleet_slot(url, model, 100, None):
        took = time.perf_counter() - t0
    return took


async def main(address: str, rounds: int, tmp: Path) -> None:
    url = te.make_url(address, "default", f"fg{os.getpid()}", False, tmp, 1_000_000)
    firsts: list[float] = []
    seconds: list[float] = []
    async with serve(url):
        await grant_time(url, "warm-up")  # the worker's first poll, the client's connection
        for k in range(rounds):
            firsts.append(await grant_time(url, f"m{k}"))
            seconds.append(await grant_time(url, f"m{k}"))

    def show(name: str, xs: list[float]) -> None:
        print(
            f"{name}: median {statistics.median(xs) * 1000:.0f} ms, "
            f"min {min(xs) * 1000:.0f} ms, max {max(xs) * 1000:.0f} ms "
            f"({', '.join(f'{x * 1000:.0f}' for x in xs)})"
        )

    show("first grant (new limiter)", firsts)
    show("next grant (limiter running)", seconds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}")
    with TemporalServer() as server, tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(server.address, args.rounds, Path(tmp)))
