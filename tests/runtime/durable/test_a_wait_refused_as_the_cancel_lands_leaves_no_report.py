"""A question's wait that DBOS refuses just as the cancel lands — the refusal arriving while the
engine's own status poll is already saying "cancelled" — ends as a cancelled run and leaves no
"Task exception was never retrieved" report (with a DBOS traceback) for asyncio to print."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from agentflow.runtime.durable import dbos_engine
from agentflow.runtime.hooks import RunAborted


def test_a_wait_refused_while_the_poll_sees_the_cancel_is_retrieved(monkeypatch):
    import dbos

    polled, refused = asyncio.Event(), asyncio.Event()

    async def recv_async(topic: str, timeout_seconds: float) -> Any:
        await polled.wait()  # the wait is refused only once the status poll has begun
        refused.set()
        raise dbos.error.DBOSWorkflowConflictIDError("c1")

    async def cancelled(workflow_id: str) -> bool:
        polled.set()
        await refused.wait()  # the refusal has landed; the poll reports the cancel after it
        await asyncio.sleep(0)
        return True

    monkeypatch.setattr(dbos.DBOS, "recv_async", recv_async)
    monkeypatch.setattr(dbos_engine, "_cancelled", cancelled)
    monkeypatch.setattr(dbos_engine, "CANCEL_POLL_S", 0.01)
    monkeypatch.setattr(dbos_engine.DbosEngine, "workflow_id", lambda self: "c1")
    reports: list[dict[str, Any]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: reports.append(ctx))
        with pytest.raises(RunAborted, match="cancelled"):
            await dbos_engine.DbosEngine().receive("answer", None)
        gc.collect()
        await asyncio.sleep(0)

    asyncio.run(main())
    gc.collect()
    assert reports == []
