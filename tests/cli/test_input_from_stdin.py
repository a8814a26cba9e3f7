"""``flowc run FILE --input @-`` reads the input from standard input (a pipe:
``producer | flowc run f.flow --input @-``), as ``@FILE`` reads a file; before, ``@-`` was
refused as ``--input @-: no such file``.  Its JSON errors are placed as ``stdin:LINE:COL``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow import api
from agentflow.cli import main

FLOW = "input { n: int }\nstage s -> int { return input.n * 2 }\n"


def test_input_at_dash_reads_the_input_from_stdin(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.flow").write_text(FLOW, encoding="utf-8")
    done = CliRunner().invoke(main, ["run", "d.flow", "--input", "@-"], input='{"n": 21}\n')
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == 42


def test_input_at_dash_that_is_not_json_is_placed_on_stdin(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.flow").write_text(FLOW, encoding="utf-8")
    done = CliRunner().invoke(main, ["run", "d.flow", "--input", "@-"], input='{"n":\n')
    assert done.exit_code == 1
    assert done.stderr.startswith("error: stdin:2:1: input is not valid JSON"), done.stderr


def test_parse_input_reads_stdin_for_at_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('{"a": [1, 2]}'))
    assert api.parse_input("@-") == {"a": [1, 2]}
