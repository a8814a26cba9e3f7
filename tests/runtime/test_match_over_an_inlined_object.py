"""A `match` whose subject reads a field of an object the compiler inlines — `let o = { … }`
then `match o.w`, a stage whose value is an object literal, `({ … }).w` — compiles and runs
(docs/reference/expressions.md "match"). The inlined subject's text starts with `{`, which the
plan's `match` cannot start its subject with: the compiler puts it in parentheses, as it does a
`not {…}.ok` or `-{…}.n`, where it used to write a plan that did not validate (an internal
compiler error, and a traceback from `flowc test`)."""

from __future__ import annotations

import pytest

from agentflow import api
from agentflow.flowtest import run_tests

SUBJECTS = {
    "a field of a let": (
        'let o = { w: input.w, n: 1 }\n  return match o.w { "a" => 1, _ => 2 }',
        1,
    ),
    "a number field": ("let o = { w: input.w, n: 1 }\n  return match o.n { 1 => 1, _ => 2 }", 1),
    "a negated field": ("let o = { w: input.w, n: 1 }\n  return match -o.n { -1 => 1, _ => 2 }", 1),
    "not of a field": (
        'let o = { ok: input.w == "a" }\n  return match not o.ok { true => 1, _ => 2 }',
        2,
    ),
    "the object itself": ("let o = { w: input.w }\n  return match o { _ => 2 }", 2),
    "a parenthesized literal": ('match ({ w: input.w }).w { "a" => 1, _ => 2 }', 1),
}


@pytest.mark.parametrize("body, expected", SUBJECTS.values(), ids=SUBJECTS.keys())
def test_a_match_over_an_inlined_object_compiles_and_runs(tmp_path, body, expected):
    src = f"input {{ w: text }}\nstage v -> int {{\n  {body}\n}}\n"
    compiled = api.compile_source(src, "m.flow")
    plan = api.plan_from_data(compiled.plan, "m.flow")
    result = api.run_sync(plan, {"w": "a"}, workspace=tmp_path)
    assert result.status == "ok", result.error
    assert result.output == expected


STAGES = """input { w: text }
stage summary -> { worst: text, n: int } { { worst: input.w, n: 1 } }
stage verdict -> "ship" | "hold" {
  match summary.worst { "blocker" => "hold", _ => "ship" }
}
stage last -> int { summary.n }

test "a blocker holds" {
  input { w: "blocker" }
  expect verdict == "hold"
}
"""


def test_flowc_test_reads_a_stage_that_matches_on_an_earlier_stage_object(tmp_path):
    path = tmp_path / "v.flow"
    path.write_text(STAGES, encoding="utf-8")
    report = run_tests([path])
    assert [(o.name, o.passed) for o in report.outcomes] == [("a blocker holds", True)]
