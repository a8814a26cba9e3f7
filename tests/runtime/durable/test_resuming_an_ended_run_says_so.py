"""`flowc resume` of a run that had already ended `error` (or `aborted`, `cancelled`) prints its
recorded end, as before, under a note that it had ended and that `flowc redrive` is what runs it
again — a new user read the bare error as the resume's own failure (cli/durable.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

FAILS = "flow fails\ninput { d: int }\nstage a -> number {\n  return 1 / input.d\n}\n"


def _cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    shutdown()
    return result


def test_resuming_a_run_that_ended_in_error_says_it_had_ended_and_names_redrive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fails.flow").write_text(FAILS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    first = _cli("run", "--durable", "--run-id", "e1", "fails.flow", "--input", '{"d": 0}')
    assert first.exit_code == 1, first.output
    again = _cli("resume", "e1")
    assert again.exit_code == 1
    lines = again.stderr.strip().splitlines()
    assert lines[0] == (
        "note: run e1 had already ended error; `flowc resume` goes on with a run whose process "
        "stopped — `flowc redrive e1` runs it again, reusing the steps that finished"
    )
    assert any(line.startswith("error[arithmetic]") for line in lines[1:])
