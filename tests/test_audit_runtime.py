"""Regression tests for defects found by the issue-4 runtime audit (session 2)."""

from __future__ import annotations

import io
import time

from agentflow.runtime.events import ConsoleSink, Event


def test_live_view_never_prints_raw_markup_while_lines_are_printed():
    """A plain line printed while the live view is up re-renders the view with the line's
    options (markup off); the view's cells must not rely on markup (`[cyan]…[/]` leaked)."""
    stream = io.StringIO()
    sink = ConsoleSink(stream, force_live=True)
    now = time.time()
    sink.handle(Event("run_started", "", ["p"], now, {"plan": "p"}))
    sink.handle(
        Event("step_started", "E1", ["p"], now, {"tool_name": "map", "input": {"over": [1]}})
    )
    sink.handle(Event("step_started", "E1/do.0", ["p"], now, {"tool_name": "user__x"}))
    sink._live.refresh()
    sink.handle(Event("warning", "E1/do.0", ["p"], now, {"message": "careful"}))
    sink.handle(Event("step_finished", "E1/do.0", ["p"], now, {"elapsed_ms": 3}))
    sink.handle(Event("run_finished", "", ["p"], now, {"status": "ok", "duration_ms": 5}))
    sink.close()
    out = stream.getvalue()
    assert "careful" in out and "E1/do.0" in out
    assert "[cyan]" not in out and "[/]" not in out


def _paired(events) -> tuple[list[str], list[str]]:
    started = [e.path for e in events if e.kind == "tool_started"]
    finished = [e.path for e in events if e.kind == "tool_finished"]
    return sorted(started), sorted(finished)


async def test_every_tool_started_gets_a_tool_finished_on_deadline_and_sub_plan_exit():
    """RUNTIME.md §8: a dispatch cancelled by the deadline, or a plan__ call ended by an
    `exit` error inside the sub-plan, still closes its `tool_started` with a `tool_finished`."""
    import asyncio

    from agentflow.ir.loader import load_plan_text
    from agentflow.runtime.events import CallbackSink
    from agentflow.runtime.executor import run_plan
    from agentflow.runtime.tools.catalog import Catalog

    async def nap(seconds: float = 10.0) -> dict:
        await asyncio.sleep(seconds)
        return {}

    cat = Catalog()
    cat.register_function("user__nap", nap)
    plan = load_plan_text(
        """
version: 1
name: t
deadline: 100ms
steps:
  - {id: E1, tool_name: user__nap, input: {seconds: 10}}
""",
        "t.yaml",
    )
    events: list = []
    res = await run_plan(plan, catalog=cat, sinks=[CallbackSink(events.append)])
    assert res.status == "error" and res.error["code"] == "deadline_exceeded"
    started, finished = _paired(events)
    assert started == finished == ["E1"]
    fin = next(e for e in events if e.kind == "tool_finished")
    assert fin.data["error"]["code"] == "aborted"

    plan = load_plan_text(
        """
version: 1
name: t
steps:
  - {id: E1, tool_name: plan__inner, input: {}}
plans:
  inner:
    version: 1
    name: inner
    steps:
      - {id: I1, tool_name: exit, input: {status: error, message: no}}
""",
        "t.yaml",
    )
    events = []
    res = await run_plan(plan, catalog=cat, sinks=[CallbackSink(events.append)])
    assert res.status == "error" and res.error["step_path"] == "E1/I1"
    started, finished = _paired(events)
    assert started == finished == ["E1"]
    fin = next(e for e in events if e.kind == "tool_finished")
    assert fin.data["error"]["code"] == "failed"


def test_unknown_fields_in_retry_and_backoff_are_load_errors():
    """PLAN_IR.md §1: unknown fields are errors with the nearest valid name, at file:line:col —
    inside `retry` and `retry.backoff` too (they used to load silently as the defaults)."""
    import pytest

    from agentflow.errors import PlanLoadError
    from agentflow.ir.loader import load_plan_text

    text = (
        "version: 1\nname: r\nsteps:\n  - id: E1\n    tool_name: value\n"
        "    input: { value: 1 }\n    retry: { attempt: 1, backof: { intial: 1s } }\n"
        "  - id: E2\n    tool_name: value\n    input: { value: 1 }\n"
        "    retry: { attempts: 1, backoff: { intial: 1s } }\n"
    )
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(text, "r.yaml")
    msg = str(info.value)
    assert "r.yaml:7:14: steps[0].retry.attempt: unknown field `attempt`" in msg
    assert "did you mean `attempts`?" in msg
    assert "r.yaml:7:26: steps[0].retry.backof: unknown field `backof`" in msg
    assert "r.yaml:11:38: steps[1].retry.backoff.intial: unknown field `intial`" in msg
    assert "did you mean `initial`?" in msg
