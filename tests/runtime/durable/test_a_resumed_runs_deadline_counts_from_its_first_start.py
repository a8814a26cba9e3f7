"""A durable run's `deadline` counts from the run's recorded first start, across a kill and a
resume (docs/reference/programs.md "deadline"): a run resumed after its deadline has passed
ends at once with `deadline_exceeded`, its time not started afresh."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from support.durable_questions import flowc, start_flowc, wait_asked

FLOW = """\
flow d "a deadline across a resume"
deadline 3s
stage s -> int {
  let j = ask "How many?" expect int
  return j
}
"""


def test_a_run_resumed_after_its_deadline_passed_ends_with_deadline_exceeded(
    tmp_path: Path,
) -> None:
    (tmp_path / "d.flow").write_text(FLOW)
    started = time.time()
    run = start_flowc(tmp_path, "run", "d.flow", "--durable", "--run-id", "d1")
    try:
        wait_asked(tmp_path / ".flowc" / "durable.sqlite", "d1", run)
    finally:
        run.kill()  # its process stops while the question waits, well within its 3 s
        run.communicate()
    answered = subprocess.run(flowc("answer", "d1", "j", "7"), cwd=tmp_path, capture_output=True)
    assert answered.returncode == 0, answered.stderr.decode()
    time.sleep(
        max(0.0, started + 3.5 - time.time())
    )  # the deadline, counted from the start, passes
    resumed = subprocess.run(flowc("resume", "d1"), cwd=tmp_path, capture_output=True)
    err = resumed.stderr.decode()
    assert resumed.returncode != 0, err
    assert "error[deadline_exceeded]" in err and "the workflow deadline has passed" in err, err
