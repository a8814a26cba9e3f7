"""The commands that take a durable run's id find the run from any directory
(docs/durable.md "Which database a command reads"): a run of ``project/ask.flow`` started from
the directory above the project is in ``project/flow.toml``'s database, and ``flowc runs
show``, ``answer``, ``resume``, ``cancel`` and ``redrive`` of it — from that directory, or from
a sibling one — go to that database without ``--config``, saying so in one line; ``flowc
runs`` there lists its own (no) runs and names the database runs were started on; a run the
current directory's database holds is taken from there, silently.  Real durable runs on
SQLite in ``tmp_path``, through the real CLI (in this process); the per-user index of runs is
the test's own ``$XDG_STATE_HOME`` (tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.durable_questions import flowc_in_process, start_flowc, wait_asked

from agentflow.runtime import run_index

ASK = """\
stage decide -> text {
  let go = ask "Ship it?" expect text
  return go
}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "ask.flow").write_text(ASK)
    (root / "boom.flow").write_text('stage s -> int {\n  fail "no"\n}\n')
    (root / "flow.toml").write_text("[tools]\nentry_points = false\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    return root


def test_a_run_started_above_its_project_is_found_from_there_and_from_a_sibling(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = start_flowc(project.parent, "run", "--durable", "--run-id", "q1", "project/ask.flow")
    try:
        wait_asked(project / ".flowc" / "durable.sqlite", "q1", proc)
        _the_run_is_found_while_it_waits(project, monkeypatch)
        _, err = proc.communicate(timeout=120)  # it took the answer and ended
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err.decode()[-2000:]
    resumed = flowc_in_process("resume", "q1")  # ended: its result, from the sibling directory
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.stdout) == "yes", resumed.stdout
    assert "note: run q1 is in " in resumed.stderr, resumed.stderr

    monkeypatch.chdir(project)  # its own directory: its database, no note
    here = flowc_in_process("runs", "show", "q1")
    assert here.exit_code == 0 and "note:" not in here.stderr, here.output


def _the_run_is_found_while_it_waits(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = run_index.recall("q1")
    assert entry is not None and entry.config == str((project / "flow.toml").resolve())
    assert entry.database == str((project / ".flowc" / "durable.sqlite").resolve())
    note = "note: run q1 is in project/flow.toml's database, where it was started"

    shown = flowc_in_process("runs", "show", "q1")
    assert shown.exit_code == 0, shown.output
    assert "run q1: " in shown.stdout and "Ship it?" in shown.stdout, shown.stdout
    assert note in shown.stderr, shown.stderr

    listed = flowc_in_process("runs")  # this directory's database: none; where runs were started
    assert "no durable runs" in listed.stderr, listed.stderr
    assert "runs were started elsewhere (the latest: q1): flowc runs --config " in listed.stderr
    assert "project/flow.toml" in listed.stderr, listed.stderr

    monkeypatch.chdir(project.parent / "elsewhere")  # a sibling: the same
    answered = flowc_in_process("answer", "q1", "go", "yes")
    assert answered.exit_code == 0, answered.output
    assert "answered [decide › go" in answered.stderr, answered.stderr
    assert "note: run q1 is in " in answered.stderr, answered.stderr


def test_cancel_and_redrive_from_elsewhere_act_on_the_runs_database(project: Path) -> None:
    failed = flowc_in_process("run", "--durable", "--run-id", "b1", "project/boom.flow")
    assert failed.exit_code == 1, failed.output
    redriven = flowc_in_process("redrive", "b1")
    assert redriven.exit_code == 1, redriven.output  # it fails again, in the same database
    assert "note: run b1 is in project/flow.toml's database" in redriven.stderr
    assert "(redrive of b1)" in redriven.stderr, redriven.stderr
    assert not (project.parent / ".flowc").exists()  # nothing created in this directory
    listed = flowc_in_process("runs", "--config", "project/flow.toml")
    assert listed.stdout.count("error") == 2, listed.stdout  # b1 and its redrive
    cancelled = flowc_in_process("cancel", "b1")
    assert "note: run b1 is in project/flow.toml's database" in cancelled.stderr
    assert "no durable run" not in cancelled.output, cancelled.output


def test_an_unknown_run_is_looked_for_in_this_directory_only(project: Path) -> None:
    missing = flowc_in_process("runs", "show", "nope")
    assert missing.exit_code == 1
    assert "no durable run 'nope'" in missing.stderr, missing.stderr
    assert "note:" not in missing.stderr
