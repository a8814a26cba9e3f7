"""What a run budget's ledger costs a Temporal model call, and that it holds.

Every model call of a Temporal run with a run budget reserves in the run's ledger workflow
(runtime/durable/temporal_ledger.py: a signal-with-start, queries until granted, a settle
signal).  On a real dev server (tests/support/temporal.py) with one worker and a scripted model
server answering at once, this prints, over ``--rounds`` rounds, the time to reserve and settle
one call's place (:meth:`LedgerBudget.hold_remote` then its end, ``--calls`` calls one after
another in one run's ledger, the first of which starts the ledger) and checks that a budget of
``inferences: N`` grants exactly N places of 2N asked at once::

    .venv/bin/python bench/temporal_budget_ledger.py --rounds 3 --calls 20
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

from agentflow.errors import RunError  # noqa: E402
from agentflow.runtime.durable import temporal_client as tc  # noqa: E402
from agentflow.runtime.durable import temporal_engine as te  # noqa: E402
from agentflow.runtime.durable.temporal_budget import ledger_budgets  # noqa: E402
from agentflow.runtime.durable.temporal_workflows import serve  # noqa: E402
from agentflow.runtime.models.budget import Budget  # noqa: E402


async def one_run(url: str, run_id: str, calls: int) -> tuple[float, list[float]]:
    """(first call's reserve+settle, the others') in seconds, for one run's ledger."""
    (ledger,) = ledger_budgets(
        [Budget(name="run", source="bench", inferences=10 * calls)], url, run_id
    )
    times: list[float] = []
    for k in range(calls):
        token = tc.OPERATION.set(f"{run_id}|E0/model:chat#{k + 1}")
        t0 = time.perf_counter()
        ticket = await ledger.hold_remote(10, 0.0, "E0")  # type: ignore[attr-defined]
        ledger.end_remote(ticket, (20, 0.0))  # type: ignore[attr-defined]
        times.append(time.perf_counter() - t0)
        tc.OPERATION.reset(token)
    await asyncio.sleep(0.2)  # the last settle goes out
    client = await tc.client_for(url)
    await client.get_workflow_handle(f"{tc.BUDGET_WORKFLOW}/{run_id}").signal("close")
    return times[0], times[1:]


async def exact(url: str, run_id: str, n: int) -> int:
    """How many of 2n places asked at once a budget of n inferences grants (none settle)."""
    (ledger,) = ledger_budgets([Budget(name="run", source="bench", inferences=n)], url, run_id)

    async def ask(k: int) -> bool:
        token = tc.OPERATION.set(f"{run_id}|E0/do.{k}/model:chat#1")
        try:
            await asyncio.wait_for(ledger.hold_remote(1, 0.0, "E0"), 3)  # type: ignore[attr-defined]
            return True
        except (RunError, TimeoutError):  # refused, or waiting on the places held
            return False
        finally:
            tc.OPERATION.reset(token)

    granted = sum(await asyncio.gather(*(ask(k) for k in range(2 * n))))
    client = await tc.client_for(url)
    await client.get_workflow_handle(f"{tc.BUDGET_WORKFLOW}/{run_id}").signal("close")
    return granted


async def main(address: str, rounds: int, calls: int, tmp: Path) -> None:
    url = te.make_url(address, "default", f"bl{os.getpid()}", False, tmp, 1_000_000)
    firsts: list[float] = []
    nexts: list[float] = []
    async with serve(url):
        await one_run(url, "warm-up", 2)
        for k in range(rounds):
            first, rest = await one_run(url, f"r{k}", calls)
            firsts.append(first)
            nexts.extend(rest)
        granted = await exact(url, "exact", 5)

    def show(name: str, xs: list[float]) -> None:
        print(
            f"{name}: median {statistics.median(xs) * 1000:.1f} ms, "
            f"min {min(xs) * 1000:.1f} ms, max {max(xs) * 1000:.1f} ms ({len(xs)} calls)"
        )

    show("first call of a run (starts its ledger)", firsts)
    show("next calls (ledger running)", nexts)
    print(f"budget of 5 inferences, 10 places asked at once: {granted} granted")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    with TemporalServer() as server, tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(server.address, args.rounds, args.calls, Path(tmp)))
