"""`flowc eval`'s gates judge something and its files fail cleanly (docs/reference/evals.md
"Baselines" and "Gates"): a baseline is read and checked before any case runs; a gate that
judged nothing fails; a baseline of another flow or eval block is warned about; a report file
that cannot be written is an error after the report is shown; `--timeout nan` is refused."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from agentflow.cli import main

FLOW = """\
input { n: int }
stage double -> int { return input.n * 2 }
eval "arith" {
  dataset "cases.jsonl"
  expect { value: int }
  score exact = output == expected.value
}
"""
CASES = (
    '{"name":"one","input":{"n":1},"expected":{"value":2}}\n'
    '{"name":"two","input":{"n":2},"expected":{"value":5}}\n'
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "a.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(CASES, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _eval(*args: str):
    return CliRunner().invoke(main, ["eval", "a.flow", *args])


@pytest.mark.parametrize(
    ("baseline", "said"),
    [
        ('{"format":"agentflow-eval/1","cases":[{"case":5}]}', "`cases[0].case` is not text"),
        ('{"format":"agentflow-eval/1","cases":"x"}', "`cases` is not a list"),
        ('{"format":"agentflow-eval/1","stats":[{"case":"a","model":"m","scorer":"s",'
         '"mean":"high","passes":1,"runs":1}]}', "`stats[0].mean` is not a number"),
        ("[1, 2", "not a baseline"),
    ],
)  # fmt: skip
def test_a_wrong_baseline_is_refused_before_any_case_runs(project, baseline, said):
    (project / "base.json").write_text(baseline, encoding="utf-8")
    out = _eval("--baseline", "base.json")
    assert out.exit_code == 1, out.output
    assert said in out.stderr and "Traceback" not in out.output
    assert "[configured]" not in out.stderr  # no case's progress line: nothing ran


@pytest.mark.parametrize(
    ("baseline", "said"),
    [
        ("", ["error: base.json: not a baseline: the file is empty",
              "hint: write one with `flowc eval FILE --json > base.json`"]),
        ("  \n", ["error: base.json: not a baseline: the file is empty",
                  "hint: write one with `flowc eval FILE --json > base.json`"]),
        ('{"format": 1,\n  "cases" []}', ["error: base.json:2:11: not a baseline: not valid JSON "
                                          "(expecting ':' delimiter at line 2, column 11)"]),
    ],
)  # fmt: skip
def test_an_empty_or_broken_baseline_is_said_in_plain_words(project, baseline, said):
    (project / "base.json").write_text(baseline, encoding="utf-8")
    out = _eval("--baseline", "base.json")
    assert out.exit_code == 1, out.output
    assert out.stderr.splitlines() == said
    assert "char " not in out.stderr and "Expecting value" not in out.stderr


def test_a_missing_baseline_is_a_usage_error(project):
    out = _eval("--baseline", "base.json")
    assert out.exit_code == 2, out.output
    assert "Error: --baseline base.json: no such file" in out.stderr


def test_a_report_file_that_cannot_be_written_is_an_error_after_the_report(project):
    out = _eval("--save", "/dev/full", "--junit", "missing-dir/x.xml")
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert "1 of 2 passed" in out.stdout  # the report is shown all the same
    assert "error: cannot write the report to /dev/full" in out.stderr
    assert "error: cannot write the JUnit XML to missing-dir/x.xml" in out.stderr


def test_fail_under_with_no_scored_case_fails_the_gate(project):
    (project / "empty.jsonl").write_text("", encoding="utf-8")
    out = _eval("empty.jsonl", "--fail-under", "0.8")
    assert out.exit_code == 1
    assert "gate: no case run was scored: --fail-under has nothing to judge" in out.stderr


def test_a_baseline_of_another_eval_is_warned_and_a_vacuous_regression_gate_fails(project):
    other = {
        "format": "agentflow-eval/1",
        "flow": "elsewhere/other.flow",
        "eval": "other",
        "cases": [{"case": "x"}],
        "stats": [
            {"case": "x", "model": "configured", "scorer": "exact", "mean": 1.0,
             "passes": 1, "runs": 1},
        ],
    }  # fmt: skip
    (project / "other.json").write_text(json.dumps(other), encoding="utf-8")
    out = _eval("--baseline", "other.json", "--fail-on-regression")
    assert out.exit_code == 1
    assert "warning: the baseline is of flow 'elsewhere/other.flow'" in out.stdout
    assert "warning: the baseline is of eval 'other'" in out.stdout
    assert "--fail-on-regression compared nothing" in out.stderr
    # its own baseline, taken from another directory's path of the same file: no warning
    base = _eval("--json")
    data = json.loads(base.stdout)
    data["flow"] = "/somewhere/else/a.flow"
    (project / "base.json").write_text(json.dumps(data), encoding="utf-8")
    same = _eval("--baseline", "base.json", "--fail-on-regression")
    assert same.exit_code == 0, same.output
    assert "warning" not in same.output


def test_a_timeout_that_is_not_a_number_is_refused(project):
    out = _eval("--timeout", "nan")
    assert out.exit_code == 2
    assert "nan is not a number of seconds" in out.output
