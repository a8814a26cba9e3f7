"""On Temporal, a model call that waits for a slot of its model's fleet-wide rate limit waits in
workflow code, not inside an operation: its unit's workflow task completes first, so what ran
before it (the item's tool call) is in the history while it waits, and a worker lost during the
wait — killed, or a workflow task timed out on a loaded machine — leaves nothing to run again
(docs/durable.md "Temporal", docs/decisions.md).  Before, the wait ran inside the model call's
local activity, which held the unit's workflow task open with the tool's result unrecorded: the
next worker ran the tool again.  A real dev server (tests/support/temporal.py), real ``flowc``
processes, the scripted provider on loopback."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import signal
import subprocess
import time
from typing import Any

import pytest
from support.chat_server import TEST_API_KEY, answer
from support.fleet import fleet_env, fleet_project, flowc, labelled_items_plan

_queues = itertools.count(1)

TOOLS = """\
import os


def where(x: int) -> int:
    \"\"\"Log that item x's call ran.\"\"\"
    with open(os.environ["WHERE_LOG"], "a") as f:
        f.write(f"{x}\\n")
    return x
"""


async def _markers(address: str, run_id: str) -> dict[str, list[str]]:
    """The operation names recorded in each workflow of run ``run_id`` (its units too)."""
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client

    client = await Client.connect(address)
    out: dict[str, list[str]] = {}
    async for wf in client.list_workflows(f"WorkflowId STARTS_WITH '{run_id}'"):
        names = out.setdefault(wf.id, [])
        async for event in client.get_workflow_handle(wf.id).fetch_history_events():
            if event.event_type != EventType.EVENT_TYPE_MARKER_RECORDED:
                continue
            data = event.marker_recorded_event_attributes.details.get("data")
            if data is not None and data.payloads:
                names.append(str(json.loads(data.payloads[0].data).get("activity_id")))
    return out


def _waiting(markers: dict[str, list[str]]) -> str | None:
    """A unit whose model call asked for its slot (recorded) and was not answered yet, once
    the other's was (no request is in flight: a slot held by a killed worker would count
    for 5 minutes, ratelimit.STALE_S)."""
    answered = {
        wid for wid, names in markers.items() if any(n.endswith("/model:chat#1") for n in names)
    }
    for wid, names in markers.items():
        if answered and any(n.endswith("/slot") for n in names) and wid not in answered:
            return wid
    return None


@pytest.mark.battery  # README.md "The battery tier"
def test_on_temporal_a_tool_is_not_run_again_when_its_worker_dies_while_a_call_waits_for_a_slot(
    tmp_path, chat_server, temporal_server
):
    config = chat_server.config_text(retries=4).replace(
        'default = "scripted:test-model"', 'default = "limited"'
    )
    # one request per 4 s: item 0's request is sent at once, item 1's waits for the window
    config += (
        '\n[models.named.limited]\nprovider = "scripted"\nmodel = "test-model"\nrate_limit = 0.25\n'
    )
    durable = (
        f'engine = "temporal"\naddress = "{temporal_server.address}"\n'
        f'task_queue = "s{os.getpid()}-{next(_queues)}"\n'
    )
    project = fleet_project(
        tmp_path,
        plan=labelled_items_plan("slots"),
        tools=TOOLS,
        config=config,
        database=".flowc/durable.sqlite",
        durable=durable,
    )
    env = fleet_env(SCRIPTED_API_KEY=TEST_API_KEY, WHERE_LOG=str(project / "where.log"))
    requests: list[int] = []

    def labeller(body: dict) -> object:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        x = int(re.search(r"item (\d+)", user).group(1))
        requests.append(x)
        return answer({"x": x})

    chat_server.script(labeller)
    run = subprocess.Popen(
        flowc("run", "--durable", "--run-id", "slots-1", "plan.yaml",
              "--input", json.dumps({"xs": [0, 1]})),
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    waiting: str | None = None
    markers: dict[str, Any] = {}
    while waiting is None:
        assert run.poll() is None, run.communicate()[1].decode()[-3000:]
        assert time.monotonic() < deadline, f"no call ever waited for its slot: {markers}"
        time.sleep(0.1)
        markers = asyncio.run(_markers(temporal_server.address, "slots-1"))
        waiting = _waiting(markers)
    # the waiting unit's tool call is recorded while its model call waits
    assert any("/tool:user__where#" in n for n in markers[waiting]), markers[waiting]
    run.send_signal(signal.SIGKILL)  # the only worker dies while the call waits
    run.communicate()

    resumed = subprocess.run(
        flowc("resume", "slots-1"), cwd=project, env=env, capture_output=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    assert json.loads(resumed.stdout) == [{"x": 0, "label": 0}, {"x": 1, "label": 1}]
    ran = (project / "where.log").read_text().split()
    item = waiting.rsplit(".", 1)[-1]
    assert ran.count(item) == 1, (item, ran)  # the waiting item's tool ran once
    assert set(ran) == {"0", "1"}, ran  # the other's, in flight at the kill, at least once
    assert sorted(set(requests)) == [0, 1], requests
