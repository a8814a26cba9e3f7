"""Acceptance: `flowc check`, `compile` and `run` of bug-triage.flow end to end (issue 2).

The model is the real loopback chat-completions server of ``agentflow.testing` (src/agentflow/testing/chat_server.py)`
driven by :class:`support.triage_script.TriageScript`, whose investigator really calls
``list_dir``, ``grep`` and ``read_file`` on this project's own ``src/`` tree through ``flowc run``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from support.chat_server import TEST_API_KEY, answer
from support.paths import EXAMPLES
from support.paths import REPO as ROOT
from support.paths import SPEC_EXAMPLES as SHARED
from support.triage_script import TriageScript

FLOWC = [sys.executable, "-m", "agentflow"]


def flowc(
    *args: str, env: dict | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    full_env.update(env or {})
    return subprocess.run(
        FLOWC + list(args), capture_output=True, text=True, env=full_env, cwd=cwd, timeout=120
    )


def write_config(server, directory: Path) -> Path:
    extra = """
[agents.repo-investigator]
system_prompt = "You investigate repositories."
[teams.dev-team]
main = "lead"
members = { lead = {}, backend = { system_prompt = "You own the runtime." }, frontend = {} }
"""
    return server.write_config(directory, extra=extra)


@pytest.mark.parametrize("path", sorted(SHARED.glob("*.flow")), ids=lambda p: p.name)
def test_check_every_shared_example_is_clean(path):
    proc = flowc("check", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error" not in proc.stdout


def test_check_syntax_error_on_line_3():
    proc = flowc("check", str(SHARED / "diagnostics" / "syntax.flow"))
    assert proc.returncode == 1
    first = proc.stdout.splitlines()[0]
    assert ":3:" in first and "error[syntax-error]" in first, proc.stdout
    # the source line and a caret follow the header
    assert "let a = { x: 1 ]" in proc.stdout and "^" in proc.stdout


def test_compile_is_deterministic_and_validates(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for out in (a, b):
        proc = flowc("compile", str(SHARED / "bug-triage.flow"), "-o", str(out))
        assert proc.returncode == 0, proc.stderr
    assert a.read_bytes() == b.read_bytes()
    proc = flowc("plan", "validate", str(a), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    from agentflow.ir.loader import load_plan

    plan = load_plan(a)
    assert [s.tool_name for s in plan.steps] == ["agent", "exit", "agent", "map"]
    assert all(s.meta.get("source", "").startswith("bug-triage.flow:") for s in plan.steps)


def test_run_bug_triage_against_scripted_model(chat_server, tmp_path):
    script = TriageScript()
    chat_server.script(script)
    config = write_config(chat_server, tmp_path)
    trace = tmp_path / "trace.jsonl"
    proc = flowc(
        "run",
        str(SHARED / "bug-triage.flow"),
        "--input",
        f"@{EXAMPLES / 'bug-report.json'}",
        "--workspace",
        str(ROOT / "src"),
        "--trace",
        str(trace),
        "--config",
        str(config),
        env={"SCRIPTED_API_KEY": TEST_API_KEY},
    )
    assert proc.returncode == 0, proc.stderr
    output = json.loads(proc.stdout)
    # output conforms to the ChangeResult[] contract compiled from the program
    from agentflow.api import compile_flow

    plan = compile_flow(SHARED / "bug-triage.flow").plan
    item_schema = plan["steps"][3]["input"]["do"]["input"]["output_schema"]
    jsonschema.validate(output, {"type": "array", "items": item_schema})
    assert sorted(o["owner"] for o in output) == ["backend", "frontend"]

    events = [json.loads(line) for line in trace.read_text().splitlines()]
    tool_events = [e for e in events if e["kind"] == "tool_started"]
    paths = [e["path"] for e in tool_events]
    assert "E0/agent.1/builtin__list_dir" in paths
    assert "E0/agent.2/builtin__grep" in paths
    assert "E0/agent.3/builtin__read_file" in paths
    # the grep really ran on src/: the investigator's suspect files exist there
    finished = [e for e in events if e["kind"] == "step_finished" and e["path"] == "E0"]
    repro = finished[0]["data"]["result"]
    assert repro["suspect_files"], repro
    for f in repro["suspect_files"]:
        assert (ROOT / "src" / f).is_file()
    assert "def run_plan" in repro["hypothesis"]
    # one agent per work item, concurrently: the two map items overlap in time
    spans = {}
    for e in events:
        if e["path"] in ("E3/do.0", "E3/do.1") and e["kind"] in ("step_started", "step_finished"):
            spans.setdefault(e["path"], {})[e["kind"]] = e["time"]
    assert set(spans) == {"E3/do.0", "E3/do.1"}
    (s0, f0), (s1, f1) = (
        (spans[p]["step_started"], spans[p]["step_finished"]) for p in ("E3/do.0", "E3/do.1")
    )
    assert s1 < f0 and s0 < f1, spans
    assert chat_server.max_in_flight >= 2
    assert TEST_API_KEY not in trace.read_text()


def test_never_conforming_agent_is_a_workflow_error_naming_the_flow_line(chat_server, tmp_path):
    chat_server.script(lambda request: answer({"reproduced": "maybe"}))
    config = write_config(chat_server, tmp_path)
    proc = flowc(
        "run",
        str(SHARED / "bug-triage.flow"),
        "--input",
        f"@{EXAMPLES / 'bug-report.json'}",
        "--workspace",
        str(tmp_path),
        "--config",
        str(config),
        env={"SCRIPTED_API_KEY": TEST_API_KEY},
    )
    assert proc.returncode == 1
    assert "output_validation" in proc.stderr
    assert "bug-triage.flow:42" in proc.stderr  # the line of `agent(investigator)`
    assert "reproduce" in proc.stderr


def test_run_without_a_model_fails_before_the_first_step(tmp_path):
    proc = flowc(
        "run",
        str(SHARED / "bug-triage.flow"),
        "--input",
        f"@{EXAMPLES / 'bug-report.json'}",
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    assert "OPENAI_BASE_URL" in proc.stderr or "flow.toml" in proc.stderr
    assert "Traceback" not in proc.stderr
