"""The event loop agentflow owns (runtime/loop.py): I/O readiness, timers never early, subprocesses,
the opt-out, and that run_sync / run_plan_sync run on it."""

from __future__ import annotations

import asyncio
import socket
import sys

import pytest

from agentflow.ir.loader import load_plan_data
from agentflow.runtime import loop as flow_loop
from agentflow.runtime.executor import run_plan_sync
from agentflow.runtime.tools.catalog import Catalog, Tool

linux_only = pytest.mark.skipif(not hasattr(flow_loop.selectors, "EpollSelector"), reason="epoll")


@linux_only
def test_new_event_loop_uses_the_precise_selector(monkeypatch):
    monkeypatch.delenv("AGENTFLOW_EVENT_LOOP", raising=False)
    lp = flow_loop.new_event_loop()
    try:
        assert isinstance(lp._selector, flow_loop.PreciseSelector)  # type: ignore[attr-defined]
    finally:
        lp.close()


@pytest.mark.parametrize("value", ["asyncio", "STOCK", "default"])
def test_env_opt_out_gives_the_stock_loop(monkeypatch, value):
    monkeypatch.setenv("AGENTFLOW_EVENT_LOOP", value)
    lp = flow_loop.new_event_loop()
    try:
        assert not isinstance(getattr(lp, "_selector", None), flow_loop.PreciseSelector)
    finally:
        lp.close()


@linux_only
@pytest.mark.parametrize("precise", [True, False])
def test_selector_reports_readiness_and_times_out(precise):
    sel = flow_loop.PreciseSelector()
    sel._precise = precise  # False: the stock path taken when the epoll fd is ≥ FD_SETSIZE
    a, b = socket.socketpair()
    try:
        sel.register(a, flow_loop.selectors.EVENT_READ, "reader")
        assert sel.select(0) == []
        assert sel.select(0.003) == []  # times out with nothing ready
        b.send(b"x")
        ready = sel.select(5.0)  # returns at once: readiness is not delayed by the sleep
        assert [(key.data, events) for key, events in ready] == [
            ("reader", flow_loop.selectors.EVENT_READ)
        ]
        assert [key.data for key, _ in sel.select(None)] == ["reader"]
    finally:
        sel.close()
        a.close()
        b.close()


def test_timers_never_fire_early_and_results_come_back():
    async def main() -> list[float]:
        lp = asyncio.get_running_loop()
        late = []
        for delay in (0.0001, 0.0003, 0.002, 0.011):
            t0 = lp.time()
            await asyncio.sleep(delay)
            late.append(lp.time() - t0 - delay)
        return late

    late = flow_loop.run(main())
    assert len(late) == 4 and all(x >= 0 for x in late)


def test_run_propagates_exceptions_and_cancels_leftover_tasks():
    cancelled = []

    async def straggler() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def main() -> None:
        asyncio.get_running_loop().create_task(straggler())
        await asyncio.sleep(0)
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        flow_loop.run(main())
    assert cancelled == [True]


def test_subprocesses_work_on_the_loop():
    async def main() -> bytes:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "import sys; sys.stdout.write(sys.stdin.read().upper())",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await proc.communicate(b"stdio ok")
        return out

    assert flow_loop.run(main()) == b"STDIO OK"


@linux_only
def test_run_plan_sync_runs_on_the_agentflow_loop(monkeypatch):
    monkeypatch.delenv("AGENTFLOW_EVENT_LOOP", raising=False)

    async def which(args, ctx):
        await asyncio.sleep(0.001)
        return type(asyncio.get_running_loop()._selector).__name__  # type: ignore[attr-defined]

    plan = load_plan_data(
        {
            "version": 1,
            "name": "which_loop",
            "steps": [
                {
                    "id": "M",
                    "tool_name": "map",
                    "input": {
                        "over": "{{ 0..19 }}",
                        "concurrency": 5,
                        "do": {"tool_name": "builtin__which", "input": {}},
                    },
                }
            ],
            "finish": {"mode": "output", "output": "{{ M }}"},
        },
        "which_loop",
    )
    cat = Catalog([Tool(name="builtin__which", description="", input_schema={}, func=which)])
    res = run_plan_sync(plan, {}, catalog=cat)
    assert res.status == "ok", res.error
    assert res.output == ["PreciseSelector"] * 20
