"""A model's fleet-wide rate limit on Temporal is held per request by the slots of its limiter
workflow (runtime/durable/temporal_rate.py, on a real dev server: tests/support/temporal.py):
however late a granted request is sent, no 1 s window holds more requests than the limit —
also while the limiter continues as new (its slots and queue carried over) — and a request
cancelled while it waits ends with its cancellation and blocks no other (the DBOS slots'
twin: test_fleet_rate_slots.py)."""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import time
from pathlib import Path

from agentflow.runtime.durable import temporal_engine as te
from agentflow.runtime.durable import temporal_rate

_queues = itertools.count(1)


def _url(server, tmp_path: Path) -> str:
    return te.make_url(
        server.address, "default", f"r{os.getpid()}-{next(_queues)}", False, tmp_path, 1_000_000
    )


def test_late_sends_never_exceed_the_limit_in_any_window_across_a_continue_as_new(
    temporal_server, tmp_path, monkeypatch
):
    from temporalio.client import WorkflowExecutionStatus

    from agentflow.runtime.durable.temporal_workflows import serve

    monkeypatch.setattr(temporal_rate, "ROLL_EVENTS", 40)  # a few requests' events
    url = _url(temporal_server, tmp_path)
    sent: list[float] = []
    rng = random.Random(7)

    extra: list[float] = []

    async def request(into: list[float]) -> None:
        async with te.fleet_slot(url, "m", 4, None):
            await asyncio.sleep(rng.uniform(0, 0.3))  # a busy worker sends late
            into.append(time.monotonic())

    async def given_up() -> None:  # cancelled while it waits (most likely) or holds its slot
        while len(sent) < 4:  # the window is full now
            await asyncio.sleep(0.01)
        task = asyncio.ensure_future(request(extra))
        await asyncio.sleep(0.2)
        task.cancel()
        gave = await asyncio.gather(task, return_exceptions=True)
        assert isinstance(gave[0], asyncio.CancelledError) or extra, gave

    async def main() -> list:
        async with serve(url) as client:
            await asyncio.gather(*(request(sent) for _ in range(10)), given_up())
            wid = te.limiter_id(te.versioned_queue(url), "m")
            return [w async for w in client.list_workflows(f"WorkflowId = '{wid}'")]

    runs = asyncio.run(main())
    assert len(sent) == 10  # every request was granted (the one that gave up blocked none)
    every = sorted(sent + extra)
    assert max(sum(1 for t in every if s <= t < s + 1.0) for s in every) <= 4, every
    # the limiter continued as new at least once on the way (its history stays small)
    statuses = [w.status for w in runs]
    assert WorkflowExecutionStatus.CONTINUED_AS_NEW in statuses, statuses


def test_the_first_request_of_a_new_limiter_is_granted_on_its_first_ask(temporal_server, tmp_path):
    """The limiter's state is loaded before the signals of its first activation are handled:
    loaded in ``run``, it wiped the signal-with-start's ``ask``, and the first request of a
    model was granted only once it asked again, 5 s later (RATE_REASK_S)."""
    from temporalio.api.enums.v1 import EventType

    from agentflow.runtime.durable.temporal_workflows import serve

    url = _url(temporal_server, tmp_path)

    async def main() -> list[str]:
        async with serve(url) as client:
            async with te.fleet_slot(url, "first", 5, None):
                pass
            wid = te.limiter_id(te.versioned_queue(url), "first")
            return [
                e.workflow_execution_signaled_event_attributes.signal_name
                async for e in client.get_workflow_handle(wid).fetch_history_events()
                if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
            ]

    assert asyncio.run(main()) == ["ask", "release"]
