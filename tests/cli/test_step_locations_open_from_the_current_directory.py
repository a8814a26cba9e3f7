"""The console's step locations open from the directory the command runs in: `flowc run
project/boom.flow` shows `project/boom.flow:L:C` (the compiler writes `boom.flow:L:C`), and a
run redriven or resumed from a sibling directory — found through the per-user index of runs
(runtime/run_index.py) — shows its flow's path from there, on its step lines and under its
error (docs/durable.md "Which database a command reads").  Real durable runs on SQLite in
``tmp_path``; the index is the test's own ``$XDG_STATE_HOME`` (tests/conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.durable_questions import flowc_in_process, start_flowc, wait_asked

BOOM = """\
input { d: int }

stage first -> int {
  return input.d
}

stage second -> number {
  let n = ask "how many?" expect int
  return n / first
}
"""


def _line(text: str) -> int:
    """The 1-based line of BOOM that holds ``text``."""
    return BOOM[: BOOM.index(text)].count("\n") + 1


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "boom.flow").write_text(BOOM)
    (root / "flow.toml").write_text("[tools]\nentry_points = false\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    return root


def test_run_redrive_and_resume_show_step_locations_from_the_current_directory(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ask, fails = f"{_line('let n = ask')}:11", f"{_line('return n / first')}:10"
    # started in the project's directory, killed while it waits on its question
    proc = start_flowc(
        project, "run", "--durable", "--run-id", "k1", "boom.flow", "--input", '{"d": 0}'
    )
    try:
        wait_asked(project / ".flowc" / "durable.sqlite", "k1", proc)
    finally:
        proc.kill()
        proc.communicate()
    monkeypatch.chdir(project.parent / "elsewhere")
    shown = str(project / "boom.flow")  # not below this directory: absolute
    assert flowc_in_process("answer", "k1", "n", "3").exit_code == 0
    resumed = flowc_in_process("resume", "k1")
    assert resumed.exit_code == 1, resumed.output
    assert f"✓ second › n = ask  {shown}:{ask}" in resumed.stderr, resumed.stderr
    assert f"  --> {shown}:{fails}\n" in resumed.stderr, resumed.stderr

    redriven = flowc_in_process("redrive", "k1")
    assert redriven.exit_code == 1, redriven.output
    assert f"run boom  {shown}\n" in redriven.stderr, redriven.stderr
    assert f"✓ second › n = ask  {shown}:{ask}" in redriven.stderr, redriven.stderr
    assert f"  --> {shown}:{fails}\n" in redriven.stderr, redriven.stderr

    # a plain run of a flow in another directory: its steps through the path as given
    monkeypatch.chdir(project.parent)
    ran = flowc_in_process("run", os.path.join("project", "boom.flow"), "--input", '{"d": 1}')
    assert f"▶ second › n = ask  project{os.sep}boom.flow:{ask}\n" in ran.stderr, ran.stderr
