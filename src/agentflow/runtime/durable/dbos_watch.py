"""What a DBOS run's process watches while its work runs (the DBOS backend's, below
:mod:`.dbos_engine`).

- :func:`watched`: an operation's work, while the run is watched for ``flowc cancel`` — DBOS
  looks at cancellation only when an operation starts, so a model call in flight went on to its
  end; the run root's status is read every :data:`CANCEL_POLL_S` (one read for all the run's
  calls in flight on a loop: :func:`run_cancelled`) and a cancelled run's work is cancelled;
- :class:`UnitGate`: the units ``flowc resume`` recovers with their root, each held until its
  parent reaches it again (docs/decisions.md "A recovered unit waits for its parent").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from agentflow.errors import Cancelled
from agentflow.runtime.durable.dbos_launch import dbos_with_workflows
from agentflow.runtime.durable.dbos_system import system_database
from agentflow.runtime.interrupt import cancel_within

__all__ = [
    "CANCEL_POLL_S",
    "GATES",
    "GATE_POLL_S",
    "UnitGate",
    "run_cancelled",
    "watched",
]

T = TypeVar("T")

#: Seconds between two looks at whether a unit waiting (for a message, a sleep, its work) was
#: cancelled.
CANCEL_POLL_S = 0.5


class _CancelSeen(BaseException):
    """The run was cancelled while an operation ran (:func:`watched`): a BaseException, so
    neither DBOS nor the item records record it as the operation's outcome; the engine raises
    :class:`~agentflow.errors.Cancelled` for it."""


async def watched(workflow_id: str, fn: Callable[[], Awaitable[T]]) -> T:
    """``await fn()``, an operation's work, while the run of unit ``workflow_id`` is watched
    for a cancel: DBOS looks at cancellation only when an operation starts, so a model call or
    a tool call in flight when ``flowc cancel`` lands went on to its end (minutes, for a slow
    model) before the run noticed.  The work runs in a task of its own; every
    :data:`CANCEL_POLL_S` seconds it runs, the run's status is read (:func:`run_cancelled`)
    and a cancelled run's work is cancelled as Ctrl-C cancels it (given
    :data:`~agentflow.runtime.interrupt.CANCEL_GRACE_S` to unwind, then abandoned), raising
    :class:`_CancelSeen`.  Work that ends before the first look costs no read."""
    work = asyncio.ensure_future(fn())
    try:
        while True:
            done, _ = await asyncio.wait({work}, timeout=CANCEL_POLL_S)
            if done:
                break
            if await run_cancelled(workflow_id):
                await cancel_within(work, message=Cancelled().message)
                raise _CancelSeen()
    finally:
        if not work.done():  # this task was cancelled (a sibling failed, a stop, a deadline)
            await cancel_within(work)
    return work.result()


#: run id → when its root's status was last read, and that read (:func:`run_cancelled`)
_LOOKS: dict[str, tuple[float, asyncio.Future[bool]]] = {}


async def run_cancelled(workflow_id: str) -> bool:
    """True when the run of unit ``workflow_id`` is cancelled (``flowc cancel`` cancels the
    run's root with its units): its root's status, read at most once per
    :data:`CANCEL_POLL_S` for all the operations of the run in flight on this event loop (a map
    of a hundred agents in flight makes two reads a second, not two hundred)."""
    run_id = workflow_id.split("/", 1)[0]
    loop = asyncio.get_running_loop()
    now = time.monotonic()
    looked = _LOOKS.get(run_id)
    if looked is None or now - looked[0] >= CANCEL_POLL_S or looked[1].get_loop() is not loop:
        if len(_LOOKS) > 64:  # runs that ended long ago: forgotten
            for key in [k for k, (t, _) in _LOOKS.items() if now - t > 60 * CANCEL_POLL_S]:
                del _LOOKS[key]
        reading = asyncio.ensure_future(_read_cancelled(run_id))
        reading.add_done_callback(_retrieved)
        looked = _LOOKS[run_id] = (now, reading)
    try:
        return await asyncio.shield(looked[1])
    except Exception:  # noqa: BLE001 - a failed read is no cancel (the next one may see it)
        return False


async def _read_cancelled(run_id: str) -> bool:
    await dbos_with_workflows().DBOS._configure_asyncio_thread_pool()
    found = await asyncio.to_thread(system_database().get_cancelled_workflow_ids, [run_id])
    return run_id in found


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


#: Seconds between two looks, by a recovered unit, at whether its parent has reached it.
GATE_POLL_S = 0.01


class UnitGate:
    """The units of a run recovered in this process with its root (``dbos_engine.recover_run``),
    each held until its parent reaches it again (``DbosEngine.start_child``): the engine
    takes them up in any order, and a unit that started before its parent had taken the run
    up again ran on an executor of its own — its events without the place above them
    (``review › agent(slow)``, not ``review › parallel › s › agent(slow)``) and its model
    calls outside the per-step usage of its run (docs/decisions.md "A recovered unit waits for
    its parent").  ``held``: the ids of the recovered units; ``reached``: those whose parent
    reached them; ``open``: the root ended here (every unit still held goes on)."""

    def __init__(self, held: set[str]):
        self.held = held
        self.reached: set[str] = set()
        self.open = False

    async def wait(self, unit: str) -> None:
        """Return once unit ``unit`` may run."""
        while unit in self.held and unit not in self.reached and not self.open:
            await asyncio.sleep(GATE_POLL_S)


#: run id → its gate, while its root, recovered here, runs (plain sets: units run on the
#: engine's loop, the recovery on a thread)
GATES: dict[str, UnitGate] = {}
