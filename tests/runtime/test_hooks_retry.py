"""on_tool_error and step retry/timeout together (docs/spec/RUNTIME.md §2, §7): the hook sees a
tool's failure once, after the step's retries; a tool step's own timeout is offered to it; the
deadline is not."""

from __future__ import annotations

import asyncio

import pytest

from agentflow import Hooks, abort, substitute
from agentflow.errors import RunError
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.executor import propagate, run_plan
from agentflow.runtime.tools.catalog import Catalog

RETRYING = """
version: 1
name: t
steps:
  - id: E0
    tool_name: user__flaky
    input: {}
    retry: {attempts: 2, on: [transient], backoff: {initial: 1ms}}
"""


def flaky(fail_times: int, code: str = "transient"):
    calls = []

    async def user__flaky():
        calls.append(1)
        if len(calls) <= fail_times:
            raise RunError(code, f"failure {len(calls)}")
        return {"ok": len(calls)}

    return user__flaky, calls


def catalog(fn) -> Catalog:
    cat = Catalog()
    cat.register_function(fn.__name__, fn)
    return cat


async def run(text: str, fn, decide, events=None):
    seen = []

    def on_error(failure):
        seen.append((failure.tool_name, failure.error.code, failure.error.message))
        return decide()

    res = await run_plan(
        load_plan_text(text, "t.plan.yaml"),
        catalog=catalog(fn),
        hooks=Hooks(on_tool_error=on_error),
        sinks=[CallbackSink(events.append)] if events is not None else [],
    )
    return res, seen


async def test_failures_a_retry_recovers_never_reach_the_hook():
    fn, calls = flaky(2)
    events: list = []
    res, seen = await run(RETRYING, fn, lambda: substitute("too early"), events)
    assert res.status == "ok" and res.output == {"ok": 3}
    assert len(calls) == 3 and seen == []
    # the trace still shows each failed attempt
    errors = [
        e.data["error"]["code"] for e in events if e.kind == "tool_finished" and "error" in e.data
    ]
    assert errors == ["transient", "transient"]


@pytest.mark.parametrize(
    ("decide", "status", "output"),
    [
        (lambda: substitute("fallback"), "ok", "fallback"),
        (propagate, "error", None),
        (lambda: abort("stop"), "aborted", None),
    ],
)
async def test_the_last_attempt_failure_reaches_the_hook_once(decide, status, output):
    fn, calls = flaky(99)
    res, seen = await run(RETRYING, fn, decide)
    assert len(calls) == 3
    assert seen == [("user__flaky", "transient", "failure 3")]
    assert res.status == status and res.output == output


async def test_a_code_the_step_does_not_retry_reaches_the_hook_at_once():
    fn, calls = flaky(99, code="tool_error")
    res, seen = await run(RETRYING, fn, lambda: substitute(0))
    assert len(calls) == 1 and seen == [("user__flaky", "tool_error", "failure 1")]
    assert res.status == "ok" and res.output == 0


TIMED = """
version: 1
name: t
steps:
  - id: E0
    tool_name: user__slow
    input: {n: 1}
    timeout: 50ms
  - {id: E1, tool_name: value, input: {value: "{{ E0 }}"}}
"""


async def user__slow(n: int):
    await asyncio.sleep(5)
    return n


@pytest.mark.parametrize(
    ("decide", "status", "output"),
    [
        (lambda: substitute("cached"), "ok", "cached"),
        (propagate, "error", None),
        (lambda: abort("stop"), "aborted", None),
    ],
)
async def test_a_tool_step_timeout_is_offered_to_the_hook(decide, status, output):
    res, seen = await run(TIMED, user__slow, decide)
    assert [s[:2] for s in seen] == [("user__slow", "timeout")]
    assert res.status == status and res.output == output
    if status == "error":
        assert res.error["code"] == "timeout"
    if status == "aborted":
        assert res.error["code"] == "timeout" and res.results == {}


async def test_the_deadline_is_not_offered_to_the_hook():
    text = TIMED.replace("    timeout: 50ms\n", "").replace(
        "name: t\n", "name: t\ndeadline: 50ms\n"
    )
    res, seen = await run(text, user__slow, lambda: substitute("no"))
    assert seen == []
    assert res.status == "error" and res.error["code"] == "deadline_exceeded"


async def test_a_call_skipped_by_the_gate_opens_and_closes_in_the_trace():
    from agentflow import skip

    events: list = []
    res = await run_plan(
        load_plan_text(TIMED, "t.plan.yaml"),
        catalog=catalog(user__slow),
        hooks=Hooks(gate=lambda call: skip("dry run")),
        sinks=[CallbackSink(events.append)],
    )
    assert res.status == "ok" and res.results == {"E0": "dry run", "E1": "dry run"}
    calls = [(e.kind, e.data.get("skipped")) for e in events if e.kind.startswith("tool_")]
    assert calls == [("tool_started", None), ("tool_finished", True)]
    assert [e.data["input"] for e in events if e.kind == "tool_started"] == [{"n": 1}]
