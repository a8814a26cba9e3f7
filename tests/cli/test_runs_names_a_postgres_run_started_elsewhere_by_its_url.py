"""``flowc runs``' "runs were started elsewhere" hint for a run started on a PostgreSQL URL of
its own names that URL — its password ``***``, never as given, in the hint or the run index —
and says to write the password back; a line of an earlier flowc that recorded no URL says how
to name it: never ``--database ''`` (docs/durable.md "Which database a command reads").  The
index is the test's own ``$XDG_STATE_HOME`` (tests/conftest.py); no server is needed: the
hint reads the index only."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.durable_questions import flowc_in_process

from agentflow.runtime import run_index


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path.resolve()


def test_a_postgres_run_is_named_by_its_url_with_the_password_masked(elsewhere: Path) -> None:
    run_index.remember("pg1", "postgresql://u:s3cretpw@db.example:5432/runs", None, own=True)
    listed = flowc_in_process("runs")
    assert listed.exit_code == 0, listed.output
    assert (
        "(the latest: pg1): flowc runs --database 'postgresql://u:***@db.example:5432/runs' "
        "(with its password for ***)"
    ) in listed.stderr, listed.stderr
    assert "--database ''" not in listed.stderr
    assert "s3cretpw" not in run_index.index_path().read_text()


def test_a_postgres_run_without_a_password_is_named_by_its_url_as_it_is(elsewhere: Path) -> None:
    run_index.remember("pg2", "postgresql://u@db.example/runs", None, own=True)
    listed = flowc_in_process("runs")
    assert "(the latest: pg2): flowc runs --database postgresql://u@db.example/runs\n" in (
        listed.stderr
    ), listed.stderr


def test_a_postgres_run_with_a_flow_toml_and_a_url_of_its_own_is_named_by_the_url(
    elsewhere: Path,
) -> None:
    project = elsewhere / "p"
    project.mkdir()
    (project / "flow.toml").write_text("[tools]\nentry_points = false\n")
    run_index.remember("pg3", "postgresql://u@db.example/runs", project / "flow.toml", own=True)
    listed = flowc_in_process("runs")
    assert "(the latest: pg3): flowc runs --database postgresql://u@db.example/runs" in (
        listed.stderr
    ), listed.stderr
    assert "--config" not in listed.stderr


def test_an_index_line_of_an_earlier_flowc_without_the_url_says_how_to_name_it(
    elsewhere: Path,
) -> None:
    path = run_index.index_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {"run": "old1", "database": None, "config": None, "at": 1.0, "own": True}
    path.write_text(json.dumps(line) + "\n")
    os.chmod(path, 0o600)
    listed = flowc_in_process("runs")
    assert (
        "(the latest: old1): flowc runs --database URL (the PostgreSQL or Temporal URL it was "
        "started with)"
    ) in listed.stderr, listed.stderr
    assert "--database ''" not in listed.stderr
