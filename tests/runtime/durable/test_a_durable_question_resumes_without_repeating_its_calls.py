"""``flowc ask --durable``: a question is a durable run like any other (docs/durable.md "Durable
questions").  ``flowc runs`` lists it (plan ``ask``), ``flowc runs show`` names its steps in the
question's terms (``ask › model chat``, ``ask › round 1 › user__note``), and a real ``flowc ask
--durable`` process killed with SIGKILL while a call of its second round runs is finished by
``flowc resume``: the same answer, and neither the finished tool call nor a finished model round
is made again (counted at the scripted model server and in the tool's side-effect log) — on DBOS
and on a real Temporal dev server (tests/support/temporal.py)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.durable_questions import recorded_operations

from agentflow import api
from agentflow.cli import main
from agentflow.errors import InputError
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.testing.chat_server import TEST_API_KEY, text, tool_calls

TOOLS = '''\
import os, time


def note(n: int) -> int:
    """Note n in the side-effect log and return 2n."""
    log = os.environ["NOTE_LOG"]
    with open(log, "a") as f:
        f.write(f"start {n}\\n")
    if n == int(os.environ.get("NOTE_SLOW", "-1")):
        time.sleep(60)  # killed meanwhile
    with open(log, "a") as f:
        f.write(f"end {n}\\n")
    return 2 * n
'''

#: Round 1 notes 1; round 2 notes 2 and 3 (one round, two calls); round 3 answers.
SCRIPT = [
    tool_calls(("user__note", {"n": 1})),
    tool_calls(("user__note", {"n": 2}), ("user__note", {"n": 3})),
    text("Noted 1, 2 and 3."),
]


_queues = itertools.count(1)


def _project(
    tmp_path: Path, chat_server, temporal: str | None = None
) -> tuple[Path, dict[str, str]]:
    """A project whose model is ``chat_server``; ``temporal``: the address of a Temporal
    server, whose engine the project's durable runs then use (one task queue per test)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "tools.py").write_text(TOOLS)
    config = chat_server.config_text() + '\n[tools]\nmodules = ["tools.py"]\n'
    if temporal is not None:
        config += (
            f'\n[durable]\nengine = "temporal"\naddress = "{temporal}"\n'
            f'task_queue = "ask{os.getpid()}-{next(_queues)}"\n'
        )
    (project / "flow.toml").write_text(config)
    env = {
        **os.environ,
        "SCRIPTED_API_KEY": TEST_API_KEY,
        "NOTE_LOG": str(project / "notes.log"),
        "NO_COLOR": "1",
    }
    return project, env


def _log(project: Path) -> list[str]:
    log = project / "notes.log"
    return log.read_text().splitlines() if log.exists() else []


def _shown(project: Path, run_id: str) -> dict:
    """``flowc runs show RUN --json``'s data, in this process (either engine)."""
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs

    url = runs.database_for(load_config(project / "flow.toml"))
    try:
        return asyncio.run(runs.show_run(url, run_id)).to_dict()
    finally:
        shutdown()


def _recorded(project: Path, engine: str, run_id: str) -> list[str]:
    """The names of the operations recorded for ``run_id`` so far."""
    if engine == "temporal":
        try:
            return [s["operation"] for s in _shown(project, run_id)["steps"]]
        except Exception:  # noqa: BLE001 - not started yet
            return []
    return recorded_operations(project)


@pytest.fixture
def in_project(tmp_path: Path, chat_server, monkeypatch: pytest.MonkeyPatch):
    project, env = _project(tmp_path, chat_server)
    monkeypatch.chdir(project)
    for key in ("SCRIPTED_API_KEY", "NOTE_LOG", "NO_COLOR"):
        monkeypatch.setenv(key, env[key])
    yield project
    shutdown()


def test_a_durable_question_answers_and_is_listed_and_shown_in_its_terms(in_project, chat_server):
    chat_server.script(list(SCRIPT))
    runner = CliRunner()
    asked = runner.invoke(main, ["ask", "--durable", "--run-id", "q-1", "Note 1, 2 and 3."])
    assert asked.exit_code == 0, asked.output
    assert asked.stdout == "Noted 1, 2 and 3.\n"
    assert "run id: q-1" in asked.stderr
    assert len(chat_server.requests) == 3
    # the two calls of round 2 ran one after another, in the model's order
    assert _log(in_project) == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]

    listed = runner.invoke(main, ["runs", "--json"])
    assert listed.exit_code == 0, listed.output
    (run,) = json.loads(listed.stdout)
    assert (run["run_id"], run["status"], run["plan"]) == ("q-1", "ok", "ask")
    assert run["output"] == "Noted 1, 2 and 3."

    shown = runner.invoke(main, ["runs", "show", "q-1", "--json"])
    assert shown.exit_code == 0, shown.output
    steps = json.loads(shown.stdout)["steps"]
    assert [(s["path"], s["kind"], s["label"], s["status"]) for s in steps] == [
        ("ask", "model chat", "ask", "done"),
        ("ask/agent.1/user__note", "tool user__note", "ask › round 1 › user__note", "done"),
        ("ask", "model chat", "ask", "done"),
        ("ask/agent.2/user__note", "tool user__note", "ask › round 2 › user__note", "done"),
        ("ask/agent.2/user__note", "tool user__note", "ask › round 2 › user__note", "done"),
        ("ask", "model chat", "ask", "done"),
    ]
    text_view = runner.invoke(main, ["runs", "show", "q-1"])
    assert "ask › round 1 › user__note" in text_view.stdout
    assert "ask › model chat" in text_view.stdout

    # resuming a question that ended gives its answer at once, as `flowc ask` printed it
    again = runner.invoke(main, ["resume", "q-1"])
    assert again.exit_code == 0, again.output
    assert again.stdout == "Noted 1, 2 and 3.\n"
    assert len(chat_server.requests) == 3
    # redrive runs plans again, not questions: refused in the question's terms
    redrive = runner.invoke(main, ["redrive", "q-1"])
    assert redrive.exit_code == 1
    assert "is a question (flowc ask --durable)" in redrive.stderr


def test_durable_with_a_cassette_is_refused(in_project, chat_server):
    cassette = in_project / "c.jsonl"
    cassette.write_text("")
    for flag in ("--record", "--replay"):
        refused = CliRunner().invoke(main, ["ask", "--durable", "Hi?", flag, str(cassette)])
        assert refused.exit_code == 2
        assert "--durable cannot be used with --record or --replay" in refused.output
    # the api refuses it too (the CLI says it first, as a usage error)
    with pytest.raises(InputError, match="cannot be recorded or replayed with a cassette"):
        api.ask_sync("Hi?", durable=True, replay=cassette)
    assert chat_server.requests == []


#: What the record holds when the killed test kills the question.
WANTED_TOOL = "ask/agent.1/user__note/tool:user__note#1"
WANTED_MODEL = "ask/model:chat#2"


def _flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentflow", *args]


@pytest.mark.parametrize("engine", ["dbos", "temporal"])
def test_a_killed_durable_question_is_finished_by_resume_without_repeating_a_call(
    tmp_path: Path, chat_server, engine: str, request: pytest.FixtureRequest
):
    temporal = request.getfixturevalue("temporal_server").address if engine == "temporal" else None
    project, env = _project(tmp_path, chat_server, temporal)
    chat_server.script(list(SCRIPT))
    env["NOTE_SLOW"] = "2"  # the first call of round 2 hangs: the process is killed in it
    proc = subprocess.Popen(
        _flowc("ask", "--durable", "--run-id", "q-kill", "Note 1, 2 and 3."),
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            # killed while round 2's first call runs, once round 1's call and round 2's model
            # call are recorded (a record is written behind its call: docs/durable.md; on
            # Temporal it is in the history once the workflow task completes)
            recorded = _recorded(project, engine, "q-kill") if "start 2" in _log(project) else []
            if all(any(w in n for n in recorded) for w in (WANTED_TOOL, WANTED_MODEL)):
                break
            time.sleep(0.02 if engine == "dbos" else 0.2)  # a Temporal look is a client's
        assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(chat_server.requests) == 2  # rounds 1 and 2 were asked before the kill

    env.pop("NOTE_SLOW")
    resumed = subprocess.run(
        _flowc("resume", "q-kill"), cwd=project, env=env, capture_output=True, timeout=180
    )
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    assert resumed.stdout.decode() == "Noted 1, 2 and 3.\n"
    # it prints what `flowc ask` prints, of what happens in it: not the replayed round 1's call,
    # nor a console view of the calls' internal one-step plans (`run _ask`)
    assert "_ask" not in resumed.stderr.decode()
    assert '→ user__note {"n": 1}' not in resumed.stderr.decode()
    # the resumed process asked only round 3: rounds 1 and 2 came from the record
    assert len(chat_server.requests) == 3
    starts = Counter(line for line in _log(project) if line.startswith("start"))
    # the finished call (note 1) did not run again; the one in flight at the kill (note 2)
    # ran again, then note 3 once
    assert starts == {"start 1": 1, "start 2": 2, "start 3": 1}
    assert _log(project).count("end 1") == 1
    shown = _shown(project, "q-kill")
    assert shown["status"] == "ok" and shown["plan"] == "ask"
    assert shown["question"] == "Note 1, 2 and 3."  # on Temporal from the workflow's memo
    assert [(s["operation"], s["label"]) for s in shown["steps"]] == [
        ("ask/model:chat#1", "ask"),
        ("ask/agent.1/user__note/tool:user__note#1", "ask › round 1 › user__note"),
        ("ask/model:chat#2", "ask"),
        ("ask/agent.2/user__note/tool:user__note#1", "ask › round 2 › user__note"),
        ("ask/agent.2/user__note/tool:user__note#2", "ask › round 2 › user__note"),
        ("ask/model:chat#3", "ask"),
    ]


#: A plan the planner writes during the question: a map whose items run at once (each item a
#: call with `retry`, so a unit of its own, not a one-call item).
PLANNED = """\
version: 1
name: noted
steps:
  - id: E0
    tool_name: map
    input:
      over: [4, 5, 6]
      concurrency: 3
      do: {tool_name: user__note, input: {n: "{{ item }}"}, retry: {attempts: 1}}
"""


def test_a_plan_written_during_a_durable_question_runs_its_map_items_in_the_record(
    in_project, chat_server
):
    """No other process could rebuild a plan `plan_and_execute` wrote, so its concurrent units
    run in the question's own record, one after another (DurableEffects.unit)."""
    chat_server.script(
        [
            tool_calls(("plan_and_execute", {"goal": "Note 4, 5 and 6"})),
            text(PLANNED),  # planner
            text("Noted 4, 5 and 6."),  # solver
            text("All three are noted."),  # chat
        ]
    )
    asked = CliRunner().invoke(main, ["ask", "--durable", "--run-id", "q-plan", "Note 4-6."])
    assert asked.exit_code == 0, asked.output
    assert asked.stdout == "All three are noted.\n"
    assert _log(in_project) == ["start 4", "end 4", "start 5", "end 5", "start 6", "end 6"]
    steps = _shown(in_project, "q-plan")["steps"]
    assert [s["operation"] for s in steps] == [
        "ask/model:chat#1",
        "ask/agent.1/plan_and_execute/planner.1/model:planner#1",
        "E0/do.0/tool:user__note#1",
        "E0/do.1/tool:user__note#1",
        "E0/do.2/tool:user__note#1",
        "ask/agent.1/plan_and_execute/solver/model:solver#1",
        "ask/model:chat#2",
    ]
