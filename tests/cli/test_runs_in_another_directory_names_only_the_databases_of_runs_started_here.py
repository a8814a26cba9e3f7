"""`flowc runs` lists this directory's database only; where it finds no runs it names the
databases of runs started from here or below (a project under the current directory: the
user typed it one level too high), not those of runs started in unrelated directories — which
it counts in one line, and `flowc runs --elsewhere` names (docs/durable.md "Which database a
command reads"; docs/decisions.md "flowc runs names only this directory's other databases").
The index is the test's own `$XDG_STATE_HOME` (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.durable_questions import flowc_in_process

from agentflow.runtime import run_index


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp/work/project`` with a run in the index (started in the project), and an empty
    ``tmp/fresh`` beside ``work``."""
    monkeypatch.setenv("NO_COLOR", "1")
    project = tmp_path / "work" / "project"
    (project / ".flowc").mkdir(parents=True)
    (project / "flow.toml").write_text("[tools]\nentry_points = false\n")
    (project / ".flowc" / "durable.sqlite").write_bytes(b"")
    (tmp_path / "fresh").mkdir()
    monkeypatch.chdir(project)
    run_index.remember("p1", str(project / ".flowc" / "durable.sqlite"), project / "flow.toml")
    return tmp_path.resolve()


def test_a_fresh_directory_does_not_name_an_unrelated_projects_database(
    places: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(places / "fresh")
    listed = flowc_in_process("runs")
    assert listed.exit_code == 0, listed.output
    assert "no durable runs" in listed.stderr, listed.stderr
    assert "project" not in listed.stderr and "p1" not in listed.stderr, listed.stderr
    assert (
        "  1 other database holds runs started in other directories: flowc runs --elsewhere "
        "names it"
    ) in listed.stderr, listed.stderr


def test_elsewhere_names_the_databases_of_runs_started_anywhere(
    places: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(places / "fresh")
    listed = flowc_in_process("runs", "--elsewhere")
    assert listed.exit_code == 0, listed.output
    config = places / "work" / "project" / "flow.toml"
    assert (
        f"  runs were started elsewhere (the latest: p1): flowc runs --config {config}"
    ) in listed.stderr, listed.stderr
    assert "other database" not in listed.stderr


def test_the_directory_above_a_project_names_its_database(
    places: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(places / "work")
    listed = flowc_in_process("runs")
    assert (
        "  runs were started elsewhere (the latest: p1): flowc runs --config project/flow.toml"
    ) in listed.stderr, listed.stderr
    assert "other database" not in listed.stderr
