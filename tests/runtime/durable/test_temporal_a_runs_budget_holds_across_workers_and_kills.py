"""A Temporal run's budget holds for every model call of the run, in whichever worker it is
made and across a kill (docs/models.md "Budgets", docs/durable.md "Temporal"): the calls
reserve in the run's ledger workflow (runtime/durable/temporal_budget.py), shared by the run's
workers, before they are sent.  Real ``flowc`` processes, a real dev server, a scripted model
server on loopback.

- A map's items are child workflows (a worker's task does not inherit the root's budgets): a
  ``budget: {inferences: 3}`` run whose 8 items each call the model, spread over ``flowc run
  --fleet`` and a ``flowc worker``, made 8 calls and ended ``ok``; it now makes 3 and ends
  ``budget_exceeded``; its ``usage`` counts the 3 calls (it counted those of the run's own
  process only); and an item that ended as the map stopped is said once (its console
  lines were said twice when the server refused its completion: temporal_engine.commit_task).
- A run killed after 2 model calls replays on resume the calls whose results reached the
  server — none is sent again, and they count against the budget — and sends again those whose
  results had not, counted again (at least once: the provider had them): the budget holds
  for the calls the provider got."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from support.durable_questions import flowc
from support.fleet import Workers

from agentflow.testing.chat_server import answer

_queues = itertools.count(1)

ITEM_PLANS = """\
plans:
  item:
    name: item
    steps:
      - id: S0
        tool_name: user__where
        input: {n: "{{ input.x }}"}
      - id: S1
        tool_name: agent
        input:
          prompt: "Give {{ input.x }}."
          tools: none
          max_iterations: 1
          output_schema: {type: object, properties: {a: {type: integer}}, required: [a]}
    finish: {mode: output, output: "{{ S1.output.a + S0 }}"}
"""

MAP_PLAN = (
    """\
version: 1
name: budgeted
budget: {inferences: 3}
steps:
  - id: E0
    tool_name: map
    input:
      over: [0, 1, 2, 3, 4, 5, 6, 7]
      concurrency: 8
      do: {tool_name: plan__item, input: {x: "{{ item }}"}}
finish: {mode: output, output: "{{ E0 }}"}
"""
    + ITEM_PLANS
)

TOOLS = """\
import os, time


def where(n: int) -> int:
    \"\"\"Log which process ran n; return 2n (item SLOW's waits, to be killed there).\"\"\"
    with open(os.environ["NOTE_LOG"], "a") as f:
        f.write(f"{n} {os.getpid()}\\n")
    if n == int(os.environ.get("NOTE_SLOW", "-1")):
        time.sleep(60)
    time.sleep(0.2)
    return 2 * n
"""


def _project(tmp_path: Path, chat_server, plan: str, address: str) -> tuple[Path, dict]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "plan.yaml").write_text(plan)
    (project / "tools.py").write_text(TOOLS)
    (project / "flow.toml").write_text(
        chat_server.config_text(retries=0)
        + '\n[tools]\nmodules = ["tools.py"]\n\n[durable]\nengine = "temporal"\n'
        f'address = "{address}"\ntask_queue = "b{os.getpid()}-{next(_queues)}"\n'
    )
    env = {
        **os.environ,
        "SCRIPTED_API_KEY": "test-key",
        "NOTE_LOG": str(project / "notes.log"),
        "NO_COLOR": "1",
    }
    return project, env


def _notes(project: Path) -> list[list[str]]:
    log = project / "notes.log"
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def _url(project: Path) -> str:
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs

    return runs.database_for(load_config(project / "flow.toml"))


def _model_markers(url: str, run_id: str) -> int:
    """How many model-call operations the root's history records."""
    from temporalio.service import RPCError

    from agentflow.runtime.durable import temporal_client as tc
    from agentflow.runtime.durable import temporal_manage as tm

    async def count() -> int:
        client = await tc.client_for(url)
        try:
            operations = await tm._operations(client, run_id)
        except RPCError:  # not started yet
            return 0
        return sum("/model:" in op["name"] for op in operations)

    return asyncio.run(count())


async def _worker_polls(url: str) -> bool:
    """True once a ``flowc worker`` polls the run workflows' task queue."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    from agentflow.runtime.durable import temporal_client as tc

    client = await tc.client_for(url)
    described = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=tc.versioned_queue(url)),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    return any(p.identity.startswith("worker:") for p in described.pollers)


def test_a_runs_budget_holds_for_the_model_calls_of_every_worker(
    tmp_path, chat_server, temporal_server
):
    chat_server.script(lambda request: answer({"a": 1}, delay=0.3))
    project, env = _project(tmp_path, chat_server, MAP_PLAN, temporal_server.address)
    with Workers(project, env) as workers:
        worker = workers.start("w1")
        deadline = time.monotonic() + 120
        while not asyncio.run(_worker_polls(_url(project))):
            assert worker.poll() is None, workers.errors()
            assert time.monotonic() < deadline, "the worker never polled"
            time.sleep(0.1)
        run = subprocess.run(
            flowc("run", "--durable", "--fleet", "--run-id", "fb", "plan.yaml", "--json"),
            cwd=project, env=env, capture_output=True, timeout=180,
        )  # fmt: skip
    err = run.stderr.decode()[-3000:] + workers.errors()
    out = json.loads(run.stdout)
    assert out["status"] == "error" and out["error"]["code"] == "budget_exceeded", err
    assert "3 model call(s) made" in out["error"]["message"], out["error"]
    assert len(chat_server.requests) == 3, err  # 8 items asked; 3 calls were made
    # the run's usage counts each call once, in whichever process it was made
    assert out["usage"]["inferences"] == 3, out["usage"]
    # the items were spread over both processes: each one's calls reserved in the one budget
    assert len({pid for _, pid in _notes(project)}) == 2, _notes(project)
    # an item that ended as the map stopped (its parent's cancel arrived as it completed) is
    # said once: its work was recorded before it completed, so it did not run again
    started = Counter(line for line in run.stderr.decode().splitlines() if line.startswith("▶"))
    assert max(started.values()) == 1, started


SEQUENCE_PLAN = MAP_PLAN.replace("concurrency: 8", "concurrency: 1").replace(
    "[0, 1, 2, 3, 4, 5, 6, 7]", "[0, 1, 2, 3, 4]"
)


@pytest.mark.battery  # README.md "The battery tier"
def test_a_killed_runs_calls_count_once_recorded_and_again_when_sent_again(
    tmp_path, chat_server, temporal_server
):
    """Killed in item 2's tool, after 2 model calls: the calls whose results reached the
    run's history (the worker records its operations at least every 80 % of the workflow
    task's timeout) are replayed on resume, not sent again; those whose results had not are
    sent again (at least once) and counted again — the provider had them.  Either way the
    budget of 3 holds for the calls sent: the provider gets 3, and the run ends refusing the
    next call, at the item whose call would be the 4th sent."""
    chat_server.script(lambda request: answer({"a": 1}, usage=(7, 3)))
    project, env = _project(tmp_path, chat_server, SEQUENCE_PLAN, temporal_server.address)
    env["NOTE_SLOW"] = "2"
    proc = subprocess.Popen(
        flowc("run", "--durable", "--run-id", "bk", "plan.yaml"),
        cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not any(n == "2" for n, _ in _notes(project)):  # item 2's tool runs
            assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
            assert time.monotonic() < deadline, "item 2 never started"
            time.sleep(0.02)
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(chat_server.requests) == 2
    recorded = _model_markers(_url(project), "bk")  # 0, 1 or 2 (the machine's speed decides)
    env.pop("NOTE_SLOW")
    resumed = subprocess.run(
        flowc("resume", "bk", "--json"), cwd=project, env=env, capture_output=True, timeout=180
    )
    out = json.loads(resumed.stdout)
    assert out["status"] == "error", resumed.stderr.decode()[-3000:]
    assert out["error"]["code"] == "budget_exceeded", out["error"]
    assert "3 model call(s) made" in out["error"]["message"], out["error"]
    assert len(chat_server.requests) == 3  # the budget held for the calls sent
    # the recorded calls were not sent again: the resumed process sent 3 - 2 + `recorded`
    # calls before the refusal — item 0's, item 1's and item 2's in order, the 3rd sent is
    # the `1 + recorded`-th item's, the refused one the next
    assert out["error"]["step_path"] == f"E0/do.{1 + recorded}/S1", (recorded, out["error"])


def test_a_dead_workers_place_lapses_on_the_server_while_a_live_calls_lease_is_renewed(
    temporal_server, monkeypatch
):
    """On a real server, with a 1 s lease: a place asked for by a process that then says
    nothing more (a dead worker's call that no worker asks again) is charged and freed by the
    ledger's own timer; a live call's place, renewed by its process (``renew`` every
    ``RENEW_S``), is kept however long the call takes.  The worker is this process."""
    from agentflow.runtime.durable import temporal_budget as tb
    from agentflow.runtime.durable.temporal_workflows import serve
    from agentflow.runtime.models.budget import Budget

    monkeypatch.setattr(tb, "LEASE_S", 1.0)
    monkeypatch.setattr(tb, "RENEW_S", 0.2)
    url = f"temporal://{temporal_server.address}/default?task_queue=lease{os.getpid()}"
    run_id = f"lease{os.getpid()}"

    async def scenario() -> tuple[dict, dict, dict]:
        async with serve(url) as client:
            budget = Budget(name="run", source="the plan's `budget`", inferences=3)
            live = tb.LedgerBudget(
                name="run", source=budget.source, url=url, run_id=run_id, members=[budget]
            )
            ticket = await live.hold_remote(10, 0.0, "E0")  # starts the ledger
            ledger = client.get_workflow_handle(tb.ledger_id(run_id))
            dead = {"id": "dead|E1/model:agent#1", "nonce": "d", "tokens": 10, "cost": 0.0}
            await ledger.signal("ask", dead)  # and its process says nothing more
            first = await ledger.query("state", args=[dead["id"], "d"])
            deadline = time.monotonic() + 60
            while (lapsed := await ledger.query("state", args=[dead["id"], "d"])) != {
                "unknown": True
            }:
                assert time.monotonic() < deadline, "the dead call's place never lapsed"
                await asyncio.sleep(0.1)
            kept = await ledger.query("state", args=list(ticket))
            live.end_remote(ticket, (5, 0.0))
            await asyncio.sleep(0.1)
            await ledger.signal("close")
            return first, lapsed, kept

    first, lapsed, kept = asyncio.run(scenario())
    assert first == {"granted": True}
    assert kept == {"granted": True}  # renewed: still held, after the dead one's lapsed
