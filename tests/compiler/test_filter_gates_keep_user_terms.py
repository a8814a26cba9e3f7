"""A `filter` whose `where` needs steps (a `map` in it) is lowered to a `map` computing each
item's gate, then the filter (docs/reference/expressions.md "filter"). That map is the filter's
own work: it is named `filter` at the filter's place in progress and events, the graph shows
the `where` condition as written, and `flowc test --explore` counts no site the user cannot see."""

from __future__ import annotations

from pathlib import Path

import agentflow
from agentflow import api
from agentflow.flowexplore import explore
from agentflow.ir.graph import build_graph
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.events import CallbackSink

FLOW = """\
input { tickets: { id: text, tags: text[] }[] }
stage answer -> text[] {
  let open = filter input.tickets as t where not any(map t.tags as g { lower(g) == "spam" })
  return map open as t { t.id }
}
test "spam is dropped" {
  input { tickets: [{ id: "a", tags: ["SPAM"] }, { id: "b", tags: [] }] }
  expect answer == ["b"]
}
"""


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "f.flow"
    path.write_text(FLOW, encoding="utf-8")
    return path


def test_the_gates_of_a_filter_are_labelled_filter_at_the_filters_place(tmp_path: Path):
    events: list = []
    result = agentflow.run_sync(
        _write(tmp_path),
        {"tickets": [{"id": "a", "tags": ["SPAM"]}, {"id": "b", "tags": []}]},
        sinks=[CallbackSink(events.append)],
        shape_cache=False,
    )
    assert result.ok and result.output == ["b"]
    top = {
        e.path: (e.data.get("label"), e.data.get("source"))
        for e in events
        if e.kind == "step_started" and "/" not in e.path
    }
    assert top["E0"] == ("answer › filter", "f.flow:3:14")
    assert top["E1"] == ("answer › open = filter", "f.flow:3:14")


def test_the_graph_shows_the_filters_where_as_written():
    plan = load_plan_data(api.compile_source(FLOW, "f.flow").plan, "f.flow")
    titles = {n.id: n.title for n in build_graph(plan).nodes}
    assert titles["s_E1"] == (
        'open = filter input.tickets as t where not any(map t.tags as g { lower(g) == "spam" })'
    )
    assert titles["s_E0"] == "filter input.tickets as t"  # the gates, named for the filter


def test_explore_reports_the_filter_and_the_users_map_but_no_hidden_map(tmp_path: Path):
    report = explore(_write(tmp_path), 3)
    assert report.error is None
    sites = {s.source: s.kind for s in report.sites}
    assert sites == {"f.flow:3:14": "filter", "f.flow:3:54": "map", "f.flow:4:10": "map"}
    assert not any(s.source.endswith(":3:46") for s in report.sites)
