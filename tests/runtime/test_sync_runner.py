"""Running a coroutine for synchronous callers (runtime/interrupt.py ``run``: run_sync,
run_plan_sync, the CLI): the stock asyncio loop, exceptions and leftover tasks, subprocesses,
refusal inside a running loop, and the default executor of daemon threads."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import time
import warnings

import pytest
from support.timing import Stretch, scaled

from agentflow.ir.loader import load_plan_data
from agentflow.runtime import interrupt
from agentflow.runtime.executor import run_plan_sync
from agentflow.runtime.tools.catalog import Catalog, Tool


def test_timers_never_fire_early_and_results_come_back():
    async def main() -> list[float]:
        lp = asyncio.get_running_loop()
        late = []
        for delay in (0.0001, 0.0003, 0.002, 0.011):
            t0 = lp.time()
            await asyncio.sleep(delay)
            late.append(lp.time() - t0 - delay)
        return late

    late = interrupt.run(main())
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
        interrupt.run(main())
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

    assert interrupt.run(main()) == b"STDIO OK"


def test_run_plan_sync_runs_on_the_stock_asyncio_loop():
    """No loop of agentflow's own: run_plan_sync drives a map on the loop asyncio's policy makes
    (``asyncio.run``'s), so an application's loop policy (e.g. uvloop) applies to it too."""
    probe = asyncio.new_event_loop()
    stock = type(probe).__name__
    probe.close()

    async def which(args, ctx):
        await asyncio.sleep(0.001)
        return type(asyncio.get_running_loop()).__name__

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
    assert res.output == [stock] * 20


async def test_sync_entry_points_inside_a_running_loop_fail_clearly():
    # before: "Cannot run the event loop while another loop is running" (raised by the Runner's
    # cleanup, hiding the cause) plus "coroutine ... was never awaited" warnings
    async def never() -> None:  # pragma: no cover - must not run
        raise AssertionError("ran")

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a never-awaited coroutine would be reported here
        with pytest.raises(RuntimeError, match=r"await agentflow\.run\(\.\.\.\)") as info:
            interrupt.run(never())
        gc.collect()
    assert "cannot be called while an event loop is running" in str(info.value)
    plan = load_plan_data(
        {
            "version": 1,
            "name": "n",
            "steps": [{"id": "V", "tool_name": "value", "input": {"value": 1}}],
            "finish": {"mode": "output", "output": "{{ V }}"},
        },
        "n",
    )
    with pytest.raises(RuntimeError, match="run_plan_sync"):
        run_plan_sync(plan, {})


def test_an_abandoned_executor_thread_does_not_hold_the_run_open():
    """A tool awaiting ``asyncio.to_thread`` (the loop's default executor) under a 200 ms deadline:
    the run ends on time; before, the end of the run joined the thread (here: up to 20 s)."""
    release = threading.Event()

    async def blocking(args, ctx):
        await asyncio.to_thread(release.wait, 20)
        return "late"

    plan = load_plan_data(
        {
            "version": 1,
            "name": "abandon",
            "deadline": "200ms",
            "steps": [{"id": "S", "tool_name": "builtin__blocking", "input": {}}],
            "finish": {"mode": "output", "output": "{{ S }}"},
        },
        "abandon",
    )
    cat = Catalog([Tool(name="builtin__blocking", description="", input_schema={}, func=blocking)])
    t0 = time.monotonic()
    try:
        res = run_plan_sync(plan, {}, catalog=cat)
        wall = time.monotonic() - t0
    finally:
        release.set()
    assert res.status == "error" and res.error["code"] == "deadline_exceeded", res.error
    assert wall < scaled(5.0)  # generous (the bound is 0.5 s); the bug took the full 20 s


def test_daemon_executor_runs_bounds_and_abandons():
    ex = interrupt.DaemonThreadExecutor(max_workers=2)
    gate = threading.Event()
    try:
        assert ex.submit(pow, 2, 10).result(timeout=5) == 1024
        with pytest.raises(ZeroDivisionError):
            ex.submit(lambda: 1 / 0).result(timeout=5)
        names: list[str] = []
        started = threading.Semaphore(0)

        def hold() -> bool:
            names.append(threading.current_thread().name)
            started.release()
            return gate.wait(10)

        busy = [ex.submit(hold), ex.submit(hold)]
        assert started.acquire(timeout=5) and started.acquire(timeout=5)
        queued = ex.submit(pow, 3, 2)  # both workers busy: waits in the queue
        assert not queued.done()
        assert all(t.daemon for t in threading.enumerate() if t.name.startswith("agentflow-exec"))
        with Stretch() as clock:
            ex.shutdown(wait=True)  # never waits for the running calls
        assert clock.took < clock.bound(5.0)
        assert queued.cancelled()
        with pytest.raises(RuntimeError, match="after shutdown"):
            ex.submit(pow, 1, 1)
    finally:
        gate.set()
    assert [f.result(timeout=5) for f in busy] == [True, True]
    assert len(set(names)) == 2  # at most max_workers threads, both used
