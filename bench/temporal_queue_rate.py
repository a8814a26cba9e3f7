"""Does Temporal's own task-queue rate limit keep "at most N requests in any 1 s window"?

Two ways to hold ``rate_limit = N`` across workers on a real Temporal dev server
(tests/support/temporal.py), side by side, each sending ``--requests`` requests at once whose
"send" happens a random 0–``--late`` s after the request got its turn (a busy worker):

- ``queue``: each request an activity on a task queue whose workers set
  ``max_task_queue_activities_per_second = N`` (enforced by the server's matching service);
  ``--workers`` workers, each its own process-wide worker of the queue (one per client);
- ``slots``: each request holds a slot of agentflow's limiter workflow
  (``temporal_engine.fleet_slot``, runtime/durable/temporal_rate.py), as a `flowc` run does.

Prints, for each, the most sends in any 1 s window and the elapsed time::

    .venv/bin/python bench/temporal_queue_rate.py --rate 5 --requests 40
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.temporal import TemporalServer  # noqa: E402

SENT: list[float] = []
LATE = [0.0]


def busiest(stamps: list[float], window: float = 1.0) -> int:
    """The most of ``stamps`` in any half-open window of ``window`` seconds."""
    stamps = sorted(stamps)
    return max((sum(1 for t in stamps if s <= t < s + window) for s in stamps), default=0)


from temporalio import activity, workflow  # noqa: E402


@activity.defn(name="send")
async def send(i: int) -> None:
    """One request: sent a random 0..LATE s after its turn came (a busy worker)."""
    await asyncio.sleep(random.uniform(0, LATE[0]))
    SENT.append(time.monotonic())


@workflow.defn(name="fanout", sandboxed=False)
class Fanout:
    """``n`` requests at once, each an activity on the limited queue ``QUEUE.model``."""

    @workflow.run
    async def run(self, n: int) -> None:
        await asyncio.gather(
            *(
                workflow.execute_activity(
                    "send",
                    i,
                    task_queue=f"{workflow.info().task_queue}.model",
                    start_to_close_timeout=timedelta(minutes=5),
                )  # fmt: skip
                for i in range(n)
            )
        )


async def queue_way(address: str, rate: float, requests: int, workers: int) -> tuple[int, float]:
    from temporalio.client import Client
    from temporalio.worker import Worker

    queue = f"q{uuid.uuid4().hex[:6]}"
    clients = [await Client.connect(address) for _ in range(workers)]
    SENT.clear()
    pool = [
        Worker(
            c,
            task_queue=f"{queue}.model",
            activities=[send],
            max_task_queue_activities_per_second=rate,
        )  # fmt: skip
        for c in clients
    ]
    flows = Worker(clients[0], task_queue=queue, workflows=[Fanout])
    async with flows:
        for w in pool:
            await w.__aenter__()
        try:
            started = time.monotonic()
            await clients[0].execute_workflow(
                "fanout", requests, id=f"fanout-{queue}", task_queue=queue
            )
            took = time.monotonic() - started
        finally:
            for w in pool:
                await w.__aexit__(None, None, None)
    return busiest(SENT), took


async def slots_way(address: str, rate: float, requests: int) -> tuple[int, float]:
    from agentflow.runtime.durable import temporal_engine as te
    from agentflow.runtime.durable.temporal_workflows import serve

    url = te.make_url(address, "default", f"s{uuid.uuid4().hex[:6]}", False,
                      Path(tempfile.mkdtemp()), 1_000_000)  # fmt: skip
    SENT.clear()

    async def one() -> None:
        async with te.fleet_slot(url, "m", rate, None):
            await asyncio.sleep(random.uniform(0, LATE[0]))
            SENT.append(time.monotonic())

    async with serve(url):
        started = time.monotonic()
        await asyncio.gather(*(one() for _ in range(requests)))
        took = time.monotonic() - started
    return busiest(SENT), took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=5.0)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--late", type=float, default=0.3)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    LATE[0] = args.late
    random.seed(7)
    with TemporalServer() as server:
        for r in range(args.rounds):  # A/B alternating
            q, qt = asyncio.run(queue_way(server.address, args.rate, args.requests, args.workers))
            s, st = asyncio.run(slots_way(server.address, args.rate, args.requests))
            print(
                f"round {r + 1}: limit {args.rate:g}/s, {args.requests} requests, sends late "
                f"by 0-{args.late:g} s | task-queue rate limit ({args.workers} workers): most "
                f"in 1 s = {q}, {qt:.1f} s | limiter slots: most in 1 s = {s}, {st:.1f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
