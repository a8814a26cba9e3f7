"""A small crash battery (tests/support/crash_battery.py; bench/crash_battery.py runs dozens):
a durable map-with-agents run killed with SIGKILL — once, and killed again while resuming —
then resumed to its end, its ``--trace`` continued by every process.  The trace holds each
finished event (``tool_finished``, ``model_call``, ``step_finished``) exactly as often as an
uninterrupted run's — none written twice, none lost — and never one for a call not yet
recorded at a kill; the output is the uninterrupted run's.  And, made certain rather than left to
the timing of a kill: a finished event the killed process had not written although its
operation was recorded is written by the resumed process, once."""

from __future__ import annotations

import pytest
from support.crash_battery import run_battery


@pytest.mark.parametrize(
    "synchronous",
    ["full", pytest.param("normal", marks=pytest.mark.battery)],  # README.md "The battery tier"
)
def test_killed_and_resumed_runs_trace_each_finished_event_once(tmp_path, synchronous):
    # a SIGKILL is a process crash, which every `synchronous` level survives (docs/durable.md
    # "Big maps: item records and synchronous"; `extra` is `full` and a synced directory)
    figures = run_battery(tmp_path, kills=2, doubles=1, items=3, seed=3, synchronous=synchronous)

    summary = figures.summary()
    assert figures.kills >= 2 and figures.double_crashes == 1, summary
    assert figures.wrong_outputs == 0, summary
    assert figures.duplicated_finished == 0, summary
    assert figures.lost_finished == 0, summary
    assert figures.finished_before_recorded == 0, summary


PLAN = """\
version: 1
name: steps
input_schema: {type: object}
steps:
  - {id: E0, tool_name: user__note, input: {n: 0}}
  - {id: E1, tool_name: user__note, input: {n: 1}}
  - {id: E2, tool_name: user__note, input: {n: 2}}
finish: {mode: output, output: "{{ [E0, E1, E2] }}"}
"""

TOOLS = """\
import json, os, signal, time
from pathlib import Path


def note(n: int) -> int:
    \"\"\"Return 2n; the first call with n = 2 kills its own process (SIGKILL), once E1's
    events are in the trace (a call's record is written behind it, its events after that:
    runtime/durable/items.py).\"\"\"
    marker = Path(os.environ["KILL_MARKER"])
    if n == 2 and not marker.exists():
        marker.write_text("")
        trace, deadline = Path(os.environ["TRACE_FILE"]), time.monotonic() + 60
        while time.monotonic() < deadline:
            events = [json.loads(line) for line in trace.read_text().splitlines() if line]
            if any(e["kind"] == "step_finished" and e["path"] == "E1" for e in events):
                break
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGKILL)
    return 2 * n
"""


def test_a_finished_event_the_killed_process_had_not_written_is_written_on_resume(tmp_path):
    """The process dies after E1's call was recorded and before its events were written
    (made certain here by taking them out of the trace the killed process left): the resumed
    process, replaying E1, writes them — once — into the continued trace."""
    import json
    import os
    import subprocess
    import sys
    from collections import Counter

    (tmp_path / "plan.yaml").write_text(PLAN)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    trace = tmp_path / "trace.jsonl"
    env = {
        **os.environ, "KILL_MARKER": str(tmp_path / "killed"), "TRACE_FILE": str(trace),
        "NO_COLOR": "1",
    }  # fmt: skip
    flowc = [sys.executable, "-m", "agentflow"]
    killed = subprocess.run(
        [*flowc, "run", "--durable", "--run-id", "steps", "plan.yaml", "--trace", str(trace)],
        cwd=tmp_path, env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]

    def finished() -> Counter:
        events = [json.loads(line) for line in trace.read_text().splitlines()]
        return Counter(
            (e["kind"], e["path"])
            for e in events
            if e["kind"] in ("tool_finished", "step_finished", "model_call")
        )

    assert finished() == {
        (k, p): 1 for k in ("tool_finished", "step_finished") for p in ("E0", "E1")
    }
    kept = [
        line
        for line in trace.read_text().splitlines()
        if not (json.loads(line)["path"] == "E1" and json.loads(line)["kind"].endswith("_finished"))
    ]
    trace.write_text("".join(line + "\n" for line in kept))

    resumed = subprocess.run(
        [*flowc, "resume", "steps", "--trace", str(trace)],
        cwd=tmp_path, env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert json.loads(resumed.stdout) == [0, 2, 4]
    every = {(k, p): 1 for k in ("tool_finished", "step_finished") for p in ("E0", "E1", "E2")}
    assert finished() == every
