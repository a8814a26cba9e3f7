"""The same `.flow` and the same commands on both durable engines (issue 29): switching is one
line of flow.toml (``[durable] engine = "temporal"``).  Real ``flowc`` subprocesses against the
DBOS SQLite database and against a real Temporal dev server (tests/support/temporal.py, one per
test process), checked through the commands only: a run killed with SIGKILL mid-map resumes to
the uninterrupted output without repeating a recorded call, a question answered while no
process runs the run is taken when one does, a cancel ends a waiting run; on Temporal, a 5 MB
tool result goes through the claim-check store and a tool's error is never retried, and a
``flowc worker`` takes map items of a ``--fleet`` run."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from support.durable_questions import flowc, flowc_in, start_flowc, wait_asked

import agentflow

ENGINES = ["dbos", "temporal"]
_queues = itertools.count(1)

TOOLS = """\
import os, time


def note(n: int) -> int:
    \"\"\"Note n in the side-effect log and return 2n.\"\"\"
    log = os.environ["NOTE_LOG"]
    with open(log, "a") as f:
        f.write(f"start {n}\\n")
    time.sleep(0.1)
    with open(log, "a") as f:
        f.write(f"end {n}\\n")
    return 2 * n


def big(mb: int) -> str:
    \"\"\"A text of mb MiB.\"\"\"
    return "x" * (mb * 1024 * 1024)


def size(text: str) -> int:
    \"\"\"Its length.\"\"\"
    return len(text)


def boom(n: int) -> int:
    \"\"\"Note the call, then fail.\"\"\"
    with open(os.environ["NOTE_LOG"], "a") as f:
        f.write(f"boom {n}\\n")
    raise ValueError(f"boom {n}")
"""

MAP_PLAN = """\
version: 1
name: crashy
input_schema: {type: object}
steps:
  - id: E0
    tool_name: user__note
    input: {n: 0}
  - id: E1
    tool_name: map
    input:
      over: "{{ input.xs }}"
      concurrency: 3
      do:
        tool_name: plan__item
        input: {x: "{{ item }}"}
  - id: E2
    tool_name: user__note
    input: {n: 999}
finish: {mode: output, output: "{{ {first: E0, items: E1, last: E2} }}"}
plans:
  item:
    name: item
    steps:
      - id: S0
        tool_name: user__note
        input: {n: "{{ input.x }}"}
      - id: S1
        tool_name: user__note
        input: {n: "{{ 100 + input.x }}"}
    finish: {mode: output, output: "{{ {x: input.x, a: S0, b: S1} }}"}
"""

ASK_PLAN = """\
version: 1
name: approval
input_schema: {type: object}
steps:
  - id: E0
    tool_name: user__note
    input: {n: 1}
  - id: E1
    tool_name: ask
    input:
      question: "Ship release {{ E0 }}?"
      choices: ["yes", "no"]
      when_unanswered: {fail: "nobody answered"}
finish: {mode: output, output: "{{ {shipped: E1.answer, e0: E0} }}"}
"""


def _project(tmp_path: Path, engine: str, request: pytest.FixtureRequest) -> tuple[Path, dict]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "tools.py").write_text(TOOLS)
    (project / "map.yaml").write_text(MAP_PLAN)
    (project / "ask.yaml").write_text(ASK_PLAN)
    config = '[tools]\nmodules = ["tools.py"]\n'
    if engine == "temporal":
        server = request.getfixturevalue("temporal_server")
        # the one line that switches engines (plus where the server is; a task queue per test)
        config += (
            f'\n[durable]\nengine = "temporal"\naddress = "{server.address}"\n'
            f'task_queue = "t{os.getpid()}-{next(_queues)}"\n'
        )
    (project / "flow.toml").write_text(config)
    env = {**os.environ, "NOTE_LOG": str(project / "notes.log"), "NO_COLOR": "1"}
    return project, env


def _run(project: Path, env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(flowc(*args), cwd=project, env=env, capture_output=True, timeout=timeout)


def _questions(engine: str, project: Path, run_id: str) -> list:
    """The questions ``run_id`` waits on (in this process: cheaper than ``flowc runs``)."""
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs

    url = runs.database_for(load_config(project / "flow.toml"))
    return asyncio.run(runs.pending_questions(url, run_id))


def _shown(project: Path, run_id: str) -> dict:
    """``flowc runs show RUN --json``'s data, in this process."""
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs

    url = runs.database_for(load_config(project / "flow.toml"))
    return asyncio.run(runs.show_run(url, run_id)).to_dict()


def _listed(project: Path) -> list[dict]:
    """``flowc runs --json``'s data, in this process."""
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs

    url = runs.database_for(load_config(project / "flow.toml"))
    return [r.to_dict() for r in asyncio.run(runs.list_runs(url))]


def _answers_signalled(project: Path, run_id: str) -> int:
    """How many messages were signalled to Temporal workflow ``run_id`` (its history)."""
    from temporalio.api.enums.v1 import EventType

    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs
    from agentflow.runtime.durable import temporal_client as tc

    url = runs.database_for(load_config(project / "flow.toml"))

    async def count() -> int:
        client = await tc.client_for(url)
        handle = client.get_workflow_handle(run_id)
        signalled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        return sum(
            [
                e.event_type == signalled
                and e.workflow_execution_signaled_event_attributes.signal_name == tc.MESSAGE_SIGNAL
                async for e in handle.fetch_history_events()
            ]
        )

    return asyncio.run(count())


def _wait_question(engine: str, project: Path, run_id: str, proc: subprocess.Popen) -> None:
    if engine == "dbos":
        wait_asked(project / ".flowc" / "durable.sqlite", run_id, proc)
        return
    deadline = time.monotonic() + 120
    while not _questions(engine, project, run_id):
        if proc.poll() is not None:
            raise AssertionError(proc.communicate()[1].decode()[-2000:])
        assert time.monotonic() < deadline, "the run never asked its question"
        time.sleep(0.2)


def _notes(project: Path) -> list[str]:
    log = project / "notes.log"
    return log.read_text().splitlines() if log.exists() else []


# DBOS's crash/resume of the same shape: tests/runtime/durable/test_durable_crash_resume.py
@pytest.mark.parametrize("engine", ["temporal"])
def test_a_run_killed_mid_map_resumes_to_the_uninterrupted_output(tmp_path, engine, request):
    project, env = _project(tmp_path, engine, request)
    xs = list(range(1, 9))
    run = start_flowc(
        project, "run", "--durable", "--run-id", "kill-1", "map.yaml",
        "--input", json.dumps({"xs": xs}), env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while sum(line.startswith("end ") for line in _notes(project)) < 6:
        assert run.poll() is None, run.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)
    run.send_signal(signal.SIGKILL)
    run.wait()
    at_kill = _notes(project)
    # the calls the record holds as finished at the kill (`flowc runs show`, in this process)
    recorded = [
        s for s in _shown(project, "kill-1")["steps"]
        if s.get("status") == "done" and "tool:user__note" in s["operation"]
    ]  # fmt: skip
    assert recorded, "nothing was recorded before the kill"

    resumed = _run(project, env, "resume", "kill-1")
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    expected = {
        "first": 0,
        "items": [{"x": x, "a": 2 * x, "b": 2 * (100 + x)} for x in xs],
        "last": 1998,
    }
    assert json.loads(resumed.stdout) == expected
    starts = Counter(line for line in _notes(project) if line.startswith("start "))
    # every note ran; one ran twice only if it was in flight at the kill (started, not ended)
    ended_at_kill = {line.split()[1] for line in at_kill if line.startswith("end ")}
    started_at_kill = {line.split()[1] for line in at_kill if line.startswith("start ")}
    for line, count in starts.items():
        n = line.split()[1]
        assert count == 1 or (n in started_at_kill), (line, count)
    # at most the calls in flight (or ended, not yet recorded) ran again: fewer than were recorded
    repeated = sum(count - 1 for count in starts.values())
    assert repeated <= len(started_at_kill) - len(recorded), (repeated, len(recorded))
    assert len(ended_at_kill) >= 6


@pytest.mark.parametrize("engine", ENGINES)
def test_a_question_answered_while_no_process_runs_the_run_is_taken_on_resume(
    tmp_path, engine, request
):
    project, env = _project(tmp_path, engine, request)
    run = start_flowc(project, "run", "--durable", "--run-id", "ask-1", "ask.yaml", env=env)
    _wait_question(engine, project, "ask-1", run)
    run.send_signal(signal.SIGKILL)  # no process (no worker) runs the run now
    run.wait()
    ok = _run(project, env, "answer", "ask-1", "E1", "yes")
    assert ok.returncode == 0, ok.stderr.decode()[-2000:]
    if engine == "temporal":  # (DBOS: tests/runtime/durable/test_answer_race.py)
        # the answer is in the unit's history, not yet in its memo (no worker took it): the
        # question is shown answered, not waiting, by runs and runs show
        # (DBOS: test_a_question_answered_while_its_run_is_stopped.py)
        listed = next(r for r in _listed(project) if r["run_id"] == "ask-1")
        shown = _shown(project, "ask-1")
        for info in (listed, shown):
            assert info["questions"] == [], info
            # `stopped` once its task has waited for a worker past STALLED_S (a loaded machine
            # may list it that late; test_temporal_a_run_no_worker_takes_is_stopped.py)
            assert info["status"] in ("running", "stopped"), info
            assert [(q["path"], q["closed"], q["answer"]) for q in info["answered"]] == [
                ("E1", "answer", "yes")
            ], info
        assert _questions(engine, project, "ask-1") == []
        second = flowc_in(project, "answer", "ask-1", "E1", "no")  # refused: in this process
        assert second.exit_code == 1
        assert 'was already answered ("yes")' in second.stderr, second.output
        assert _answers_signalled(project, "ask-1") == 1  # the second was refused unsent
        # --reuse takes the answer not taken yet, as it takes a recorded one: nobody is asked
        # (DBOS: test_a_question_answered_while_its_run_is_stopped.py), E0 is not run again
        again = _run(project, env, "run", "--reuse", "ask-1", "--run-id", "ask-2", "ask.yaml")
        assert again.returncode == 0, again.stderr.decode()[-2000:]
        assert json.loads(again.stdout) == {"shipped": "yes", "e0": 2}
        assert "answer with" not in again.stderr.decode()
        (line,) = [x for x in again.stderr.decode().splitlines() if x.startswith("✓ E1")]
        assert 'answered "yes"' in line and "(reused)" in line, line
        assert _notes(project) == ["start 1", "end 1"]
    resumed = _run(project, env, "resume", "ask-1")
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert json.loads(resumed.stdout) == {"shipped": "yes", "e0": 2}
    assert _notes(project) == ["start 1", "end 1"]  # the tool before the question ran once
    # once the question was taken, a late answer is told so, in the same words on both engines
    late = flowc_in(project, "answer", "ask-1", "E1", "no")  # refused: in this process
    assert late.exit_code == 1
    assert 'was already answered ("yes")' in late.stderr, late.output[-2000:]


# DBOS's: tests/runtime/durable/test_cancel_while_waiting_on_a_question.py
@pytest.mark.parametrize("engine", ["temporal"])
def test_cancel_ends_a_run_waiting_on_a_question(tmp_path, engine, request):
    project, env = _project(tmp_path, engine, request)
    run = start_flowc(project, "run", "--durable", "--run-id", "cancel-1", "ask.yaml", env=env)
    _wait_question(engine, project, "cancel-1", run)
    done = _run(project, env, "cancel", "cancel-1")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    _, err = run.communicate(timeout=120)
    # exit 1 and the run's own message: never the SDK's crash at exit (-6, -11)
    assert run.returncode == 1, err.decode()[-2000:]
    assert "the run was cancelled (flowc cancel)" in err.decode(), err.decode()[-2000:]
    assert _shown(project, "cancel-1")["status"] == "cancelled"


BIG_PLAN = """\
version: 1
name: big
input_schema: {type: object}
steps:
  - id: E0
    tool_name: user__big
    input: {mb: 5}
  - id: E1
    tool_name: user__size
    input: {text: "{{ E0 }}"}
  - id: E2
    tool_name: user__boom
    input: {n: "{{ E1 }}"}
finish: {mode: output, output: "{{ E1 }}"}
"""


def test_on_temporal_a_5_mb_result_is_claim_checked_and_a_tool_error_is_not_retried(
    tmp_path, request
):
    project, env = _project(tmp_path, "temporal", request)
    (project / "big.yaml").write_text(BIG_PLAN)
    done = _run(project, env, "run", "--durable", "--run-id", "big-1", "big.yaml")
    assert done.returncode == 1
    err = done.stderr.decode()
    # the 5 MiB text reached the next step whole; the failing tool ran once and its error is
    # the run's (Temporal's payload limit never met, nothing retried)
    assert "error[tool_error] at step E2: user__boom: ValueError: boom 5242880" in err, err[-2000:]
    assert _notes(project) == ["boom 5242880"]
    claims = list((project / ".flowc" / "claims").iterdir())
    assert claims and all(p.stat().st_size > 5 * 1024 * 1024 for p in claims)


SEND_TOOLS = """\
import os, time

from agentflow import tool


@tool(idempotent=False)
def send(to: str) -> str:
    \"\"\"Send a message (appends to the outbox; slow).\"\"\"
    with open(os.environ["NOTE_LOG"], "a") as f:
        f.write(f"send {to}\\n")
    time.sleep(30)
    return "sent"
"""

SEND_PLAN = """\
version: 1
name: send
steps:
  - {id: E0, tool_name: user__send, input: {to: ana}}
"""


def test_on_temporal_a_non_idempotent_call_cut_by_a_kill_is_not_run_again(tmp_path, request):
    # a local activity's result enters the history only when its workflow task completes,
    # which a workflow running local activities one after another holds open: the tool's
    # "begin" marker reached the history after the call, so a kill during the call left no
    # trace of it and the resume sent the message again
    project, env = _project(tmp_path, "temporal", request)
    (project / "tools.py").write_text(SEND_TOOLS)
    (project / "send.yaml").write_text(SEND_PLAN)
    run = start_flowc(project, "run", "--durable", "--run-id", "send-1", "send.yaml", env=env)
    deadline = time.monotonic() + 120
    while not _notes(project):
        assert run.poll() is None, run.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, "the call never began"
        time.sleep(0.02)
    run.send_signal(signal.SIGKILL)
    run.wait()
    resumed = _run(project, env, "resume", "send-1")
    assert resumed.returncode == 1
    assert "outcome_unknown" in resumed.stderr.decode(), resumed.stderr.decode()[-2000:]
    assert _notes(project) == ["send ana"]  # sent once


PID_TOOLS = (
    TOOLS
    + """

def where(n: int) -> int:
    \"\"\"Log which process ran n; return 2n.\"\"\"
    with open(os.environ["NOTE_LOG"], "a") as f:
        f.write(f"{n} {os.getpid()}\\n")
    time.sleep(0.2)
    return 2 * n
"""
)


async def _pollers(url: str) -> set[str]:
    """The identities polling the run workflows' task queue now."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    from agentflow.runtime.durable import temporal_engine as te

    client = await te.client_for(url)
    described = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=te.versioned_queue(url)),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    return {p.identity for p in described.pollers}


# DBOS's (a PostgreSQL fleet): tests/runtime/durable/test_durable_fleet.py
def test_on_temporal_flowc_workers_share_a_runs_map_items(tmp_path, request):
    from support.fleet import Workers

    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs

    project, env = _project(tmp_path, "temporal", request)
    (project / "tools.py").write_text(PID_TOOLS)
    (project / "map.yaml").write_text(
        MAP_PLAN.replace("concurrency: 3", "concurrency: 6").replace("user__note", "user__where")
    )
    url = runs.database_for(load_config(project / "flow.toml"))
    xs = list(range(1, 13))
    with Workers(project, env) as workers:
        procs = [workers.start("w1")]  # and the run's own process: a fleet of two
        deadline = time.monotonic() + 120
        while not any(i.startswith("worker:") for i in asyncio.run(_pollers(url))):
            assert all(p.poll() is None for p in procs), workers.errors()
            assert time.monotonic() < deadline, "the workers never polled"
            time.sleep(0.2)
        run = _run(project, env, "run", "--durable", "--fleet", "--run-id", "fleet-1", "map.yaml",
                   "--input", json.dumps({"xs": xs}))  # fmt: skip
    assert run.returncode == 0, run.stderr.decode()[-3000:] + workers.errors()
    assert json.loads(run.stdout)["items"] == [{"x": x, "a": 2 * x, "b": 2 * (100 + x)} for x in xs]
    ran = [line.split() for line in _notes(project)]
    worker_pids = {str(p.pid) for p in procs}
    by_pid = Counter(pid for n, pid in ran if int(n) in xs)  # the items' first calls
    # every item ran exactly once, and the worker took items (not only the run's process)
    assert sorted(int(n) for n, _ in ran if int(n) in xs) == xs
    assert set(by_pid) & worker_pids, (by_pid, worker_pids)
    assert len(by_pid) == 2, by_pid


WIDE_PLAN = """\
version: 1
name: wide
input_schema: {type: object}
steps:
  - id: E0
    tool_name: map
    input:
      over: "{{ input.xs }}"
      concurrency: 5
      do: {tool_name: user__send, input: {to: "{{ item }}"}}
finish: {mode: output, output: "{{ E0 }}"}
"""


def test_on_temporal_a_map_too_wide_for_one_history_fails_saying_so(tmp_path, request, monkeypatch):
    # Temporal terminates a workflow whose history passes 51,200 events: the run would end
    # `cancelled` with no word of why; it fails at [durable] history_events instead, saying so
    project, env = _project(tmp_path, "temporal", request)
    with (project / "flow.toml").open("a") as f:
        f.write("history_events = 60\nmap_batch = 1000\n")  # no batches: one history
    # a tool that is not idempotent: each item a child workflow, whose start and end are
    # events of the run's history at once (a local activity's result waits for its task)
    (project / "tools.py").write_text(SEND_TOOLS.replace("time.sleep(30)", "pass"))
    (project / "wide.yaml").write_text(WIDE_PLAN)
    monkeypatch.chdir(project)
    monkeypatch.setenv("NOTE_LOG", env["NOTE_LOG"])
    result = asyncio.run(
        agentflow.run(
            project / "wide.yaml", {"xs": ["ab"] * 16}, config=project / "flow.toml",
            durable=True, run_id="wide-1",
        )
    )  # fmt: skip
    assert result.status == "error", result.output
    message = result.error.message
    assert "this unit's Temporal history reached" in message, message
    assert "past [durable] history_events (60" in message, message
    assert _shown(project, "wide-1")["status"] == "error"


BATCHED_PLAN = (
    MAP_PLAN.replace("concurrency: 3", "concurrency: 96")
    .replace(
        "  - id: E2\n",
        """  - id: E3
    tool_name: map
    input:
      over: "{{ input.xs }}"
      concurrency: 64
      do: {tool_name: user__note, input: {n: "{{ 1000 + item }}"}}
  - id: E2
""",
    )
    .replace("last: E2}", "last: E2, ones: E3}")
)


def _note_of(path: str) -> int:
    """The ``n`` BATCHED_PLAN's note call at step ``path`` was given."""
    if path in ("E0", "E2"):
        return 0 if path == "E0" else 999
    step, index, *rest = path.split("/")
    x = int(index.removeprefix("do.")) + 1
    return {"E1": {"S0": x, "S1": 100 + x}.get(rest[0] if rest else "", -1), "E3": 1000 + x}[step]


@pytest.mark.battery  # README.md "The battery tier"
def test_on_temporal_a_wide_map_runs_in_batches_resumes_after_a_kill_and_equals_the_plain_run(
    tmp_path, request
):
    # [durable] map_batch = 4: each 30-item map runs as 8 batch workflows RUN/E1/batch.K (the
    # items of E1 two calls each: child workflows of their batch; E3's one call: local
    # activities of the batch), 3 and 2 batches at a time (concurrency 96 and 64: 32 items
    # per batch at once); the run is SIGKILLed mid-map and `flowc resume` finishes it -- a
    # worker whose flow.toml says map_batch = 7: the run's recorded batch size holds for
    # every worker of the run (else its replay would start other batches)
    project, env = _project(tmp_path, "temporal", request)
    with (project / "flow.toml").open("a") as f:
        f.write("map_batch = 4\n")
    (project / "map.yaml").write_text(BATCHED_PLAN)
    xs = list(range(1, 31))
    plain = _run(project, env, "run", "map.yaml", "--input", json.dumps({"xs": xs}))
    assert plain.returncode == 0, plain.stderr.decode()[-3000:]
    (project / "notes.log").unlink()
    run = start_flowc(
        project, "run", "--durable", "--run-id", "batch-1", "map.yaml",
        "--input", json.dumps({"xs": xs}), env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while sum(line.startswith("end ") for line in _notes(project)) < 20:
        assert run.poll() is None, run.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)
    run.send_signal(signal.SIGKILL)
    run.wait()
    at_kill = _notes(project)
    # the calls the record holds as finished at the kill: none of them may run again
    recorded = {
        _note_of(s["path"]) for s in _shown(project, "batch-1")["steps"]
        if s.get("status") == "done" and "tool:user__note" in s["operation"]
    }  # fmt: skip
    assert recorded, "nothing was recorded before the kill"
    toml = (project / "flow.toml").read_text()
    (project / "flow.toml").write_text(toml.replace("map_batch = 4\n", "map_batch = 7\n"))
    resumed = _run(project, env, "resume", "batch-1")
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    assert json.loads(resumed.stdout) == json.loads(plain.stdout)
    starts = Counter(line for line in _notes(project) if line.startswith("start "))
    started_at_kill = {line.split()[1] for line in at_kill if line.startswith("start ")}
    ended_at_kill = {line.split()[1] for line in at_kill if line.startswith("end ")}
    assert len(starts) == 2 + 3 * len(xs)  # every call ran
    for line, count in starts.items():  # a call ran twice only if it was in flight at the kill
        assert count == 1 or line.split()[1] in started_at_kill, (line, count)
    assert all(starts[f"start {n}"] == 1 for n in recorded), sorted(recorded)
    # the record holds every item of both maps, in the .flow's terms (E1/do.I, E3/do.I)
    shown = _shown(project, "batch-1")
    paths = {s.get("path") for s in shown["steps"] if "tool:user__note" in s["operation"]}
    assert {f"E1/do.{i}/S0" for i in range(30)} <= paths, sorted(map(str, paths))[:10]
    assert {f"E3/do.{i}" for i in range(30)} <= paths, sorted(map(str, paths))[:10]
    assert {s["unit"] for s in shown["steps"]} >= {"E1/batch.0/do.0", "E3/batch.7"}
    # a page reads the run's workflows in start order only as far as its steps are known
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs

    url = runs.database_for(load_config(project / "flow.toml"))
    first = asyncio.run(runs.show_run(url, "batch-1", limit=5)).to_dict()
    assert [s["operation"] for s in first["steps"]] == [s["operation"] for s in shown["steps"][:5]]
    assert first["steps_total"] <= shown["steps_total"]
    assert len(ended_at_kill) >= 20


def test_on_temporal_a_page_of_runs_show_equals_the_full_listings_slice_and_reads_only_what_it_needs(
    tmp_path, request, monkeypatch
):
    # 19 workflows (the run; E1's 3 batches and their 12 items; E3's 3 batches): more than
    # runs show reads whole, so a page is read lazily (runtime/durable/temporal_show.py)
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs
    from agentflow.runtime.durable import temporal_engine as te
    from agentflow.runtime.durable import temporal_show as ts

    project, env = _project(tmp_path, "temporal", request)
    with (project / "flow.toml").open("a") as f:
        f.write("map_batch = 4\n")
    (project / "map.yaml").write_text(BATCHED_PLAN)
    xs = list(range(1, 13))
    done = _run(project, env, "run", "--durable", "--run-id", "pages-1", "map.yaml",
                "--input", json.dumps({"xs": xs}))  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    url = runs.database_for(load_config(project / "flow.toml"))

    async def starts() -> dict[str, float]:
        client = await te.client_for(url)
        query = "WorkflowId = 'pages-1' OR WorkflowId STARTS_WITH 'pages-1/'"
        return {w.id: w.start_time.timestamp() async for w in client.list_workflows(query)}

    started = asyncio.run(starts())
    assert len(started) == 1 + 3 + 12 + 3
    opened: list[str] = []
    real_open = ts.open_history

    def counted(client, workflow_id, *args, **kwargs):  # every history runs show reads
        opened.append(workflow_id)
        return real_open(client, workflow_id, *args, **kwargs)

    monkeypatch.setattr(ts, "open_history", counted)
    full = asyncio.run(runs.show_run(url, "pages-1")).to_dict()
    assert len(opened) == len(started) and not full["steps_partial"]
    assert full["steps_total"] == len(full["steps"]) == 2 + 3 * len(xs)
    reads = []
    for limit, offset in [(5, 0), (7, 12), (4, len(full["steps"]) - 2)]:
        opened.clear()
        page = asyncio.run(runs.show_run(url, "pages-1", limit=limit, offset=offset)).to_dict()
        # the page is the full listing's slice, step for step (names, labels, status, times)
        assert page["steps"] == full["steps"][offset : offset + limit]
        assert page["steps_offset"] == offset
        assert offset + len(page["steps"]) <= page["steps_total"] <= full["steps_total"]
        # it read no history of a workflow that started after the page's last step (whose
        # steps all come after it), each once
        last = page["steps"][-1]["started_at"]
        needed = {w for w, at in started.items() if int(at * 1000) / 1000 <= last}
        assert len(opened) == len(set(opened)) and set(opened) <= needed, (opened, needed)
        assert {f"pages-1/{s['unit']}".removesuffix("/(run)") for s in page["steps"]} <= set(opened)
        reads.append(len(opened))
    # the last page skips the workflows that ended before it by their memo's counts (they
    # were read whole before those counts were recorded)
    assert reads[0] < len(started) and reads[-1] < len(started) // 2, reads


def test_on_temporal_a_question_whose_timeout_ran_out_with_no_worker_shows_so_and_a_late_answer_is_taken(
    tmp_path, request, monkeypatch
):
    # the question's timer fires on the server with no worker, and the run showed `waiting`
    # with nothing said of it; now `runs` and `runs show` say the timeout ran out (from the
    # recorded deadline), as they do on DBOS for a stopped run (the text is the engines' one
    # rendering) — and an answer given before a worker takes the run up is taken, as DBOS
    # takes an answer claimed while stopped (without one it goes on unanswered at once: the
    # timeout's ordinary path, test_runs_show_in_the_users_terms.py)
    from click.testing import CliRunner

    from agentflow.cli import main

    project, env = _project(tmp_path, "temporal", request)
    with (project / "flow.toml").open("a") as f:
        f.write('ask_timeout = "2s"\n')
    run = start_flowc(project, "run", "--durable", "--run-id", "late-1", "ask.yaml", env=env)
    _wait_question("temporal", project, "late-1", run)
    run.send_signal(signal.SIGKILL)  # no process runs it now
    run.wait()
    (asked,) = _questions("temporal", project, "late-1")
    assert asked.timeout == 2.0
    time.sleep(max(0.0, asked.asked_at + asked.timeout - time.time()) + 0.1)

    (listed,) = [r for r in _listed(project) if r["run_id"] == "late-1"]
    assert listed["status"] == "waiting"  # Temporal holds it (DBOS: `stopped`)
    assert [q["timed_out"] for q in listed["questions"]] == [True]
    monkeypatch.chdir(project)
    shown = CliRunner().invoke(main, ["runs", "show", "late-1"]).output
    assert "waiting: ? [E1] Ship release 2?" in shown, shown
    assert "its timeout ran out at " in shown and "goes on unanswered" in shown, shown
    assert "(its timeout ran out)" in CliRunner().invoke(main, ["runs"]).output
    answered = CliRunner().invoke(main, ["answer", "late-1", "E1", "yes"])
    assert answered.exit_code == 0, answered.output

    resumed = _run(project, env, "resume", "late-1")
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert json.loads(resumed.stdout) == {"shipped": "yes", "e0": 2}
