"""`flowc resume` refuses, before it takes the run up, what its environment or configuration
cannot give the run — the API key of a model the plan calls unset, a `[tools] modules` file
missing or one that does not import — with the message `flowc run` refuses it with, and the
run stays `stopped`: a later resume, once it is put right, finishes it (docs/durable.md
"Starting, resuming, inspecting").  Before, the run was taken up and built inside its root:
its model calls went out without a key (a provider's 401 became `model_error`), a broken module
ended it `error[failed]`, for good."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from support.durable_questions import NAPPING, kill_when_started, start_flowc, wait_asked
from support.durable_questions import cli_in_process as _cli
from support.durable_questions import run_status as _status

from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
flow kk "t"
extern tool user__twice(n: int) -> int
use agent "helper" as helper
type Note { note: text }
stage s -> Note {
  let ok = ask "go?" expect bool default true
  let a = user__twice(n: 2)
  return agent(helper) { task "say ${a}" tools none expect Note }
}
"""

TOOLS = "def twice(n: int) -> int:\n    return 2 * n\n"

CONFIG = """\
[models]
default = "scripted:test-model"
[providers.scripted]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "SCRIPTED_API_KEY"
[tools]
modules = ["tools.py"]
"""


@pytest.fixture
def stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Run ``k1`` of kk.flow, its process killed while it waited on its ask, then answered."""
    (tmp_path / "kk.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("SCRIPTED_API_KEY", "sk-test")
    proc = start_flowc(tmp_path, "run", "--durable", "--run-id", "k1", "kk.flow")
    try:
        wait_asked(tmp_path / ".flowc" / "durable.sqlite", "k1", proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    assert _cli("answer", "k1", "ok", "true").exit_code == 0
    yield tmp_path
    shutdown()


def test_resume_without_the_api_key_is_refused_as_run_refuses_it_and_the_run_stays_stopped(
    stopped: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SCRIPTED_API_KEY")
    refused_run = _cli("run", "kk.flow")
    resumed = _cli("resume", "k1")
    assert resumed.exit_code == refused_run.exit_code == 1, resumed.output
    message = refused_run.stderr.strip().splitlines()[-1]
    assert message.startswith("error: the environment variable SCRIPTED_API_KEY")
    assert resumed.stderr.strip().splitlines()[-1] == message
    assert "had already ended" not in resumed.stderr
    assert _status("k1") == "stopped"


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        (None, "[tools] modules: 'tools.py' not found"),
        ("def twice(n: int) -> int:\n    return (\n", "[tools] modules: importing 'tools.py'"),
    ],
    ids=["missing", "syntax-error"],
)
def test_resume_with_a_broken_tools_module_is_refused_and_the_run_stays_stopped(
    stopped: Path, broken: str | None, said: str
) -> None:
    if broken is None:
        (stopped / "tools.py").unlink()
    else:
        (stopped / "tools.py").write_text(broken)
    resumed = _cli("resume", "k1")
    assert resumed.exit_code == 1, resumed.output
    assert said in resumed.stderr
    assert resumed.stdout == ""
    assert _status("k1") == "stopped"
    as_json = _cli("resume", "k1", "--json")
    assert as_json.exit_code == 1 and said in as_json.stderr
    assert _status("k1") == "stopped"

    # put right: the run goes on from its record, the tool runs now (the model is unreachable,
    # so it ends at its agent, past the tool)
    (stopped / "tools.py").write_text(TOOLS)
    again = _cli("resume", "k1")
    assert said not in again.stderr
    assert "✓ s › a = user__twice" in again.stderr, again.stderr


def test_a_configuration_a_worker_could_not_use_is_shown_as_validation_not_failed() -> None:
    """A fleet worker that takes a run up and cannot build it records the ConfigError outside
    any step: `runs show` says `validation` (errors.md), never `failed` — the flow's own stop."""
    from agentflow.errors import ConfigError
    from agentflow.runtime.durable.run_info import error_text

    shown = error_text(ConfigError("flow.toml:8:1: [tools] modules: 'tools.py' not found"))
    assert shown["code"] == "validation"
    assert shown["message"].endswith("'tools.py' not found")


def test_a_run_a_worker_could_not_build_resumes_to_its_recorded_end_with_the_note(
    stopped: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run taken up by a process that built it only inside its root and could not, and so
    ended it (as a fleet worker of an earlier agentflow did: one now leaves it pending,
    test_a_worker_that_cannot_build_a_run_leaves_it_pending.py): it ends `error` with code
    `validation`; `flowc resume` then says it had ended and names redrive, prints that end
    (its --json the result) — not the build's exception again as if the resume had failed."""
    from agentflow.runtime.durable import dbos_engine

    built, taken = dbos_engine.runtime_for, dbos_engine.taken_up

    async def inside_the_root_only(run_id: str, spec=None, *, ahead: bool = False):
        if ahead:  # what a worker does: no build before the engine takes the run up
            return None
        return await built(run_id, spec)

    async def ended_by_it(run_id: str, build):  # the earlier worker: the body's exception
        return await build

    monkeypatch.setattr(dbos_engine, "runtime_for", inside_the_root_only)
    monkeypatch.setattr(dbos_engine, "taken_up", ended_by_it)
    (stopped / "tools.py").unlink()
    first = _cli("resume", "k1")
    assert first.exit_code == 1
    assert _status("k1") == "error"
    monkeypatch.setattr(dbos_engine, "runtime_for", built)
    monkeypatch.setattr(dbos_engine, "taken_up", taken)

    again = _cli("resume", "k1")
    assert again.exit_code == 1
    lines = again.stderr.strip().splitlines()
    assert lines[0].startswith("note: run k1 had already ended error;")
    assert "flowc redrive k1" in lines[0]
    assert lines[1].startswith("error[validation]: ") and "'tools.py' not found" in lines[1]
    as_json = _cli("resume", "k1", "--json")
    result = json.loads(as_json.stdout)
    assert result["status"] == "error" and result["error"]["code"] == "validation"
    shown = json.loads(_cli("runs", "show", "k1", "--json").stdout)
    assert shown["error"]["code"] == "validation"


NAPS = """\
import pathlib
import time


def nap(s: float) -> str:
    pathlib.Path("napping").write_text("1")
    time.sleep(s)
    return "napped"
"""


def test_on_temporal_resume_without_the_api_key_is_refused_and_the_run_stays_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, temporal_server
) -> None:
    import os

    (tmp_path / "kt.flow").write_text(NAPPING)
    (tmp_path / "tools.py").write_text(NAPS)
    (tmp_path / "flow.toml").write_text(
        CONFIG
        + f'[durable]\nengine = "temporal"\naddress = "{temporal_server.address}"\n'
        + f'task_queue = "refuse-{tmp_path.name}"\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    env = {**os.environ, "SCRIPTED_API_KEY": "sk-test"}
    kill_when_started(tmp_path, "napping", "run", "--durable", "--run-id", "t1", "kt.flow", env=env)
    monkeypatch.delenv("SCRIPTED_API_KEY", raising=False)
    resumed = _cli("resume", "t1")
    assert resumed.exit_code == 1, resumed.output
    assert "error: the environment variable SCRIPTED_API_KEY" in resumed.stderr
    # not taken up: it has not ended (`running` while the server still lists the killed
    # process's poller, `stopped` after)
    assert _status("t1") in ("running", "stopped")
