"""The span bookkeeping of durable runs in OtelSink (runtime/telemetry.py), process by process,
with an in-memory exporter: the run span and stage spans get the ids recorded with the run, are
exported once (by the process that ends them), and a process that only runs units (a worker)
hangs its spans under the run span.  The real thing (SIGKILL, resume, an OTLP receiver) is
tests/runtime/durable/test_durable_trace_continues_across_resumes.py."""

from __future__ import annotations

from collections import Counter

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from agentflow.runtime.events import Event
from agentflow.runtime.telemetry import OtelSink
from agentflow.runtime.telemetry_settings import TelemetrySettings, durable_trace

STARTED = 1_700_000_000.0


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _process(provider, ids, attempt: int) -> OtelSink:
    sink = OtelSink(TelemetrySettings(), tracer_provider=provider)
    sink.durable_run(ids, run_id="run-1", plan="p", started=STARTED, attempt=attempt)
    return sink


def _step(sink: OtelSink, path: str, stage: str, t: float, *, finish: bool = True) -> None:
    sink.handle(Event("step_started", path, ["p"], STARTED + t, {"tool_name": "n", "stage": stage}))
    if finish:
        sink.handle(Event("step_finished", path, ["p"], STARTED + t + 0.5, {"result": 1}))


def test_two_processes_export_one_run_span_and_one_span_per_stage_with_the_recorded_ids():
    provider, exporter = _provider()
    ids = durable_trace("run-1", STARTED)
    first = _process(provider, ids, 0)
    first.handle(Event("run_started", "", ["p"], STARTED, {"plan": "p", "file": "p.yaml"}))
    _step(first, "E0", "a", 1)
    _step(first, "E1", "a", 2, finish=False)
    first.handle(Event("tool_started", "E1", ["p"], STARTED + 2, {"tool_name": "n"}))
    first.close()  # the process stops mid-run: run, stage `a` and step E1 are not exported
    assert sorted(s.name for s in exporter.get_finished_spans()) == ["execute_tool n", "n E0"]

    second = _process(provider, ids, 1)
    _step(second, "E1", "a", 10)
    _step(second, "E2", "b", 11)
    second.handle(Event("run_finished", "", ["p"], STARTED + 12, {"status": "ok"}))
    second.close()

    spans = exporter.get_finished_spans()
    names = Counter(s.name for s in spans)
    assert names == Counter(
        {
            "run p": 1,
            "stage a": 1,
            "stage b": 1,
            "n E0": 1,
            "n E1": 1,
            "n E2": 1,
            "execute_tool n": 1,
        }
    )
    assert {s.context.trace_id for s in spans} == {int(ids["trace_id"], 16)}
    run = next(s for s in spans if s.name == "run p")
    assert run.context.span_id == int(ids["span_id"], 16) and run.parent is None
    assert run.start_time == int(STARTED * 1e9)
    assert run.attributes["agentflow.resume.attempt"] == 1
    assert run.attributes["agentflow.run.status"] == "ok"
    assert [e.name for e in run.events] == ["resumed"]
    exported = {s.context.span_id for s in spans}
    assert all(s.parent.span_id in exported for s in spans if s.parent is not None)
    stage_a = next(s for s in spans if s.name == "stage a")
    for step in (s for s in spans if s.name in ("n E0", "n E1")):
        assert step.parent.span_id == stage_a.context.span_id  # both processes' steps
    stopped = [s for s in spans if s.attributes.get("agentflow.stopped")]
    assert [s.name for s in stopped] == ["execute_tool n"]  # the call cut short: not pinned
    e1 = next(s for s in spans if s.name == "n E1")
    assert stopped[0].parent.span_id == e1.context.span_id  # the second process's E1


def _model_call(sink: OtelSink, path: str, round_: int, t: float) -> None:
    data = {"round": round_, "model": "m", "latency_ms": 100, "stage": "a"}
    sink.handle(Event("model_call", path, ["p"], STARTED + t, data))


def _tool_call(sink: OtelSink, path: str, t: float) -> None:
    data = {"tool_name": "n", "stage": "a"}
    sink.handle(Event("tool_started", path, ["p"], STARTED + t, data))
    sink.handle(Event("tool_finished", path, ["p"], STARTED + t + 0.1, {"result": 1}))


def test_an_agent_in_flight_at_a_kill_is_one_span_whose_rounds_from_both_processes_hang_under_it():
    provider, exporter = _provider()
    ids = durable_trace("run-1", STARTED)
    first = _process(provider, ids, 0)
    agent = {"tool_name": "agent", "stage": "a", "input": {"agent": "helper"}}
    first.handle(Event("step_started", "E1", ["p"], STARTED + 1, agent))
    _model_call(first, "E1", 1, 2)
    _tool_call(first, "E1/agent.1/n", 2.1)
    _model_call(first, "E1", 2, 3)
    del first  # SIGKILL: nothing more from this process (its open spans are never exported)

    # the resumed process: E1's start and rounds 1-2's model calls are replayed (no events);
    # round 2's tool call and round 3 run here
    second = _process(provider, ids, 1)
    _tool_call(second, "E1/agent.2/n", 10)
    _model_call(second, "E1", 3, 11)
    second.handle(Event("step_finished", "E1", ["p"], STARTED + 12, {"tool_name": "agent"}))
    second.handle(Event("run_finished", "", ["p"], STARTED + 13, {"status": "ok"}))
    second.close()

    spans = exporter.get_finished_spans()
    names = Counter(s.name for s in spans)
    assert names == Counter(
        {"run p": 1, "stage a": 1, "invoke_agent": 1, "agent turn 1": 1, "agent turn 2": 1, "agent turn 3": 1,
         "chat m": 3, "execute_tool n": 2}
    )  # fmt: skip
    exported = {s.context.span_id: s for s in spans}
    assert all(s.parent.span_id in exported for s in spans if s.parent is not None)
    agent_span = next(s for s in spans if s.name == "invoke_agent")
    assert exported[agent_span.parent.span_id].name == "stage a"
    for number in (1, 2, 3):
        span = next(s for s in spans if s.name == f"agent turn {number}")
        assert span.parent.span_id == agent_span.context.span_id
    assert agent_span.attributes["agentflow.step.tool"] == "agent"


def test_a_step_opened_from_a_childs_event_takes_its_flow_name_when_it_ends():
    """A resumed process opens an agent step whose start was replayed (no event) from its
    model call, as `step E1`; its finish names it as a live one: `invoke_agent AGENT`."""
    provider, exporter = _provider()
    sink = _process(provider, durable_trace("run-1", STARTED), 1)
    _model_call(sink, "E1", 3, 1)
    names = {"stage": "a", "agent": "helper", "name": "r", "label": "a › r = agent(helper)"}
    sink.handle(Event("step_finished", "E1", ["p"], STARTED + 2, {"tool_name": "agent", **names}))
    sink.handle(Event("run_finished", "", ["p"], STARTED + 3, {"status": "ok"}))
    sink.close()
    step = next(s for s in exporter.get_finished_spans() if s.attributes.get("agentflow.step.tool"))
    assert step.name == "invoke_agent helper"
    assert step.attributes["agentflow.step.path"] == "E1"
    assert step.attributes["agentflow.step.label"] == "a › r = agent(helper)"


def test_a_run_started_under_a_traceparent_keeps_that_parent_in_every_process():
    provider, exporter = _provider()
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    ids = durable_trace("run-1", STARTED, parent)
    assert ids["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
    sink = _process(provider, ids, 2)
    sink.handle(Event("run_finished", "", ["p"], STARTED + 1, {"status": "ok"}))
    sink.close()
    (run,) = exporter.get_finished_spans()
    assert run.parent.span_id == 0xB7AD6B7169203331
    assert run.context.trace_id == 0x0AF7651916CD43DD8448EB211C80319C


def test_a_worker_hangs_a_unit_under_its_map_step_of_the_run_process_and_never_exports_it():
    provider, exporter = _provider()
    ids = durable_trace("run-1", STARTED)
    run = _process(provider, ids, 0)
    run.handle(Event("step_started", "E1", ["p"], STARTED + 1, {"tool_name": "map", "stage": "a"}))
    worker = _process(provider, ids, 0)
    _step(worker, "E1/do.3", "", 2)  # a map item run by a worker: no run or map span there
    worker.close()
    (item,) = exporter.get_finished_spans()  # the worker exports the item only
    assert item.name == "n E1/do.3" and item.context.trace_id == int(ids["trace_id"], 16)
    run.handle(Event("step_finished", "E1", ["p"], STARTED + 3, {"tool_name": "map"}))
    run.handle(Event("run_finished", "", ["p"], STARTED + 4, {"status": "ok"}))
    run.close()
    spans = {s.context.span_id: s for s in exporter.get_finished_spans()}
    assert sorted(s.name for s in spans.values()) == ["map E1", "n E1/do.3", "run p", "stage a"]
    assert spans[item.parent.span_id].name == "map E1"


def test_the_recorded_trace_is_stable_per_run_and_start_and_differs_between_runs():
    a = durable_trace("run-1", STARTED)
    assert a == durable_trace("run-1", STARTED)
    assert a["trace_id"] != durable_trace("run-1", STARTED + 1)["trace_id"]
    assert a["trace_id"] != durable_trace("run-2", STARTED)["trace_id"]
    assert durable_trace("run-1", STARTED, "garbage")["parent_span_id"] is None
