"""`flowc test --explore N FILE` (docs/reference/testing.md "Exploring"): N runs with generated
answers; each `if` branch on a literal union is reported exercised, and the answers that made a
`require` fail are shown."""

from __future__ import annotations

from click.testing import CliRunner

from agentflow.cli import main
from agentflow.flowexplore import explore

FLOW = """\
type Triage { severity: "low" | "medium" | "high" }
use agent "triager" as triager

stage triage -> Triage {
  let t = agent(triager) {
    task "Triage it"
    tools none
    expect Triage
  }
  require t.severity != "low" else fail "low severity is not triaged here"
  return t
}

stage route -> text {
  if triage.severity == "high" {
    return "page the on-call"
  }
  return "queue it"
}
"""


def _write(tmp_path):
    path = tmp_path / "route.flow"
    path.write_text(FLOW, encoding="utf-8")
    return path


def test_each_branch_of_a_literal_union_is_reported_exercised(tmp_path):
    report = explore(_write(tmp_path), 30)
    assert report.runs == 30 and report.error is None
    by_kind = {site.kind: site for site in report.sites}
    assert by_kind["if"].source == "route.flow:15:3"
    assert by_kind["if"].missed == [] and by_kind["require"].missed == []
    counts = by_kind["require"].counts
    assert counts["held"] + counts["failed"] == 30
    assert by_kind["if"].counts["then"] + by_kind["if"].counts["else"] == counts["held"]


def test_the_answers_that_failed_a_run_are_reported(tmp_path):
    report = explore(_write(tmp_path), 30)
    assert report.failures
    for failure in report.failures:
        assert failure.code == "failed"
        assert failure.message == "low severity is not triaged here"
        ((who, answer),) = failure.answers
        assert answer == '{"severity": "low"}'
        assert who.endswith("route.flow:5:11")


def test_the_command_prints_sites_and_failures(tmp_path):
    path = _write(tmp_path)
    result = CliRunner().invoke(main, ["test", "--explore", "30", str(path)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith(f"explored {path}: 30 runs")
    assert "every branch and check outcome was exercised" in out
    assert "failed with failed at" in out and 'answered {"severity": "low"}' in out


def test_explore_takes_one_file_and_a_file_that_does_not_check_exits_1(tmp_path):
    result = CliRunner().invoke(main, ["test", "--explore", "3", str(tmp_path)])
    assert result.exit_code == 2 and "exactly one .flow FILE" in result.output
    bad = tmp_path / "bad.flow"
    bad.write_text("stage s -> int { return true }\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["test", "--explore", "3", str(bad)])
    assert result.exit_code == 1 and "type-mismatch" in result.output
