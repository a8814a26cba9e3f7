"""A failed expectation of a test whose agent no `stub agent` covers says that agent was
answered by the built-in test model (a new user's trial read `actual (s.v): 60` with nothing
saying where 60 came from; docs/reference/testing.md)."""

from __future__ import annotations

from agentflow import api

FLOW = """\
type S { v: int }
use agent "score-bot" as scorer
use agent "checker" as checker
stage s -> S {
  agent(scorer) {
    task "Score it."
    expect S
  }
}
stage c -> S {
  agent(checker) {
    task "Check ${s.v}."
    expect S
  }
}
test "unstubbed" {
  expect s.v == 4
}
test "one stubbed" {
  stub agent scorer returns { v: 3 }
  expect s.v == 4
}
test "all stubbed" {
  stub agent scorer returns { v: 3 }
  stub agent checker returns { v: 3 }
  expect s.v == 4
}
"""


def _failures(tmp_path) -> dict[str, list[str]]:
    (tmp_path / "t.flow").write_text(FLOW, encoding="utf-8")
    report = api.run_tests([tmp_path / "t.flow"], cache=None)
    return {o.name: o.failures for o in report.outcomes}


def test_a_failure_notes_each_agent_the_built_in_test_model_answered(tmp_path):
    failures = _failures(tmp_path)
    note = (
        "note: no `stub agent` covered agents `scorer`, `checker`: the built-in test model "
        "answered them with values generated from the contract (stub it: `stub agent scorer "
        "returns …`)"
    )
    assert len(failures["unstubbed"]) == 1
    assert failures["unstubbed"][0].endswith(note)
    only = "note: no `stub agent` covered agent `checker`: the built-in test model answered it"
    assert only in failures["one stubbed"][0]


def test_no_note_when_every_agent_is_stubbed(tmp_path):
    failures = _failures(tmp_path)["all stubbed"]
    assert failures and not any("note:" in f for f in failures)
