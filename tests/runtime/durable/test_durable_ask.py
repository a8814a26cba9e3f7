"""A durable run's question waits across restarts and is answered from another process: real
`flowc run --durable`, `flowc resume` and `flowc answer` subprocesses. The listings (`flowc
runs`) read along the way and the refused answers run in this process (click's runner: the
same exit status and messages, without a fresh interpreter each)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from support.durable_questions import flowc, flowc_in, start_flowc, wait_asked

PLAN = """\
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
  - id: E2
    tool_name: ask
    input:
      question: "Any note?"
      when_unanswered: {default: "none"}
    timeout: 1s
finish: {mode: output, output: "{{ {shipped: E1.answer, note: E2.answer, e0: E0} }}"}
"""

TOOLS = """\
import os


def note(n: int) -> int:
    \"\"\"Note n in the side-effect log.\"\"\"
    with open(os.environ["NOTE_LOG"], "a") as f:
        f.write(f"{n}\\n")
    return 10 * n
"""


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "tools.py").write_text(TOOLS)
    (project / "plan.yaml").write_text(PLAN)
    (project / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    env = {**os.environ, "NOTE_LOG": str(project / "notes.log"), "NO_COLOR": "1"}
    return project, env


def _pending(project: Path, env: dict, run_id: str) -> list[dict]:
    done = flowc_in(project, "runs", "--json")
    assert done.exit_code == 0, done.stderr
    runs = {r["run_id"]: r for r in json.loads(done.stdout)}
    return runs[run_id]["questions"] if run_id in runs else []


def _wait_for_question(project: Path, env: dict, run_id: str, proc: subprocess.Popen) -> dict:
    """The first question `flowc runs` lists for ``run_id``, once the run has published one
    (watched in the database, which is cheaper than a `flowc runs` process per look)."""
    wait_asked(project / ".flowc" / "durable.sqlite", run_id, proc)
    pending = _pending(project, env, run_id)
    assert pending, "a published question is missing from `flowc runs`"
    return pending[0]


def test_a_question_survives_a_restart_and_is_answered_from_another_process(tmp_path):
    project, env = _project(tmp_path)
    run = start_flowc(project, "run", "--durable", "--run-id", "ask-1", "plan.yaml", env=env)
    question = _wait_for_question(project, env, "ask-1", run)
    assert question["path"] == "E1"
    assert question["question"] == "Ship release 10?"
    assert question["choices"] == ["yes", "no"]
    run.send_signal(signal.SIGKILL)  # the waiting process dies
    run.wait()

    resumed = subprocess.Popen(
        flowc("resume", "ask-1"),
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert _wait_for_question(project, env, "ask-1", resumed)["path"] == "E1"

    wrong = flowc_in(project, "answer", "ask-1", "E1", "maybe")
    assert wrong.exit_code == 1
    assert '"maybe" is not one of "yes" | "no"' in wrong.stderr
    # a JSON list is no choice; a shell's '"yes"' (a JSON string of a choice) is: taken below
    wrong_json = flowc_in(project, "answer", "ask-1", "E1", '["yes"]')
    assert wrong_json.exit_code == 1
    assert 'is not one of "yes" | "no"' in wrong_json.stderr
    deep = subprocess.run(  # deeper than the JSON parser follows: an answer that is wrong
        flowc("answer", "ask-1", "E1", "[" * 5000 + "]" * 5000),
        cwd=project, env=env, capture_output=True,
    )  # fmt: skip
    assert deep.returncode == 1 and b"Traceback" not in deep.stderr, deep.stderr.decode()[-500:]
    assert 'is not one of "yes" | "no"' in deep.stderr.decode()
    missing = flowc_in(project, "answer", "ask-1", "E7", "yes")
    assert missing.exit_code == 1
    assert "no question waiting at 'E7' (waiting: E1)" in missing.stderr

    ok = subprocess.run(
        flowc("answer", "ask-1", "E1", '"yes"'), cwd=project, env=env, capture_output=True
    )
    assert ok.returncode == 0, ok.stderr.decode()

    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err.decode()[-2000:]
    # the resumed process tells whoever started it what the run waits on and how to answer:
    # the question asked before the crash (replayed, so no event) and the one asked after, once each
    said = err.decode()
    assert said.count('? [E1] Ship release 10? ("yes" | "no")') == 1, said
    assert "answer with: flowc answer ask-1 E1 VALUE" in said
    assert said.count("? [E2] Any note?") == 1, said
    assert "answer with: flowc answer ask-1 E2 VALUE" in said
    # E2 waited its 1 s timeout for an answer, then took its default
    assert json.loads(out) == {"shipped": "yes", "note": "none", "e0": 10}
    assert (project / "notes.log").read_text() == "1\n"  # the tool before the question ran once

    shown = flowc_in(project, "runs", "show", "ask-1", "--json")
    info = json.loads(shown.stdout)
    assert info["status"] == "ok"
    assert info["questions"] == []
    assert any(s["operation"] == "E0/tool:user__note#1" for s in info["steps"])


FLOW_ASK = """\
stage approve -> bool {
  let go = ask "Publish the digest?" expect bool default false
  return go
}
"""


def test_flowc_runs_names_a_compiled_flows_question_as_the_flow_does(tmp_path):
    # `? [E0]` alone left the user to map step ids back to the `.flow`: the listing names the
    # step in the program's terms, its `let` included, and the path after it (the machine key)
    project, env = _project(tmp_path)
    (project / "digest.flow").write_text(FLOW_ASK)
    run = subprocess.Popen(
        flowc("run", "--durable", "--run-id", "ask-label", "digest.flow"),
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        question = _wait_for_question(project, env, "ask-label", run)
        assert question["path"] == "E0" and question["label"] == "approve › go = ask", question
        listed = flowc_in(project, "runs")
        assert "? [approve › go = ask · E0] Publish the digest?" in listed.stdout, listed.output
        ok = subprocess.run(
            flowc("answer", "ask-label", "E0", "yes"), cwd=project, env=env, capture_output=True
        )
        assert ok.returncode == 0, ok.stderr.decode()
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0 and json.loads(out) is True, err.decode()[-2000:]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
