"""`flowc resume` (and `flowc redrive`) of a durable run whose `.flow` was edited since the
run started: the error's place is the run's version's, so no excerpt of the file on disk
(another line's code) is drawn under it; a note says the file changed and where the place is in
the run's version.  A file only touched (or edited back) still compiles to the run's plan: its
excerpt is drawn (docs/reference/cli.md "flowc resume")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from support.durable_questions import flowc, start_flowc, wait_asked

from agentflow import api
from agentflow.cli.common import _edited_since

FLOW = """\
flow a "asks"
stage s -> int {
  let j = ask "How many?" expect int
  let xs = [1]
  return xs[j]
}
"""


def _stopped_at_its_question(tmp_path: Path, name: str, run_id: str) -> Path:
    """``FLOW`` written as ``name`` and run durably as ``run_id`` until it asks, then its process
    killed while the question waits (the run is resumable); the flow's path."""
    flow = tmp_path / name
    flow.write_text(FLOW)
    run = start_flowc(tmp_path, "run", name, "--durable", "--run-id", run_id)
    try:
        wait_asked(tmp_path / ".flowc" / "durable.sqlite", run_id, run)
    finally:
        run.kill()  # its process stops while the question waits: resumable
        run.communicate()
    return flow


def test_resume_after_the_flow_was_edited_shows_no_excerpt_of_the_edited_file(
    tmp_path: Path,
) -> None:
    flow = _stopped_at_its_question(tmp_path, "ask5.flow", "e5")
    # two lines above the stage: line 5 on disk is now `let xs = [1]`
    flow.write_text(FLOW.replace("stage s", "// one\n// two\nstage s"))
    answered = subprocess.run(flowc("answer", "e5", "j", "5"), cwd=tmp_path, capture_output=True)
    assert answered.returncode == 0, answered.stderr.decode()
    resumed = subprocess.run(flowc("resume", "e5"), cwd=tmp_path, capture_output=True)
    err = resumed.stderr.decode()
    assert resumed.returncode == 1, err
    assert "index out of range" in err, err
    assert (
        "note: ask5.flow changed since the run started; the place is line 5:10 of the run's "
        "version" in err
    ), err
    assert "let xs" not in err and "-->" not in err and "^" not in err, err


def test_a_flow_only_touched_since_the_run_started_is_not_taken_as_changed(
    tmp_path: Path,
) -> None:
    flow = tmp_path / "ask5.flow"
    flow.write_text(FLOW)
    text, _ = api.plan_text(flow)
    started = flow.stat().st_mtime
    assert not _edited_since(str(flow), str(flow), text, started)  # written before the start
    os.utime(flow, (started + 60, started + 60))  # touched after it: the same plan
    assert not _edited_since(str(flow), str(flow), text, started)
    flow.write_text(FLOW.replace("stage s", "// one\nstage s"))
    os.utime(flow, (started + 120, started + 120))
    assert _edited_since(str(flow), str(flow), text, started)  # its lines moved
    flow.write_text('flow a "asks"\nstage s -> int {\n  return\n')
    os.utime(flow, (started + 180, started + 180))
    assert _edited_since(str(flow), str(flow), text, started)  # no longer compiles
    flow.unlink()
    assert _edited_since(str(flow), str(flow), text, started)  # gone


def test_the_step_lines_of_a_resumed_run_whose_flow_changed_follow_a_note_on_their_positions(
    tmp_path: Path,
) -> None:
    flow = _stopped_at_its_question(tmp_path, "ask6.flow", "e6")
    flow.write_text(FLOW.replace("stage s", "// one\n// two\nstage s"))
    answered = subprocess.run(flowc("answer", "e6", "j", "0"), cwd=tmp_path, capture_output=True)
    assert answered.returncode == 0, answered.stderr.decode()
    resumed = subprocess.run(flowc("resume", "e6"), cwd=tmp_path, capture_output=True)
    err = resumed.stderr.decode().splitlines()
    assert resumed.returncode == 0, err
    note = (
        "note: ask6.flow changed since the run started; the step positions shown refer to the "
        "run's original source"
    )
    assert err.count(note) == 1, err
    steps = [i for i, line in enumerate(err) if line.startswith(("▶", "✓"))]
    assert steps and err.index(note) < steps[0], err  # said before the first step line
    assert any("ask6.flow:3:11" in line for line in err), err  # the run's `ask`: line 3


def test_a_resumed_run_whose_flow_is_unchanged_has_no_note(tmp_path: Path) -> None:
    _stopped_at_its_question(tmp_path, "ask7.flow", "e7")
    answered = subprocess.run(flowc("answer", "e7", "j", "0"), cwd=tmp_path, capture_output=True)
    assert answered.returncode == 0, answered.stderr.decode()
    resumed = subprocess.run(flowc("resume", "e7"), cwd=tmp_path, capture_output=True)
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert "changed since the run started" not in resumed.stderr.decode()
