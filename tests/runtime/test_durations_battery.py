"""What the regression battery of durations by value found (docs/decisions.md "Durations: what
the battery found (fixdur)"): a failing `flowc test` expectation explains itself in the
durations' texts, as written, never in the rewrite's seconds."""

from __future__ import annotations

from agentflow import api

EXPLAIN = """\
input { a: duration }
stage s -> { w: duration, n: int } {
  return { w: input.a, n: 1 }
}
test "eq" {
  input { a: 120s }
  expect s.w == 3m
}
test "records" {
  input { a: 120s }
  expect output == { w: 3m, n: 1 }
}
test "member" {
  input { a: 120s }
  expect s.w in [3m, 1h]
}
"""


def test_a_failing_expectation_shows_the_durations_as_written(tmp_path):
    (tmp_path / "e.flow").write_text(EXPLAIN)
    report = api.run_tests(tmp_path)
    failures = {o.name: "\n".join(o.failures) for o in report.outcomes}
    assert 'actual (s.w): "120s"' in failures["eq"]
    assert 'expected: "3m"' in failures["eq"]
    assert 'actual (output): {"w": "120s", "n": 1}' in failures["records"]
    assert 'expected: {"w": "3m", "n": 1}' in failures["records"]
    assert 'actual (s.w): "120s"' in failures["member"]
    assert 'expected: ["3m", "1h"]' in failures["member"]
