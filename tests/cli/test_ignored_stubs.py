"""`flowc test` never ignores a stub silently (issue 36 item 2): a `stub agent` answers an agent
whose `expect` is an inline object type in a `map` body whatever the compiler folds into the
step's `select`; two aliases of one agent name are stubbed apart; and a stub that no call
consumed fails the test, naming the stub (docs/reference/testing.md "Stubs")."""

from __future__ import annotations

import agentflow

REVIEWS = """\
input { files: text[] }
use agent "reviewer" as reviewer
type Review { file: text, ok: bool, notes: text }

stage reviews -> Review[] {
  let rs = map input.files as f tolerate 50% {
    let r = agent(reviewer) { task "review ${f}" tools none expect { ok: bool, notes: text } }
    return { file: f, ok: r.ok, notes: r.notes }
  }
  return rs.values
}

test "the stub answers in the map body" {
  input { files: ["a.py", "b.py"] }
  stub agent reviewer returns { ok: false, notes: "STUB" }
  expect reviews == [{ file: "a.py", ok: false, notes: "STUB" }, { file: "b.py", ok: false, notes: "STUB" }]
}
"""

ALIASES = """\
use agent "writer" as writer
use agent "writer" as critic

stage review -> text {
  let draft = agent(writer) { task "draft" tools none expect text }
  let critique = agent(critic) { task "critique ${draft}" tools none expect text }
  return "${draft} / ${critique}"
}

test "each alias answers its own stub" {
  stub agent writer returns "W"
  stub agent critic returns "C"
  expect review == "W / C"
}
"""

UNUSED = """\
use agent "writer" as writer
extern tool lookup(q: text) -> text

stage review -> text {
  return agent(writer) { task "draft" tools none expect text }
}

test "two stubs nothing uses" {
  stub stage review returns "S"
  stub agent writer returns "W"
  stub tool lookup returns "x"
  expect review == "S"
}
"""


def _outcomes(tmp_path, text: str):
    (tmp_path / "t.flow").write_text(text, encoding="utf-8")
    return agentflow.run_tests(tmp_path / "t.flow").outcomes


def test_stub_agent_answers_an_inline_object_expect_in_a_map_body(tmp_path):
    [outcome] = _outcomes(tmp_path, REVIEWS)
    assert outcome.passed, outcome.failures


def test_two_aliases_of_one_agent_name_are_stubbed_apart(tmp_path):
    [outcome] = _outcomes(tmp_path, ALIASES)
    assert outcome.passed, outcome.failures


def test_a_stub_no_call_consumed_fails_the_test_naming_it(tmp_path):
    [outcome] = _outcomes(tmp_path, UNUSED)
    assert not outcome.passed
    assert [f.removeprefix(f"{tmp_path}/") for f in outcome.failures] == [
        "t.flow:10:3: `stub agent writer` was never used: no call of the agent `writer` reached "
        "it (a `stub stage review` answers the agents of its stage first); remove the stub, or "
        "change the test's input so the run reaches it",
        "t.flow:11:3: `stub tool lookup` was never used: the tool `lookup` was not called; "
        "remove the stub, or change the test's input so the run reaches it",
    ]


ROUTES = """\
use agent "a" as left
use agent "b" as right
use agent "c" as spare
input { way: text }

stage route -> text {
  if input.way == "left" {
    return agent(left) { task "l" tools none expect text }
  }
  if input.way == "right" {
    return agent(right) { task "r" tools none expect text }
  }
  return agent(spare) { task "s" tools none expect text }
}

test "each case takes its branch" map ["left", "right"] as way {
  input { way: way }
  stub agent left returns "L"
  stub agent right returns "R"
  stub agent spare returns "S"
  expect route == (if way == "left" then "L" else "R")
}
"""


def test_a_table_test_reports_only_the_stubs_no_case_used(tmp_path):
    # `left` and `right` are each used by one case (a routing table stubs every branch);
    # `spare` by none: every case reports it, and only it
    outcomes = _outcomes(tmp_path, ROUTES)
    assert [o.name for o in outcomes] == [
        "each case takes its branch[0]",
        "each case takes its branch[1]",
    ]
    for o in outcomes:
        assert not o.passed
        assert [f.removeprefix(f"{tmp_path}/") for f in o.failures] == [
            "t.flow:20:3: `stub agent spare` was never used: no call of the agent `spare` "
            "reached it; remove the stub, or change the test's input so the run reaches it"
        ]
