"""A `sleep` on the Temporal engine (docs/durable.md "Sleeping"): its wake-up time is a
recorded operation and the wait a server timer (`TimerStarted` in the workflow's history), the
run goes on after it, and `flowc runs show` lists the sleep with the time it woke."""

from __future__ import annotations

import asyncio
import os
import subprocess

from support.durable_questions import flowc

FLOW = "stage nap -> int {\n  sleep 300ms\n  return 7\n}\n"


def test_a_sleep_on_temporal_waits_on_a_server_timer_and_shows_in_runs_show(
    tmp_path, temporal_server
):
    from temporalio.api.enums.v1 import EventType

    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs
    from agentflow.runtime.durable import temporal_client as tc

    (tmp_path / "nap.flow").write_text(FLOW)
    (tmp_path / "flow.toml").write_text(
        f'[durable]\nengine = "temporal"\naddress = "{temporal_server.address}"\n'
        f'task_queue = "sleep-{os.getpid()}"\n'
    )
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        flowc("run", "--durable", "--run-id", "tnap-1", "nap.flow"),
        cwd=tmp_path, env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    err = done.stderr.decode()
    assert done.returncode == 0, err[-3000:]
    assert done.stdout.decode().strip() == "7"
    assert "▶ nap › sleep  nap.flow:2:3 · sleeping until " in err and "(300ms)" in err, err

    url = runs.database_for(load_config(tmp_path / "flow.toml"))

    async def history() -> list:
        client = await tc.client_for(url)
        handle = client.get_workflow_handle("tnap-1")
        return [e async for e in handle.fetch_history_events()]

    events = asyncio.run(history())
    timers = [e for e in events if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED]
    assert timers, "the sleep was not a server timer"
    waited = timers[0].timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
    assert 0 < waited.total_seconds() <= 0.3

    shown = asyncio.run(runs.show_run(url, "tnap-1")).to_dict()
    [step] = [s for s in shown["steps"] if s.get("wakes_at") is not None]
    assert step["status"] == "done" and step["label"] == "nap › sleep"
    assert step["finished_at"] == step["wakes_at"]
