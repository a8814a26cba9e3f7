"""A map whose list is too large for its `step_started` event to carry whole (an `input_preview`,
whose `over` keeps 10 items: docs/reference/expressions.md "Limits") still says how many items
it goes over: the event's `items` field (docs/reference/events.md), which the console's
`(N items)`, the span attribute `agentflow.map.items` and `flowc graph --run` read, never the
preview's length."""

from __future__ import annotations

import io

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentflow import api
from agentflow.core.vocabulary import started_items
from agentflow.ir.graph import outcomes_from_events
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.events import CallbackSink, ConsoleSink, Event
from agentflow.runtime.report import build_report
from agentflow.runtime.telemetry import OtelSink
from agentflow.runtime.telemetry_settings import TelemetrySettings
from agentflow.runtime.value_size import EVENT_TEXT_CHARS

FLOW = """input { xs: text[] }
stage m -> int[] {
  map input.xs as x { len(x) }
}
"""

#: 30 texts holding more characters in all than an event carries whole: a preview of 10
ITEMS = 30
XS = ["x" * (EVENT_TEXT_CHARS // 20)] * ITEMS


def _plan():
    return load_plan_data(api.compile_source(FLOW, "big.flow").plan, "big.flow")


def _run(*sinks):
    events: list[Event] = []
    result = api.run_sync(_plan(), {"xs": XS}, sinks=[CallbackSink(events.append), *sinks])
    assert result.status == "ok", result.error
    return events


def test_a_previewed_maps_started_event_carries_the_real_count():
    events = _run()
    started = next(
        e for e in events if e.kind == "step_started" and e.data.get("tool_name") == "map"
    )
    assert started.data["input_preview"] is True
    assert len(started.data["input"]["over"]) == 10  # the preview …
    assert started.data["items"] == ITEMS  # … and the real count
    assert started_items(started.data) == ITEMS


def test_the_console_says_the_real_count_of_a_previewed_map():
    stream = io.StringIO()
    _run(ConsoleSink(stream, force_plain=True))
    line = next(line for line in stream.getvalue().splitlines() if line.startswith("▶ m › map"))
    assert f"({ITEMS} items)" in line, line


def test_the_map_span_says_the_real_count_of_a_previewed_map():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _run(OtelSink(TelemetrySettings(), tracer_provider=provider))
    (span,) = [s for s in exporter.get_finished_spans() if "agentflow.map.items" in s.attributes]
    assert span.attributes["agentflow.map.items"] == ITEMS
    assert span.attributes["agentflow.step.input_preview"] is True  # its input: a preview


def test_graph_run_counts_a_previewed_maps_items_from_its_real_count():
    # a resumed durable run's trace holds the map but not the items it took from its record:
    # `flowc graph --run` counts them from the map's count, which a preview's `over` is not
    plan = _plan()
    events = [
        {"kind": e.kind, "path": e.path, "stack": list(e.stack), "data": e.data}
        for e in _run()
        if not (e.path.count("/do.") and e.kind in ("step_started", "step_finished"))
    ]
    outcomes = outcomes_from_events(events, plan)
    assert max(o.replayed for o in outcomes.values()) == ITEMS


def test_a_trace_without_the_count_does_not_take_a_previews_length_for_it():
    preview = {"tool_name": "map", "input": {"over": list(range(10))}, "input_preview": True}
    assert started_items(preview) is None
    assert started_items({"tool_name": "map", "input": {"over": [1, 2, 3]}}) == 3  # whole


def test_the_report_says_an_agents_input_is_a_preview():
    started = {"tool_name": "agent", "input": {"agent": "a", "prompt": "p" * 200 + "…"}}
    events = [
        {"kind": "run_started", "path": "", "stack": ["t"], "time": 1.0, "data": {"plan": "t"}},
        {"kind": "step_started", "path": "E0", "stack": ["t"], "time": 1.0,
         "data": {**started, "input_preview": True}},
        {"kind": "step_finished", "path": "E0", "stack": ["t"], "time": 2.0,
         "data": {"tool_name": "agent", "result": 1}},
    ]  # fmt: skip
    assert "a preview: the step's input was too large" in build_report(events)
    events[1]["data"] = started
    assert "a preview:" not in build_report(events)


def test_a_map_whose_list_is_unknown_at_its_start_says_no_count_rather_than_0():
    """A map announced before its list exists (an inlined `let` of its list fails first) has
    no `items` and no `over`: the console says no count, never `(0 items)`."""
    flow = (
        "input { n: int }\nstage s -> int[] {\n  let xs = range(0, input.n)\n"
        "  let ys = map xs as x { x + 1 }\n  return ys\n}\n"
    )
    plan = load_plan_data(api.compile_source(flow, "m.flow").plan, "m.flow")
    stream = io.StringIO()
    result = api.run_sync(plan, {"n": 100_001}, sinks=[ConsoleSink(stream, force_plain=True)])
    assert result.status == "error"
    shown = [line for line in stream.getvalue().splitlines() if "= map" in line]
    assert shown and all("item" not in line for line in shown), shown
