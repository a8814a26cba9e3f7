"""One run, one budget (docs/models.md "Budgets"): a durable run killed with SIGKILL and
finished by ``flowc resume`` counts the model calls it replays from its record — their recorded
usage — in its ``usage`` and against its budget, without asking the provider again.  A map of 5
items, each an agent call then a tool; ``budget: {inferences: 3}``; the process is killed in
item 2's tool (3 calls made): the resumed run ends ``budget_exceeded`` before a 4th call, as an
uninterrupted run does, and reports the 3 calls."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from support.crash_battery import project_files
from support.durable_questions import flowc, recorded_operations

from agentflow.testing.chat_server import answer

PLAN = """\
version: 1
name: budgeted
budget: {inferences: 3}
steps:
  - id: E0
    tool_name: map
    input:
      over: [0, 1, 2, 3, 4]
      concurrency: 1
      do: {tool_name: plan__item, input: {x: "{{ item }}"}}
finish: {mode: output, output: "{{ E0 }}"}
plans:
  item:
    name: item
    steps:
      - id: S0
        tool_name: agent
        input:
          prompt: "Give {{ input.x }}."
          tools: none
          max_iterations: 1
          output_schema: {type: object, properties: {a: {type: integer}}, required: [a]}
      - id: S1
        tool_name: user__note
        input: {n: "{{ input.x }}"}
    finish: {mode: output, output: "{{ S0.output.a + S1 }}"}
"""

TOOLS = """\
import os, time


def note(n: int) -> int:
    \"\"\"Note n in the side-effect log and return 2n; item 2's hangs when asked (killed).\"\"\"
    with open(os.environ["NOTE_LOG"], "a") as f:
        f.write(f"start {n}\\n")
    if n == int(os.environ.get("NOTE_SLOW", "-1")):
        time.sleep(60)
    return 2 * n
"""


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_a_resumed_run_counts_its_replayed_model_calls_in_its_budget_and_usage(
    tmp_path: Path, chat_server
):
    chat_server.script(lambda request: answer({"a": 1}, usage=(7, 3)))
    project = tmp_path / "project"
    env = project_files(project, chat_server, PLAN, TOOLS)
    env["NOTE_SLOW"] = "2"
    proc = subprocess.Popen(
        flowc("run", "--durable", "--run-id", "b-1", "plan.yaml", "--json"),
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            # killed in item 2's tool, once its model call (the run's 3rd) is recorded
            if "start 2" in _lines(project / "notes.log") and (
                sum("/model:" in n for n in recorded_operations(project)) >= 3
            ):
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(chat_server.requests) == 3

    env.pop("NOTE_SLOW")
    resumed = subprocess.run(
        flowc("resume", "b-1", "--json"), cwd=project, env=env, capture_output=True, timeout=180
    )
    out = json.loads(resumed.stdout)
    # the budget counts the 3 replayed calls: the 4th is refused, as in an uninterrupted run
    assert out["status"] == "error", out
    assert out["error"]["code"] == "budget_exceeded"
    assert "3 model call(s) made" in out["error"]["message"]
    assert len(chat_server.requests) == 3  # the replayed calls asked nothing again
    # the usage covers the whole run: the 3 calls' recorded usage
    assert out["usage"]["inferences"] == 3
    assert (out["usage"]["input_tokens"], out["usage"]["output_tokens"]) == (21, 9)
    assert sum(step["inferences"] for step in out["usage"]["by_step"].values()) == 3
