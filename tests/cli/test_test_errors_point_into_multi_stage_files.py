"""A run-time error inside a `flowc test` of a file with several stages points at the
expression of the stage that failed, at the same `file:line:col` as `flowc run`'s, and a stage no
run computes never fails a test (docs/reference/testing.md "Run-time errors in a test")."""

from __future__ import annotations

import agentflow

FLOW = """\
input { xs: int[] }

stage first -> int {
  return input.xs[0]
}

stage unread -> int {
  return input.xs[9]
}

stage pick -> int {
  let hits = grep(pattern: "TODO", path: ".")
  return input.xs[len(hits) + first + 5]
}

test "an index out of range in the last stage" {
  input { xs: [1, 2] }
  stub tool grep returns []
  expect output == 1
}

test "a stage no step reads does not fail the run" {
  input { xs: [1, 2] }
  stub tool grep returns []
  expect fail "bad_path"
}

test "reading the stage that failed says why and where" {
  input { xs: [1, 2, 3, 4, 5, 6, 7] }
  stub tool grep returns []
  expect unread == 1
}
"""


def _at(text: str, column: int) -> str:
    """``line:column`` of the line of FLOW that holds ``text``."""
    return f"{FLOW[: FLOW.index(text)].count(chr(10)) + 1}:{column}"


def test_a_run_time_error_of_a_later_stage_points_where_flowc_run_points(tmp_path):
    flow = tmp_path / "pick.flow"
    flow.write_text(FLOW, encoding="utf-8")
    ran = agentflow.run_sync(flow, {"xs": [1, 2]}, workspace=tmp_path)
    assert (
        ran.error is not None and ran.error.source == f"pick.flow:{_at('return input.xs[len', 10)}"
    )
    report = agentflow.run_tests([flow], cache=None)
    failures = {o.name: o.failures for o in report.outcomes}
    first = failures["an index out of range in the last stage"]
    assert first == [
        f"{flow}:{_at('an index out', 6)}: the run failed with bad_path: path `input.xs[len(hits) + input.xs[0] + 5]`"
        f": `[6]` is missing (index out of range for length 2) (at {flow}:{_at('return input.xs[len', 10)})"
    ]
    # the stage `unread` is computed by no step: its failing index fails no run, test or not
    assert failures["a stage no step reads does not fail the run"] == []
    assert failures["reading the stage that failed says why and where"] == [
        f"{flow}:{_at('expect unread', 3)}: expect unread == 1\n    could not be evaluated: the stage `unread` failed "
        "with bad_path: path `input.xs[9]`: `[9]` is missing (index out of range for length 7)"
        f" (at {flow}:{_at('return input.xs[9]', 10)})"
    ]
