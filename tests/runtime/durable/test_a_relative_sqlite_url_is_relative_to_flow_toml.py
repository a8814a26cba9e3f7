"""``[durable] database = "sqlite:///REL"`` in ``flow.toml`` is relative to the file's directory,
as a plain ``database = "REL"`` is — not to the directory a command is started from
(docs/reference/configuration.md "[durable]"); ``sqlite:////ABS`` stays absolute, the query
(``?synchronous=…``) stays, and a ``--database sqlite:///REL`` typed on the command line is the
current directory's, like any path typed there."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.api import durable_database
from agentflow.cli import main
from agentflow.runtime.config import load_config


def _project(tmp_path: Path, database: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "flow.toml").write_text(f'[durable]\ndatabase = "{database}"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return project


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("sqlite:///rel.sqlite", "project/rel.sqlite"),
        (
            "sqlite:///state/rel.sqlite?synchronous=normal",
            "project/state/rel.sqlite?synchronous=normal",
        ),
        ("rel.sqlite", "project/rel.sqlite"),  # the plain path, as before
    ],
)
def test_a_relative_sqlite_url_in_flow_toml_is_under_its_directory_from_any_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, written: str, expected: str
) -> None:
    project = _project(tmp_path, written)
    monkeypatch.chdir(tmp_path / "elsewhere")
    url = durable_database(config=load_config(project / "flow.toml"))
    assert url == f"sqlite:///{tmp_path / expected}"


def test_an_absolute_sqlite_url_and_a_command_line_url_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    absolute = tmp_path / "abs" / "x.sqlite"
    project = _project(tmp_path, f"sqlite:///{absolute}")
    monkeypatch.chdir(tmp_path / "elsewhere")
    config = load_config(project / "flow.toml")
    assert durable_database(config=config) == f"sqlite:///{absolute}"
    # typed on the command line: the current directory's, as any path typed there
    assert durable_database(config=config, database="sqlite:///cli.sqlite") == (
        "sqlite:///cli.sqlite"
    )


def test_flowc_runs_from_another_directory_reads_the_projects_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, "sqlite:///.flowc/runs.sqlite")
    monkeypatch.chdir(tmp_path / "elsewhere")
    res = CliRunner().invoke(main, ["runs", "--config", str(project / "flow.toml")])
    assert res.exit_code == 0, res.output
    missing = project / ".flowc" / "runs.sqlite"
    assert f"no durable runs (no database at {missing})" in res.stderr, res.stderr
    assert list((tmp_path / "elsewhere").iterdir()) == []
