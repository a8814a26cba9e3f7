"""The graph titles a comparison, a difference or a library call of durations as the `.flow`
writes it, never as the compiler writes it through `seconds`/`canonical` (ir/written.py,
docs/decisions.md "Durations inside lists, objects and maps (durdeep)")."""

from __future__ import annotations

from agentflow import api
from agentflow.ir.written import written_text

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
