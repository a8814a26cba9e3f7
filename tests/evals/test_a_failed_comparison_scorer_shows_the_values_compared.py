"""A failed `bool` scorer that is a comparison says why: each side as written with its value
(`output is {...}; expected is {...}` for the default `exact` scorer), a literal side left out,
a long value cut at 120 characters — before, the report said `exact: 0.00` and nothing else,
so the output had to be dug out of `--json` (docs/reference/evals.md "Reports")."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from agentflow import api
from agentflow.cli import main

FLOW = """\
input { n: int, long: text }
stage s -> { half: int, words: text } { return { half: floor(input.n / 2), words: input.long } }
eval "halves" {
  dataset "cases.jsonl"
  score half = s.half == input.n / 2
  score small = output.half < 3
  score named = output.words == "short"
  score either = output.half == 1 or output.half == 2
}
"""

CASES = (
    '{"name": "odd", "input": {"n": 7, "long": "short"}, '
    '"expected": {"half": 3, "words": "short"}}\n'
)


def test_a_failed_comparison_gives_each_sides_value_as_its_reason(tmp_path: Path) -> None:
    (tmp_path / "h.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(CASES, encoding="utf-8")
    report = api.evaluate(tmp_path / "h.flow", cache=None)
    (run,) = report.runs
    reasons = {k: s.reason for k, s in run.scores.items() if not s.passed}
    assert reasons == {
        "half": "s.half is 3; input.n / 2 is 3.5",
        "small": "output.half is 3",  # the literal `3` is not repeated
        "either": None,  # not one comparison: no reason
    }


def test_the_default_exact_scorer_shows_output_and_expected_cut_when_long(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.flow").write_text(
        "input { n: int, long: text }\nstage s -> json { return { n: input.n, t: input.long } }\n",
        encoding="utf-8",
    )
    long = "x" * 200
    (tmp_path / "c.jsonl").write_text(
        f'{{"name": "c1", "input": {{"n": 1, "long": "{long}"}}, "expected": {{"n": 2}}}}\n',
        encoding="utf-8",
    )
    done = CliRunner().invoke(main, ["eval", "e.flow", "c.jsonl", "--no-cache"])
    assert done.exit_code == 0, done.output
    (line,) = [ln for ln in done.stdout.splitlines() if ln.strip().startswith("exact:")]
    shown = '{"n": 1, "t": "' + "x" * 104 + "…"
    assert line.strip() == f'exact: 0.00 — output is {shown}; expected is {{"n": 2}}'
