"""Every file named on the command line that is missing or cannot be read is a usage error (exit 2)
said in one shape before anything runs, whatever the command and whether it is an argument or an
option (docs/reference/cli.md "Exit codes"); a whole-file problem has no line number."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from agentflow.cli import main

FLOW = """input { n: int }

stage twice -> int { return input.n * 2 }

eval "all" {
  dataset "cases.jsonl"
  score same = output == expected
}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "a.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text('{"input": {"n": 1}, "expected": 2}\n')
    (tmp_path / "adir").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["run", "a.flow", "--config", "nope.toml"], "--config nope.toml: no such file"),
        (["run", "a.flow", "--input", "@nope.json"], "--input @nope.json: no such file"),
        (["run", "a.flow", "--input", "@adir"], "--input @adir: is a directory"),
        (["run", "a.flow", "--replay", "nope.jsonl"], "--replay nope.jsonl: no such file"),
        (["eval", "a.flow", "nope.jsonl", "--model", "test"], "nope.jsonl: no such file"),
        (["eval", "a.flow", "--replay", "nope.jsonl"], "--replay nope.jsonl: no such file"),
        (["eval", "a.flow", "--model", "test", "--config", "x.toml"], "--config x.toml: no such"),
        (["runs", "--config", "nope.toml"], "--config nope.toml: no such file"),
        (["tools", "--config", "nope.toml"], "--config nope.toml: no such file"),
        (["ask", "hi", "--config", "nope.toml"], "--config nope.toml: no such file"),
        (["report", "t.jsonl"], "t.jsonl: no such file"),
        (["compile", "nope.flow"], "nope.flow: no such file"),
    ],
)
def test_a_missing_file_on_the_command_line_exits_2_in_one_shape(project, args, said):
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert f"Error: {said}" in res.stderr
    assert "Traceback" not in res.output and ":0:" not in res.stderr


def test_an_unreadable_dataset_is_a_whole_file_problem_with_no_line_number(project):
    from agentflow.api import render_diagnostics
    from agentflow.evals.dataset import read_dataset

    text = render_diagnostics(read_dataset("adir").diagnostics, {}, "text")
    assert text.startswith("adir: error[invalid-value]: cannot read the dataset: ")
