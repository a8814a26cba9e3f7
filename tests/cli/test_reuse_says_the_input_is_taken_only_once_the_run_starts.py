"""`flowc run FILE --reuse RUN` without `--input` says `note: no --input: the input of run RUN is
taken` once the run started — RUN found and its input taken, the run id free — and never before
the error that RUN is not there or that `--run-id` is taken (docs/reference/cli.md `--input`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """input { n: int }
stage s -> int {
  return input.n + 1
}
"""

NOTE = "note: no --input: the input of run r1 is taken"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "add.flow").write_text(FLOW)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    first = _cli("run", "add.flow", "--durable", "--run-id", "r1", "--input", '{"n": 1}')
    assert first.exit_code == 0, first.output
    yield tmp_path
    shutdown()


def _cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    shutdown()
    return result


def test_reuse_of_a_run_that_does_not_exist_says_nothing_is_taken(project):
    missing = _cli("run", "add.flow", "--reuse", "nope")
    assert missing.exit_code == 1
    assert "note:" not in missing.stderr
    assert missing.stderr.startswith("error: no durable run 'nope'"), missing.stderr


def test_reuse_into_a_run_id_already_taken_says_nothing_is_taken(project):
    taken = _cli("run", "add.flow", "--reuse", "r1", "--run-id", "r1")
    assert taken.exit_code == 1
    assert "note:" not in taken.stderr
    assert taken.stderr.startswith("error: a durable run 'r1' exists already"), taken.stderr


def test_reuse_that_starts_says_the_input_is_taken_first(project):
    again = _cli("run", "add.flow", "--reuse", "r1", "--run-id", "r2")
    assert again.exit_code == 0, again.output
    assert again.stdout == "2\n"
    lines = again.stderr.splitlines()
    assert lines[:2] == [NOTE, "run id: r2"], lines
