"""`flowc cancel` of a durable run whose process waits on a question (an `ask` with no
timeout): the waiting process notices within seconds and exits, `flowc runs` lists the run as
`cancelled` and its lock is free (`flowc resume` is not refused as "running in another
process").  Real processes throughout."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from support.durable_questions import flowc, flowc_in, start_flowc, wait_asked
from support.timing import Stretch

#: One question that waits for ever: only a cancel ends the run.
PLAN = """\
version: 1
name: waiter
steps:
  - id: E0
    tool_name: ask
    input: {question: "Go?"}
finish: {mode: output, output: "{{ E0.answer }}"}
"""


def _cancel_and_time_the_exit(tmp_path: Path, run_id: str, proc: subprocess.Popen) -> str:
    """Cancel ``run_id`` and return the waiting process's stderr; it must exit within 5 s
    (stretched by the machine's load) of the cancel command's end."""
    time.sleep(0.5)  # the process is in its wait, not just publishing the question
    with Stretch() as stretch:
        cancelled = subprocess.run(flowc("cancel", run_id), cwd=tmp_path, capture_output=True)
        assert cancelled.returncode == 0, cancelled.stderr.decode()
        start = time.monotonic()
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("the waiting process is still blocked on the question") from None
        took = time.monotonic() - start
    assert took < stretch.bound(5.0), f"the waiting process took {took:.1f} s to notice"
    return err.decode()


def _listed(tmp_path: Path, run_id: str) -> str:
    listed = flowc_in(tmp_path, "runs", "--json")
    assert listed.exit_code == 0, listed.stderr
    return {r["run_id"]: r for r in json.loads(listed.stdout)}[run_id]["status"]


def test_the_runs_own_process_waiting_on_a_question_exits_when_the_run_is_cancelled(tmp_path):
    (tmp_path / "plan.yaml").write_text(PLAN)
    run = start_flowc(tmp_path, "run", "--durable", "--run-id", "w1", "plan.yaml")
    wait_asked(tmp_path / ".flowc" / "durable.sqlite", "w1", run)
    err = _cancel_and_time_the_exit(tmp_path, "w1", run)
    assert run.returncode == 1
    assert "cancelled" in err and "Traceback" not in err, err[-2000:]
    assert _listed(tmp_path, "w1") == "cancelled"
    again = subprocess.run(flowc("resume", "w1"), cwd=tmp_path, capture_output=True)
    assert "running in another process" not in again.stderr.decode(), again.stderr.decode()
    assert "cancelled" in again.stderr.decode(), again.stderr.decode()
