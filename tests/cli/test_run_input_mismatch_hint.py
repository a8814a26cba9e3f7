"""``flowc run`` with an input that does not fit the run's `input` type says where to see the
type it takes (``flowc schema FILE --input``), and that no ``--input`` means ``{}``."""

from __future__ import annotations

import json

from click.testing import CliRunner

from agentflow.cli import main

FLOW = """input { dir: path }

stage files -> path[] {
  glob(pattern: "*.md", path: input.dir)
}
"""


def _run(tmp_path, monkeypatch, *args: str):
    (tmp_path / "files.flow").write_text(FLOW, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(main, ["run", "files.flow", *args])


def test_a_run_without_input_says_the_input_was_empty_and_how_to_see_the_type(
    tmp_path, monkeypatch
):
    res = _run(tmp_path, monkeypatch)
    assert res.exit_code == 1
    assert "input: 'dir' is a required property" in res.stderr
    assert (
        "hint: with no --input the input is {}; "
        "`flowc schema files.flow --input` prints the input it takes"
    ) in res.stderr


def test_a_wrong_input_points_at_flowc_schema(tmp_path, monkeypatch):
    res = _run(tmp_path, monkeypatch, "--input", '{"directory": "."}')
    assert res.exit_code == 1
    assert "('directory' was unexpected)" in res.stderr
    assert "hint: `flowc schema files.flow --input` prints the input it takes" in res.stderr
    assert "with no --input" not in res.stderr


def test_a_fitting_input_runs_with_no_hint(tmp_path, monkeypatch):
    res = _run(tmp_path, monkeypatch, "--input", '{"dir": "."}')
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout) == []
    assert "hint:" not in res.stderr
