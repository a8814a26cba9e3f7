"""A durable `parallel` branch (or map item) that finished as the run was stopped — its child
unit's value returned, its result still on its way to the parent when SIGTERM cancelled the
parent's wait — is kept among what the construct finished (``RunResult.partial``): the stopped
run's summary says `review › parallel …: 1 of 3 branches finished (f)` as the plain run's does,
not `steps finished: none` (the console had shown the branch ✓)."""

from __future__ import annotations

import asyncio
from typing import Any

from agentflow.runtime.durable.dbos_engine import DbosEngine
from agentflow.runtime.durable.engine import DurableEffects
from agentflow.runtime.effects import UnitSpec


class _Handle:
    def __init__(self, task: asyncio.Future[Any] | None = None):
        self.task = task

    def get_workflow_id(self) -> str:
        return "r/E0/f"


class _Engine:
    """Starts a child whose result never reaches the parent; the child's body returned."""

    def __init__(self, finished: tuple[Any] | None, later: tuple[Any] | None = None):
        self.finished = finished
        self.later = later  # the body returned while the cancel was being sent
        self.cancelled: list[str] = []

    def workflow_id(self) -> str:
        return "r"

    async def start_child(self, child_id: str, spec: dict[str, Any], queue: str | None) -> Any:
        return _Handle()

    async def collect(self, handle: Any) -> Any:
        await asyncio.Event().wait()  # the result is on its way as the run stops

    async def cancel_child(self, handle: Any, message: str | None = None) -> None:
        self.cancelled.append(handle.get_workflow_id())
        if self.later is not None:
            self.finished = self.later

    def finished_child(self, handle: Any) -> tuple[Any] | None:
        return self.finished


def _stop_a_branch(finished: tuple[Any] | None, later: tuple[Any] | None = None) -> list[Any]:
    kept: list[Any] = []
    engine = _Engine(finished, later)
    effects = DurableEffects(engine, "r", index=None)  # type: ignore[arg-type]
    spec = UnitSpec("body", frame=None, finished=kept.append)  # type: ignore[arg-type]

    async def main() -> None:
        branch = asyncio.ensure_future(effects._child("E0/f", {"kind": "body"}, spec))
        await asyncio.sleep(0.01)
        branch.cancel()  # SIGTERM: the run's steps are cancelled
        try:
            await branch
        except asyncio.CancelledError:
            pass
        assert engine.cancelled == ["r/E0/f"]

    asyncio.run(main())
    return kept


def test_a_branch_whose_unit_returned_is_kept_when_the_run_stops() -> None:
    assert _stop_a_branch(({"ok": True, "n": 1},)) == [{"ok": True, "n": 1}]


def test_a_branch_whose_body_returned_as_the_cancel_was_sent_is_kept() -> None:
    assert _stop_a_branch(None, ({"n": 3},)) == [{"n": 3}]


def test_a_branch_still_at_work_is_not_kept() -> None:
    assert _stop_a_branch(None) == []


def test_the_dbos_engine_finds_a_child_value_from_its_task() -> None:
    async def main() -> tuple[Any] | None:
        done = asyncio.get_running_loop().create_future()
        done.set_result({"n": 2})
        return DbosEngine().finished_child(_Handle(done))

    assert asyncio.run(main()) == ({"n": 2},)
