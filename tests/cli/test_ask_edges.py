"""The edges of ``flowc ask`` and ``flowc ask --durable`` (docs/decisions.md "ask edges (round
41)"): a Ctrl-C while a tool call runs starts no further model call — the Ctrl-C reaches the
tool's child process too, whose failure comes back first — and the question ends ``aborted``
with the call listed as ``interrupted`` by ``flowc runs show``; ``flowc resume`` of a question
prints what ``flowc ask`` prints; ``flowc runs`` / ``runs show`` show the question; ``flowc ask
--model test``.  Real processes: ``flowc`` in a session of its own, the SIGINT sent to its
process group as a terminal's Ctrl-C is, the model a scripted server on loopback."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.markdown import fences
from support.paths import REPO

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.testing.chat_server import TEST_API_KEY, text, tool_calls

TOOLS = '''\
import os, subprocess


def slow(n: int) -> int:
    """Note the call, then wait in a child process while SLOW is set; return n."""
    with open(os.environ["NOTE_LOG"], "a") as f:
        f.write(f"start {n}\\n")
    if os.environ.get("SLOW"):
        subprocess.run(["sleep", "60"], check=True)
    return n


def fail(n: int) -> int:
    """Always fails."""
    raise ValueError("no luck")
'''

#: round 1 fails a call, round 2's call is slow (the Ctrl-C comes in it), round 3 answers
SCRIPT = [
    tool_calls(("user__fail", {"n": 0})),
    tool_calls(("user__slow", {"n": 1})),
    text("Got 1."),
]

PLAN = "version: 1\nname: p\nsteps:\n  - id: E0\n    tool_name: user__slow\n    input: {n: 1}\n"


def _project(tmp_path: Path, chat_server) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "tools.py").write_text(TOOLS)
    (project / "flow.toml").write_text(
        chat_server.config_text() + '\n[tools]\nmodules = ["tools.py"]\n'
    )
    env = {
        **os.environ,
        "SCRIPTED_API_KEY": TEST_API_KEY,
        "NOTE_LOG": str(project / "notes.log"),
        "NO_COLOR": "1",
    }
    return project, env


#: the fields of `runs show --json` that hold times (the run's own, not the example's)
TIMES = {"created_at", "updated_at", "started_at", "finished_at", "duration_ms"}
CLI_REFERENCE = REPO / "docs" / "reference" / "cli.md"


def _untimed(value):
    """``value`` with every time field replaced by its type (a number or null)."""
    if isinstance(value, dict):
        return {k: (type(v).__name__ if k in TIMES else _untimed(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _reference_example(name: str) -> str:
    """The ```` ```json NAME ```` block of docs/reference/cli.md."""
    (block,) = [f for f in fences(CLI_REFERENCE) if f.info == ("json", name)]
    return block.text


def _documented_fields() -> dict[str, set[str]]:
    """The fields the tables of "The fields of `flowc runs --json`" name: the run's and a
    step's (a row may name two: `started_at`, `finished_at`)."""
    section = CLI_REFERENCE.read_text(encoding="utf-8").split(
        "#### The fields of `flowc runs --json`", 1
    )[1]
    run_table, step_table = section.split("A step:", 1)
    step_table = step_table.split("```", 1)[0]

    def names(table: str) -> set[str]:
        return {
            name
            for row in table.splitlines()
            if row.startswith("| `")
            for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])
        }

    return {"run": names(run_table), "step": names(step_table)}


def _flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentflow", *args]


def _ctrl_c_in_the_slow_call(project: Path, env: dict[str, str], *args: str):
    """``flowc ARGS`` with the slow call waiting; Ctrl-C (SIGINT to its process group) once
    that call's child process runs; its exit code, stdout and stderr."""
    proc = subprocess.Popen(
        _flowc(*args),
        cwd=project,
        env={**env, "SLOW": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a process group of its own, as a terminal's job
    )
    try:
        log = project / "notes.log"
        deadline = time.monotonic() + 60
        while "start 1" not in (log.read_text() if log.exists() else ""):
            assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
            assert time.monotonic() < deadline, "the slow call never started"
            time.sleep(0.02)
        time.sleep(0.2)  # its `sleep` child is running
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, out.decode(), err.decode()


def test_ctrl_c_in_a_durable_questions_tool_call_makes_no_model_call_and_lists_the_call(
    tmp_path: Path, chat_server, monkeypatch: pytest.MonkeyPatch
):
    project, env = _project(tmp_path, chat_server)
    chat_server.script(list(SCRIPT))
    code, out, err = _ctrl_c_in_the_slow_call(
        project, env, "ask", "--durable", "--run-id", "q-int", "Get item 1,\nthen say what it is."
    )
    assert code == 130, err
    assert out == ""
    assert err.splitlines()[-1] == "interrupted by SIGINT"
    # round 3 was never asked: the failed child did not go back to the model as a tool error
    assert len(chat_server.requests) == 2
    assert "✗ user__slow" not in err

    monkeypatch.chdir(project)
    for key in ("SCRIPTED_API_KEY", "NOTE_LOG", "NO_COLOR"):
        monkeypatch.setenv(key, env[key])
    runner = CliRunner()
    try:
        shown = runner.invoke(main, ["runs", "show", "q-int", "--json"])
        assert shown.exit_code == 0, shown.output
        info = json.loads(shown.stdout)
        assert (info["status"], info["question"]) == (
            "aborted",
            "Get item 1,\nthen say what it is.",
        )
        assert info["error"]["message"] == "interrupted by SIGINT"
        assert [(s["label"], s["status"]) for s in info["steps"]] == [
            ("ask", "done"),
            ("ask › round 1 › user__fail", "error"),
            ("ask", "done"),
            ("ask › round 2 › user__slow", "interrupted"),
        ]
        # the reference's example of `runs show --json` is this run's, times aside
        assert _untimed(info) == _untimed(json.loads(_reference_example("runs-show")))
        documented = _documented_fields()
        assert set(info) == documented["run"]
        assert {k for step in info["steps"] for k in step} <= documented["step"]
        text_view = runner.invoke(main, ["runs", "show", "q-int"]).stdout
        assert "question: Get item 1,\n  then say what it is.\n" in text_view
        assert "interrupted" in text_view.splitlines()[-2]
        listed = runner.invoke(main, ["runs"]).stdout
        assert listed.startswith("q-int  aborted    ask  started ")  # as wide as unreadable
        assert listed.rstrip().endswith('"Get item 1, then say what it is."')
        (run,) = json.loads(runner.invoke(main, ["runs", "--json"]).stdout)
        assert run["question"] == "Get item 1,\nthen say what it is."

        # resuming it continues it from its record: the earlier interruption is one note, the
        # rest is what `flowc ask` prints of what happens in this process only — neither round
        # 1's replayed failure nor a console view of the call's internal plan (`run _ask`)
        resumed = runner.invoke(main, ["resume", "q-int"])
        assert resumed.exit_code == 0, resumed.output
        assert resumed.stdout == "Got 1.\n"
        assert resumed.stderr == (
            "note: question q-int was interrupted by SIGINT; resuming it\n"
            '→ user__slow {"n": 1}\n'
            "✓ user__slow 1\n"
        )
        assert len(chat_server.requests) == 3  # round 3 only: rounds 1 and 2 were recorded
        # the interrupted call recorded nothing and ran again; the failed one did not
        assert (project / "notes.log").read_text() == "start 1\nstart 1\n"
        again = json.loads(runner.invoke(main, ["runs", "show", "q-int", "--json"]).stdout)
        assert again["status"] == "ok" and again["output"] == "Got 1."
        assert [s["status"] for s in again["steps"]] == ["done", "error", "done", "done", "done"]
    finally:
        shutdown()


def test_ctrl_c_in_a_planned_step_of_a_plain_question_neither_replans_nor_reports(
    tmp_path: Path, chat_server
):
    project, env = _project(tmp_path, chat_server)
    chat_server.script(
        [
            tool_calls(("plan_and_execute", {"goal": "get 1"})),
            text(PLAN),  # the planner's plan: one slow step
            text(PLAN),  # a replan's, were there one
            text("solved"),
            text("Got 1."),
        ]
    )
    code, out, err = _ctrl_c_in_the_slow_call(project, env, "ask", "Get 1.")
    assert code == 130, err
    assert out == ""
    assert "replan" not in err
    assert err.splitlines()[-1] == "interrupted by SIGINT"
    assert len(chat_server.requests) == 2  # the chat round and the planner: nothing after


def test_ask_model_test_answers_offline_and_no_model_names_it(tmp_path: Path):
    (tmp_path / "flow.toml").write_text("")
    runner = CliRunner(
        env={"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None, "ANTHROPIC_API_KEY": None}
    )
    config = str(tmp_path / "flow.toml")
    missing = runner.invoke(main, ["ask", "Hi?", "--config", config])
    assert missing.exit_code == 1
    assert "no model is configured" in missing.stderr
    assert '`--model test`, or a provider with kind = "test" in flow.toml' in missing.stderr
    answered = runner.invoke(main, ["ask", "Hi?", "--config", config, "--model", "test"])
    assert answered.exit_code == 0, answered.output
    assert answered.stdout == "test answer\n"
    wrong = runner.invoke(main, ["ask", "Hi?", "--config", config, "--model", "gpt"])
    assert wrong.exit_code == 2  # a usage error, before anything is read
    assert "the only model that can be named here is the built-in test model" in wrong.stderr
    both = runner.invoke(main, ["ask", "Hi?", "--model", "test", "--replay", config])
    assert both.exit_code == 2
    assert "--model cannot be used with --record or --replay" in both.output
