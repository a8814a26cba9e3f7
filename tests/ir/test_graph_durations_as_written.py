"""The graph titles a comparison, a difference or a library call of durations as the `.flow`
writes it, never as the compiler writes it through `seconds`/`canonical` (grammar/written.py,
docs/decisions.md "Durations inside lists, objects and maps (durdeep)")."""

from __future__ import annotations

import agentflow
from agentflow import api
from agentflow.grammar.written import written_text

FLOW = """\
type Job { t: duration, n: int }
input { a: duration, jobs: Job[], ds: duration[] }
stage s -> text {
  if input.a > 1m and { t: input.a, n: 1 } in input.jobs {
    return "late ${input.a - 1m} ${unique(input.ds)}"
  }
  return "ok"
}
"""


def test_the_graph_titles_rewritten_durations_as_written(tmp_path):
    flow = tmp_path / "g.flow"
    flow.write_text(FLOW)
    shown = api.graph(flow)
    assert "if input.a #gt; 1m and {t: input.a, n: 1} in input.jobs" in shown
    assert "${input.a - 1m} ${unique(input.ds)}" in shown
    assert "seconds(" not in shown and "canonical(" not in shown


def test_written_text_reads_back_each_rewrite_and_keeps_the_rest():
    assert written_text('seconds(input.a) >= seconds("5m")') == "input.a >= 5m"
    assert (
        written_text('count_by(canonical(xs, {items: "duration"})) == {a: 1}')
        == "count_by(xs) == {a: 1}"
    )
    assert written_text("unique(xs, seconds(xs))") == "unique(xs)"
    assert written_text("overlap(a, b)  +  1") == "overlap(a, b)  +  1"  # untouched
    assert written_text("seconds(") == "seconds("  # does not parse: as it is


LETS = """\
input { a: duration }
stage s -> duration {
  let big = input.a + input.a
  let left = big - 1s
  let late = left > 1m
  return if late then left else 0s
}
"""


def test_meta_lets_hold_the_lets_as_written_and_still_place_an_error_at_its_let(tmp_path):
    flow = tmp_path / "l.flow"
    flow.write_text(LETS)
    plan = api.compile_source(LETS, str(flow)).plan
    texts = {
        entry["name"]: entry["text"]
        for step in plan["steps"]
        for entry in step["meta"].get("lets", [])
    }
    assert texts == {"big": "input.a + input.a", "left": "big - 1s", "late": "left > 1m"}
    result = agentflow.run_sync(flow, {"a": "876000h"}, config=None)
    assert result.error["code"] == "invalid_argument"
    assert result.error["source"] == "l.flow:4:14"  # the `let left`, where it fails
    assert "seconds(" not in result.error["message"]
    assert "seconds(" not in result.error["message"]


def test_a_failing_comparison_of_durations_in_a_let_is_placed_at_that_let(tmp_path):
    flow = tmp_path / "c.flow"
    flow.write_text(
        "input { a: duration }\nstage s -> text {\n  let big = input.a + input.a\n"
        '  let late = big > 1s\n  return "${late}"\n}\n'
    )
    plan = api.compile_source(flow.read_text(), str(flow)).plan
    (step,) = plan["steps"]
    assert {e["name"]: e["text"] for e in step["meta"]["lets"]}["late"] == "big > 1s"
    result = agentflow.run_sync(flow, {"a": "876000h"}, config=None)
    assert result.error["code"] == "invalid_argument"
    assert result.error["source"] == "c.flow:4:14"
    assert "seconds(" not in result.error["message"]


def test_a_condition_reading_a_let_is_kept_as_written_in_meta_when(tmp_path):
    text = (
        "input { a: duration }\nstage s -> text {\n  let big = input.a + input.a\n"
        '  if big > 1s {\n    return "y"\n  }\n  return "n"\n}\n'
    )
    (step,) = api.compile_source(text, str(tmp_path / "w.flow")).plan["steps"]
    assert step["meta"]["when"] == "big > 1s"
    assert step["input"]["when"] == {"expr": 'seconds(input.a + input.a) > seconds("1s")'}
