"""A stage's value the compiler writes as a template that does not load (a flowc bug, such as
the `match` over an inlined object that once did) is reported by `flowc test` as a failed
`flowc compile` outcome naming the file, its tests not run — not a Python traceback
(docs/reference/testing.md)."""

from __future__ import annotations

from agentflow import flowtest
from agentflow.errors import PlanLoadError

FLOW = """input { w: text }
stage s -> text { input.w }

test "it echoes" {
  input { w: "a" }
  expect s == "a"
}
"""


def test_a_stage_value_that_does_not_load_is_a_compile_outcome(tmp_path, monkeypatch):
    def broken(*_args, **_kwargs):
        raise PlanLoadError([], {})

    monkeypatch.setattr(flowtest, "compile_value", broken)
    path = tmp_path / "echo.flow"
    path.write_text(FLOW, encoding="utf-8")
    report = flowtest.run_tests([path])
    (outcome,) = report.outcomes
    assert (outcome.name, outcome.passed, outcome.not_run) == ("flowc compile", False, 1)
    assert "internal compiler error" in outcome.failures[0] and "flowc bug" in outcome.failures[0]
