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


TEAM_FLOW = """\
use team "dev-team" as dev
type WorkItem { owner: member, summary: text }
type Change { owner: member, notes: text }

stage plan -> WorkItem[] {
  agent(dev.main) {
    task "Split the fix into work items, one per owner."
    tools none
    expect WorkItem[]
  }
}

stage implement -> Change[] {
  return map plan as item {
    agent(dev.member(item.owner)) {
      task "Implement: ${item.summary}"
      tools none
      expect Change
    }
  }
}
"""

TEAM_TOML = """\
[teams.dev-team]
main = "lead"
members = { lead = {}, backend = {}, frontend = {} }
"""


def test_exploring_a_team_flow_routes_every_generated_owner_to_a_member(tmp_path):
    # the test model draws a `member` from the team's members, as a real model is shown them
    path = tmp_path / "team.flow"
    path.write_text(TEAM_FLOW, encoding="utf-8")
    (tmp_path / "flow.toml").write_text(TEAM_TOML, encoding="utf-8")
    report = explore(path, 20)
    assert report.runs == 20 and report.error is None
    assert [f.code for f in report.failures] == []
    (site,) = [s for s in report.sites if s.kind == "map"]
    assert site.counts["items"] > 0  # owners were generated and routed


SHAPES_FLOW = """\
input { n: int, xs: int[] }
stage a -> int {
  if input.n > 5 { return 1 }
  if input.n > 2 { return 2 }
  if input.n > 0 { return 3 }
  return 4
}
stage b -> int {
  if input.n > 2 {
    if input.n > 5 { return 1 }
    return 2
  }
  return 3
}
stage c -> int[] {
  if input.n > 5 { return [] }
  return map input.xs as x { x + 1 }
}
stage d -> int {
  if input.n > 5 { return 1 }
  require input.n > 2 else fail "small"
  return 3
}
test "one" { input { n: 1, xs: [] } expect a == 3 }
test "three" { input { n: 3, xs: [1] } expect a == 2 }
test "seven" { input { n: 7, xs: [1] } expect a == 1 }
"""


def test_each_run_reaching_an_if_counts_once_at_its_own_line(tmp_path):
    # an `if` with no else outlines the rest of its block into a sub-plan whose call carries the
    # source of the rest's first statement (the next `if`): that call is not the `if` itself
    path = tmp_path / "shapes.flow"
    path.write_text(SHAPES_FLOW, encoding="utf-8")
    one = CliRunner().invoke(main, ["test", "--explore", "1", str(path)])
    assert one.output.startswith(f"explored {path}: 1 run (test model seed 0)\n"), one.output
    report = explore(path, 3)  # the inputs n = 1, 3, 7, one run each
    counts = {(site.source.split(":", 1)[1], site.kind): site.counts for site in report.sites}
    assert counts == {
        ("3:3", "if"): {"then": 1, "else": 2},  # sequence: n=7 | n=1, n=3
        ("4:3", "if"): {"then": 1, "else": 1},  # reached by n=1, n=3 only
        ("5:3", "if"): {"then": 1, "else": 0},  # reached by n=1 only
        ("9:3", "if"): {"then": 2, "else": 1},  # nested in a then
        ("10:5", "if"): {"then": 1, "else": 1},
        ("16:3", "if"): {"then": 1, "else": 2},  # followed by a map
        ("17:10", "map"): {"empty": 1, "items": 1},
        ("20:3", "if"): {"then": 1, "else": 2},  # followed by a require
        ("21:3", "require"): {"held": 1, "failed": 1},
    }


LOOP_FLOW = """\
input { tries: int }
use agent "w" as w
stage s -> int {
  let r = loop up to input.tries as round, n = 0 {
    let x = if round > 1 then agent(w) { task "t" tools none expect int } else 0
    n + x
  } until n > 100 else n
  return r
}
test "three rounds" {
  input { tries: 3 }
  stub agent w returns 1
  expect s == 1
}
"""


def test_an_if_in_a_loop_counts_each_run_once_per_outcome_not_once_per_round(tmp_path):
    # 5 runs of 3 rounds: each run takes `else` (rounds 0, 1) and `then` (round 2); counted per
    # round this was `then: 5  else: 10`
    path = tmp_path / "rounds.flow"
    path.write_text(LOOP_FLOW, encoding="utf-8")
    result = CliRunner().invoke(main, ["test", "--explore", "5", str(path)])
    assert result.exit_code == 0, result.output
    assert "rounds.flow:5:13  if       then: 5  else: 5" in result.output


ASKS = """\
type Pick = "red" | "blue"
stage s -> text {
  let ok = ask "Proceed?" expect bool
  require ok else fail "declined"
  let c = ask "Colour?" expect Pick default "red"
  if c == "blue" {
    return "b"
  }
  return "r"
}
"""


def test_exploring_answers_each_ask_with_values_of_its_type(tmp_path):
    path = tmp_path / "asks.flow"
    path.write_text(ASKS, encoding="utf-8")
    report = explore(path, 12)
    by_kind = {site.kind: site for site in report.sites}
    # both answers of the `bool` (no default), each member of `Pick` (despite its default)
    assert by_kind["require"].missed == [] and by_kind["if"].missed == []
    for failure in report.failures:
        assert failure.message == "declined"
        assert failure.answers == [("the ask at asks.flow:3:12", "false")]


def test_an_ask_exploring_cannot_answer_names_what_would_answer_it(tmp_path, monkeypatch):
    from agentflow import flowexplore
    from agentflow.runtime.models.test_model import GenerationError

    def cannot(schema, rng):
        raise GenerationError("no value")

    monkeypatch.setattr(flowexplore, "generate_value", cannot)
    path = tmp_path / "asks.flow"
    path.write_text(ASKS, encoding="utf-8")
    report = explore(path, 2)
    message = report.failures[0].message
    assert message.startswith('exploring cannot generate an answer to the question "Proceed?"')
    assert "--answer" not in message and "flowc answer" not in message
    assert "stub ask NAME returns VALUE" in message


def test_explore_without_its_number_shows_the_options_form(tmp_path):
    # `flowc test --explore route.flow` (N forgotten) said only click's "is not a valid integer
    # range"; it names the form now, with the file given
    path = _write(tmp_path)
    res = CliRunner().invoke(main, ["test", "--explore", str(path)])
    assert res.exit_code == 2
    assert (
        f"'{path}' is not a number of runs: the number comes first, "
        f"`flowc test --explore 20 {path}`"
    ) in res.output
    assert "not a valid integer range" not in res.output
    res = CliRunner().invoke(main, ["test", "--explore", "0", str(path)])
    assert res.exit_code == 2 and "0 is not in the range 1<=x<=10000" in res.output
