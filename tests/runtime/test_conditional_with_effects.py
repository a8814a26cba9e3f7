"""`if c then a else b` whose arm has an effect compiles to a `decide` step (docs/reference/
expressions.md): only the chosen arm's agent runs — the `test` blocks count the inferences."""

from __future__ import annotations

import agentflow

SOURCE = """\
use agent "w" as w
input { n: int, words: text[] }
stage s -> json {
  let answer = if input.n > 3 then agent(w) { task "count" expect int } else len(input.words)
  return { answer: answer, shout: upper(join(input.words, " ")) }
}
test "small n runs no agent" {
  input { n: 1, words: ["a", "b"] }
  expect output.answer == 2 and output.shout == "A B" and inferences == 0
}
test "big n runs the agent" {
  input { n: 5, words: [] }
  stub agent w returns 7
  expect output.answer == 7 and inferences == 1
}
"""


def test_only_the_chosen_arm_runs_its_agent(tmp_path):
    (tmp_path / "cond.flow").write_text(SOURCE, encoding="utf-8")
    report = agentflow.run_tests(tmp_path)
    assert report.ok and report.passed == 2, [(o.name, o.failures) for o in report.outcomes]


def test_the_effectful_conditional_is_a_decide_step():
    plan = agentflow.compile_source(SOURCE, "cond.flow").plan
    (step,) = [s for s in plan["steps"] if s["tool_name"] == "decide"]
    assert step["meta"]["name"] == "answer"
    assert step["input"]["then"]["tool_name"] == "agent"
