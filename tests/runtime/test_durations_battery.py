"""What the regression battery of durations by value found (docs/decisions.md "Durations: what
the battery found (fixdur)"): a failing `flowc test` expectation explains itself in the
durations' texts, as written, never in the rewrite's seconds."""

from __future__ import annotations

import agentflow
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


LIBRARY = """\
input { xs: duration[], ys: duration[] }
type R { at: int, none: int, kept: duration[], shared: number, counted: map<int> }
stage s -> R {
  return {
    at: index_of(input.xs, 1m30s), none: index_of(input.xs, 3m), kept: unique(input.xs),
    shared: overlap(input.xs, input.ys), counted: count_by(input.xs)
  }
}
test "library functions compare durations by length" {
  input { xs: [90s, 1m, 2m, 60s], ys: [1m30s, 120s] }
  expect index_of(input.xs, 1m30s) == 0
  expect unique(input.xs) == [90s, 1m, 2m]
  expect overlap(input.xs, input.ys) == 2 / 3
}
"""


def test_library_functions_compare_durations_by_length_and_keep_the_texts(tmp_path):
    flow = tmp_path / "lib.flow"
    flow.write_text(LIBRARY)
    given = {"xs": ["90s", "1m", "2m", "60s"], "ys": ["1m30s", "120s"]}
    result = agentflow.run_sync(flow, given, config=None)
    assert result.status == "ok", result.error
    assert result.output == {
        "at": 0,
        "none": -1,
        "kept": ["90s", "1m", "2m"],  # the first of each length, as written
        "shared": 2 / 3,
        "counted": {"90s": 1, "1m": 1, "2m": 1, "60s": 1},  # a map's keys are the texts
    }
    outcome = api.run_tests(tmp_path).outcomes[0]
    assert outcome.passed, outcome.failures


def test_unique_with_keys_needs_one_key_per_element(tmp_path):
    flow = tmp_path / "keys.flow"
    flow.write_text(
        "input { xs: int[], ks: int[] }\nstage s -> int[] {\n  return unique(input.xs, input.ks)\n}\n"
    )
    assert agentflow.run_sync(flow, {"xs": [1, 2, 3], "ks": [0, 0, 1]}, config=None).output == [
        1,
        3,
    ]
    bad = agentflow.run_sync(flow, {"xs": [1, 2], "ks": [0]}, config=None)
    assert bad.error["code"] == "invalid_argument"
    assert "one key per element: 2 elements, 1 keys" in bad.error["message"]
