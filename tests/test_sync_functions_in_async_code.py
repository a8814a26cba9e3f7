"""Every function of the API that runs something has a coroutine for async code and a
synchronous twin (docs/reference/python-api.md "Async code and sync code"): `run_tests` called
where an event loop runs (`asyncio.run(main())`, Jupyter, pytest-asyncio) says to await
`run_tests_async` instead of asyncio's "cannot be called from a running event loop", and
`run_tests_async` runs the same tests on the caller's loop."""

from __future__ import annotations

import asyncio

import pytest
from support.paths import EXAMPLES

import agentflow
from agentflow import api


async def test_run_tests_inside_a_running_loop_names_run_tests_async():
    with pytest.raises(RuntimeError, match=r"await agentflow\.run_tests_async\(\.\.\.\)"):
        agentflow.run_tests([EXAMPLES / "ticket-triage.flow"])


async def test_run_tests_async_runs_the_tests_on_the_callers_loop():
    report = await agentflow.run_tests_async([EXAMPLES / "ticket-triage.flow"])
    assert report.ok and report.summary() == "2 passed, 0 failed"
    sync = await asyncio.to_thread(agentflow.run_tests, [EXAMPLES / "ticket-triage.flow"])
    assert [o.name for o in report.outcomes] == [o.name for o in sync.outcomes]


def test_run_tests_outside_a_loop_runs_its_own():
    assert agentflow.run_tests([EXAMPLES / "ticket-triage.flow"]).ok


async def test_evaluate_inside_a_running_loop_names_evaluate_async():
    with pytest.raises(RuntimeError, match=r"await agentflow\.api\.evaluate_async\(\.\.\.\)"):
        api.evaluate(EXAMPLES / "ticket-triage.flow", model="test")
