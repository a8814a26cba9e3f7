"""`stub step v` replaces the `decide` step of `let v = match …` / `let v = if …` with an
effectful arm: none of its arms runs and `v` is the stub's value (docs/reference/testing.md
"Answers in turn, asks and steps")."""

from __future__ import annotations

import agentflow
from agentflow import api

FLOW = """\
extern tool user__size(path: text) -> int
input { s: "low" | "mid" | "high" }

stage a -> int {
  let v = match input.s { "low" => user__size(path: "low"), "mid" => 7, "high" => user__size(path: "high") }
  let w = if input.s == "low" then user__size(path: "a") else user__size(path: "b")
  return v + w
}
"""


def _run(tmp_path, tests: str) -> agentflow.flowtest.TestReport:
    path = tmp_path / "eff.flow"
    path.write_text(FLOW + tests, encoding="utf-8")
    return agentflow.run_tests(path)


def test_a_let_whose_match_and_if_have_effectful_arms_is_stubbed_as_a_step(tmp_path):
    report = _run(
        tmp_path,
        '\ntest "both stubbed" {\n  input { s: "low" }\n  stub step v returns 3\n'
        "  stub step w returns 4\n  expect output == 7\n  expect calls.user__size == 0\n}\n",
    )
    assert report.ok, report.outcomes[0].failures


def test_a_stubbed_if_leaves_the_match_beside_it_running(tmp_path):
    report = _run(
        tmp_path,
        '\ntest "one stubbed" {\n  input { s: "high" }\n  stub step w returns 4\n'
        "  stub tool user__size returns 30\n  expect output == 34\n"
        "  expect calls.user__size == 1\n}\n",
    )
    assert report.ok, report.outcomes[0].failures


def test_a_let_in_a_map_body_with_an_effectful_if_is_stubbed_too(tmp_path):
    path = tmp_path / "m.flow"
    path.write_text(
        "extern tool user__size(path: text) -> int\ninput { xs: text[] }\n"
        "stage a -> int[] {\n  return map input.xs as x {\n"
        '    let v = if x == "a" then user__size(path: x) else 5\n    return v + 1\n  }\n}\n'
        'test "in a body" {\n  input { xs: ["a", "b"] }\n  stub step v returns 10\n'
        "  expect output == [11, 11]\n}\n",
        encoding="utf-8",
    )
    report = agentflow.run_tests(path)
    assert report.ok, report.outcomes[0].failures


def test_a_match_with_only_pure_arms_is_still_no_step_of_its_own(tmp_path):
    path = tmp_path / "p.flow"
    path.write_text(
        'input { s: text }\nstage a -> int {\n  let v = match input.s { "a" => 1, _ => 2 }\n'
        '  return v\n}\ntest "t" {\n  input { s: "a" }\n  stub step v returns 3\n}\n',
        encoding="utf-8",
    )
    [d] = [d for d in api.check(str(path)).diagnostics if d.severity == "error"]
    assert d.code == "unknown-stub-target"
    assert d.message == "`v` is not a step of its own: its value is computed from other values"


def test_a_stub_of_an_effectful_match_is_held_to_its_type(tmp_path):
    path = tmp_path / "eff.flow"
    path.write_text(
        FLOW + '\ntest "t" {\n  input { s: "low" }\n  stub step v returns "x"\n}\n',
        encoding="utf-8",
    )
    [d] = [d for d in api.check(str(path)).diagnostics if d.severity == "error"]
    assert d.code == "stub-mismatch"
