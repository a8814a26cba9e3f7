"""The span bookkeeping of durable runs in OtelSink (runtime/telemetry.py), process by process,
with an in-memory exporter: the run span and stage spans get the ids recorded with the run, are
exported once (by the process that ends them), and a process that only runs units (a worker)
hangs its spans under the run span.  The real thing (SIGKILL, resume, an OTLP receiver) is
tests/runtime/durable/test_durable_trace_continues_across_resumes.py."""

from __future__ import annotations

from collections import Counter

import pytest

pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from agentflow.runtime.events import Event  # noqa: E402
from agentflow.runtime.telemetry import OtelSink, TelemetrySettings, durable_trace  # noqa: E402

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
    first.close()  # the process stops mid-run: run and stage `a` are not exported
    assert sorted(s.name for s in exporter.get_finished_spans()) == ["n E0", "n E1"]

    second = _process(provider, ids, 1)
    _step(second, "E1", "a", 10)
    _step(second, "E2", "b", 11)
    second.handle(Event("run_finished", "", ["p"], STARTED + 12, {"status": "ok"}))
    second.close()

    spans = exporter.get_finished_spans()
    names = Counter(s.name for s in spans)
    assert names == Counter(
        {"run p": 1, "stage a": 1, "stage b": 1, "n E0": 1, "n E1": 2, "n E2": 1}
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
    assert [s.name for s in stopped] == ["n E1"]
    assert "agentflow.resume.attempt" not in stopped[0].attributes


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


def test_a_worker_hangs_unit_spans_under_the_run_span_and_never_exports_it():
    provider, exporter = _provider()
    ids = durable_trace("run-1", STARTED)
    worker = _process(provider, ids, 0)
    _step(worker, "E1/do.3", "", 1)  # a map item run as a unit: no run_started here
    worker.close()
    (item,) = exporter.get_finished_spans()
    assert item.name == "n E1/do.3"
    assert item.parent.span_id == int(ids["span_id"], 16)
    assert item.context.trace_id == int(ids["trace_id"], 16)


def test_the_recorded_trace_is_stable_per_run_and_start_and_differs_between_runs():
    a = durable_trace("run-1", STARTED)
    assert a == durable_trace("run-1", STARTED)
    assert a["trace_id"] != durable_trace("run-1", STARTED + 1)["trace_id"]
    assert a["trace_id"] != durable_trace("run-2", STARTED)["trace_id"]
    assert durable_trace("run-1", STARTED, "garbage")["parent_span_id"] is None
