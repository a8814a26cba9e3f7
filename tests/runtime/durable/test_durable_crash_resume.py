"""A durable run survives SIGKILL: real `flowc run --durable` / `flowc resume` subprocesses, a
plan with a map of 20 multi-step items (a tool call, then an agent whose first round calls a
tool and whose second answers) at concurrency 5, then a map of 20 one-call items (which run in the
run's own record, not as child units), the scripted model server
(tests/support/chat_server.py) answering from the request so replies never depend on order.

Each process of the chain is killed with SIGKILL at the next kill point (after so many tool calls
began, or so many model requests arrived), then `flowc resume` continues the run; the last
process finishes it.  Checked: the output equals an uninterrupted run's (0 wrong mappings), and
the side-effect log (a user tool appends ``start N`` / ``end N`` to a file) shows that no call
recorded as finished at a kill ran again; only calls in flight at a kill ran twice."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from support.crash_battery import model, note_of, project_files, traced_notes

ITEMS = 20

PLAN = """\
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
      concurrency: 5
      do:
        tool_name: plan__item
        input: {x: "{{ item }}"}
  - id: E2
    tool_name: user__note
    input: {n: 99}
  - id: E3
    tool_name: map
    input:
      over: "{{ input.xs }}"
      concurrency: 5
      do: {tool_name: user__note, input: {n: "{{ 2000 + item }}"}}
finish: {mode: output, output: "{{ {first: E0, items: E1, last: E2, notes: E3} }}"}
plans:
  item:
    name: item
    steps:
      - id: S0
        tool_name: user__note
        input: {n: "{{ input.x }}"}
      - id: S1
        tool_name: agent
        input:
          prompt: "Process item {{ input.x }} (first step gave {{ S0 }})."
          tools: [user__note]
          max_iterations: 3
          output_schema:
            type: object
            properties: {v: {type: integer}, x: {type: integer}}
            required: [v, x]
    finish: {mode: output, output: "{{ {x: input.x, s0: S0, agent: S1.output} }}"}
"""

TOOLS = """\
import os, time


def note(n: int) -> int:
    \"\"\"Note n in the side-effect log and return 2n.\"\"\"
    log = os.environ["NOTE_LOG"]
    with open(log, "a") as f:
        f.write(f"start {n}\\n")
    time.sleep(float(os.environ.get("NOTE_SLEEP", "0.15")))
    with open(log, "a") as f:
        f.write(f"end {n}\\n")
    return 2 * n
"""


def _project(tmp_path: Path, chat_server) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "project"
    return project, project_files(project, chat_server, PLAN, TOOLS)


def _flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentflow", *args]


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _recorded_calls(db: Path) -> set[int]:
    """The notes (``n``) whose tool step is recorded as finished in the durable database."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        names = [row[0] for row in conn.execute("select function_name from operation_outputs")]
        tables = {row[0] for row in conn.execute("select name from sqlite_master")}
        if "agentflow_items" in tables:  # one-call units' records (runtime/durable/items.py)
            names += [row[0] for row in conn.execute("select name from agentflow_items")]
    found = set()
    for name in names:
        if "/tool:user__note" in name:
            n = note_of(name)
            assert n is not None, name
            found.add(n)
    return found


def _run_chain(project: Path, env: dict, chat_server, points: list[tuple[str, int]]) -> dict:
    """Start the run, kill each process at the next point, resume; returns the outcome."""
    log = project / "notes.log"
    run_id = f"crash-{len(points)}-{points[0][1]}"
    xs = json.dumps({"xs": list(range(1, ITEMS + 1))})
    trace = ("--trace", "trace.jsonl")  # every process adds its events (resume appends)
    argv = _flowc("run", "--durable", "--run-id", run_id, "plan.yaml", "--input", xs, *trace)
    kills = 0
    finished_at_kill: list[set[int]] = []
    started_at_kill: list[Counter] = []
    for kind, at in [*points, ("end", 0)]:
        proc = subprocess.Popen(
            argv, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        if kind == "end":
            out, err = proc.communicate(timeout=240)
            assert proc.returncode == 0, err.decode()[-3000:]
            break
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            if kind == "tool":
                reached = sum(1 for line in _lines(log) if line.startswith("start")) >= at
            else:
                reached = len(chat_server.requests) >= at
            if reached:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
                finished_at_kill.append(_recorded_calls(project / ".flowc" / "durable.sqlite"))
                started_at_kill.append(
                    Counter(
                        int(line.split()[1]) for line in _lines(log) if line.startswith("start")
                    )
                )
                break
            time.sleep(0.01)
        else:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err.decode()[-3000:]
            if proc.returncode == 0 and kind != "end":
                # the run finished before this point: nothing left to kill
                break
        assert proc.returncode is not None
        argv = _flowc("resume", run_id, *trace)
    return {
        "output": json.loads(out),
        "kills": kills,
        "finished_at_kill": finished_at_kill,
        "started_at_kill": started_at_kill,
        "starts": Counter(int(line.split()[1]) for line in _lines(log) if line.startswith("start")),
        "ends": Counter(int(line.split()[1]) for line in _lines(log) if line.startswith("end")),
        "traced": traced_notes(project / "trace.jsonl"),
    }


def _uninterrupted(project: Path, env: dict, monkeypatch) -> dict:
    """The output of the same run, plain and in this process."""
    import agentflow

    monkeypatch.setenv("NOTE_LOG", env["NOTE_LOG"])
    monkeypatch.setenv("SCRIPTED_API_KEY", env["SCRIPTED_API_KEY"])
    monkeypatch.chdir(project)
    result = agentflow.run_sync(
        project / "plan.yaml",
        {"xs": list(range(1, ITEMS + 1))},
        config=project / "flow.toml",
        workspace=project,
    )
    assert result.status == "ok", result.error
    return result.output


#: One chain of kill points, in the order the run reaches them (tool calls begun / model
#: requests arrived, counted over the whole chain): in the first map's items (tool, agent
#: rounds, the agent's tool call) and in the one-call map after it.
ALL_POINTS = [
    ("model", 1), ("tool", 2), ("tool", 9), ("model", 10), ("tool", 14), ("model", 20),
    ("tool", 24), ("model", 28), ("model", 34), ("tool", 52), ("tool", 58),
]  # fmt: skip
#: The suite kills at five of them, one in each part of the run: the first agent's first
#: request, the items' tool calls, the agents' rounds mid-map, the first map's end, the
#: one-call map. ``FLOW_CRASH_POINTS=all`` kills at all eleven (bench/README.md);
#: ``bench/crash_battery.py`` kills at random points, dozens of times.
POINTS = (
    ALL_POINTS
    if os.environ.get("FLOW_CRASH_POINTS") == "all"
    else [("model", 1), ("tool", 9), ("model", 20), ("model", 34), ("tool", 52)]
)


@pytest.mark.battery  # README.md "The battery tier"
def test_a_run_killed_at_each_point_resumes_to_the_uninterrupted_output(
    tmp_path, chat_server, monkeypatch
):
    points = POINTS
    project, env = _project(tmp_path, chat_server)
    chat_server.script(model)
    expected = _uninterrupted(project, env, monkeypatch)
    assert len(expected["items"]) == ITEMS
    (project / "notes.log").unlink()
    chat_server.requests.clear()

    outcome = _run_chain(project, env, chat_server, points)

    assert outcome["kills"] == len(points) >= 5
    assert outcome["output"] == expected  # every item carries its own result: 0 wrong mappings
    every_call = {0, 99, *range(1, ITEMS + 1), *range(1001, 1001 + ITEMS)}
    every_call |= set(range(2001, 2001 + ITEMS))
    starts = outcome["starts"]
    assert set(starts) == every_call
    # a call recorded as finished at a kill never ran again; only calls in flight ran twice
    for finished, started in zip(
        outcome["finished_at_kill"], outcome["started_at_kill"], strict=True
    ):
        for n in finished:
            assert started[n] == starts[n], (n, started[n], starts[n])
    repeated = {n for n, c in starts.items() if c > 1}
    in_flight = set().union(
        *(
            set(s) - f
            for f, s in zip(outcome["finished_at_kill"], outcome["started_at_kill"], strict=True)
        )
    )
    assert repeated <= in_flight
    # the trace holds each call's finish at most once per time it really ran, never again on
    # replay; one is missing only when a kill fell between recording the call and writing its
    # event (the call is then recorded as finished at that kill)
    traced, ends = outcome["traced"], outcome["ends"]
    assert all(traced[n] <= ends[n] for n in traced), (traced, ends)
    recorded_at_a_kill = set().union(*outcome["finished_at_kill"])
    assert every_call - set(traced) <= recorded_at_a_kill
