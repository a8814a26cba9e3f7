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
    assert "`input` lacks the required field `dir` of the flow's input type" in res.stderr
    assert (
        "hint: with no --input the input is {}; "
        "`flowc schema files.flow --input` prints the input it takes"
    ) in res.stderr


def test_a_wrong_input_points_at_flowc_schema(tmp_path, monkeypatch):
    res = _run(tmp_path, monkeypatch, "--input", '{"directory": "."}')
    assert res.exit_code == 1
    assert "`input` has no field `directory`" in res.stderr
    assert "hint: `flowc schema files.flow --input` prints the input it takes" in res.stderr
    assert "with no --input" not in res.stderr


def test_a_fitting_input_runs_with_no_hint(tmp_path, monkeypatch):
    res = _run(tmp_path, monkeypatch, "--input", '{"dir": "."}')
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout) == []
    assert "hint:" not in res.stderr


def test_a_reused_runs_input_that_no_longer_fits_says_so_not_that_the_input_was_empty(
    tmp_path, monkeypatch
):
    """`--reuse RUN` with no `--input` takes RUN's input; when the edited flow no longer takes
    it, the hint says that (and to give --input), not "the input is {}"."""
    (tmp_path / "flow.toml").write_text("[tools]\nentry_points = false\n", encoding="utf-8")
    (tmp_path / "n.flow").write_text(
        "input { x: int }\n\nstage s -> int {\n  return input.x + 1\n}\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    first = CliRunner().invoke(main, ["run", "n.flow", "--run-id", "base", "--input", '{"x": 1}'])
    assert first.exit_code == 0, first.output
    (tmp_path / "n.flow").write_text(
        "input { x: text }\n\nstage s -> text {\n  return input.x\n}\n", encoding="utf-8"
    )
    res = CliRunner().invoke(main, ["run", "--reuse", "base", "n.flow"])
    assert res.exit_code == 1, res.output
    # the run never starts, so the note that RUN's input is taken (said when a run starts) is
    # not printed: the hint says whose input it was
    assert "note: no --input" not in res.stderr
    assert "with no --input the input is {}" not in res.stderr
    assert (
        "hint: the input of run base does not fit n.flow as it is now: give --input" in res.stderr
    )
