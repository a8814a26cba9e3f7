"""A Temporal run that no worker takes up is listed ``stopped``, as DBOS lists a run no process
holds — not ``running`` (an answer signalled after its process died leaves a workflow task no
one takes) nor ``waiting`` for ever (docs/durable.md "Temporal").  No worker is started here:
the run's workflow is started on a task queue nobody polls."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from support.timing import scaled

from agentflow.runtime.durable import temporal_client as tc
from agentflow.runtime.durable import temporal_manage as tm


async def _listed(url: str, run_id: str) -> str:
    # Temporal's list is eventually consistent: a workflow just started may take a moment to be
    # listed on a loaded server
    give_up = time.monotonic() + scaled(20)
    while True:
        found = [r for r in await tm.list_runs(url, limit=None) if r.run_id == run_id]
        if found or time.monotonic() > give_up:
            break
        await asyncio.sleep(0.2)
    assert len(found) == 1, found
    return found[0].status


@pytest.mark.timeout(120)
async def test_a_run_whose_task_no_worker_takes_is_stopped(temporal_server, monkeypatch):
    url = f"temporal://{temporal_server.address}/default?task_queue=nobody{os.getpid()}"
    client = await tc.client_for(url)
    run_id = f"orphan-{os.getpid()}"
    handle = await client.start_workflow(
        tc.RUN_WORKFLOW, {}, id=run_id, task_queue=tc.versioned_queue(url),
        memo={"plan": "p", "started": time.time()},
    )  # fmt: skip
    try:
        # no worker ever polled its queue: stopped at once
        assert await _listed(url, run_id) == "stopped"
        # a queue a worker polled lately: stopped once its task waited past STALLED_S
        monkeypatch.setattr(tm, "POLL_SILENT_S", float("inf"))
        monkeypatch.setattr(tm, "STALLED_S", 3600.0)
        assert await _listed(url, run_id) == "running"  # not waited long: a worker may take it
        monkeypatch.setattr(tm, "STALLED_S", 0.0)
        assert await _listed(url, run_id) == "stopped"
        shown = await tm.show_run(url, run_id)
        assert shown.status == "stopped"
    finally:
        await handle.terminate("test over")
