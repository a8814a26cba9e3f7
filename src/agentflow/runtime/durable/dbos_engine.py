"""The DBOS backend of durable runs (``dbos`` 3.4.x: a library over a SQLite file or PostgreSQL).

- :func:`launch` starts DBOS in this process for one database (``application_version`` pinned to
  agentflow's version: a run started by one version is recovered only by the same version;
  :mod:`.dbos_launch`, with the reads of ``flowc runs show``, re-exported here);
- two registered workflows: ``agentflow.run`` (a run; its input is the plan *text*, the input
  and where the configuration is, so editing the `.flow` file never changes a run in flight)
  and ``agentflow.unit`` (a child unit: a map item, a parallel branch, a ``plan__*`` call or a
  tool call of a multi-call agent round, or a rate-limited model call);
- :class:`DbosEngine`, the :class:`~agentflow.runtime.durable.engine.Engine` over DBOS steps,
  child workflows, ``sleep``, ``set_event`` / ``recv``;
- the per-process :class:`Runtime` of each run (plan, context, executor), built from the run's
  recorded input when a worker or a resumed process meets a unit of a run it did not start.

SQLite: WAL journal, ``synchronous=FULL`` (a committed step survives power loss), a busy
timeout of 30 s.  One private DBOS call is used: ``system_database.await_workflow_result_async`` (the
result of a child without recording a ``getResult`` operation in the parent, whose position
would depend on which child finished first).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from agentflow.core.vocabulary import Code
from agentflow.errors import Cancelled, InputError, RunError
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.control import BATCH_CONCURRENCY
from agentflow.runtime.durable.answers import (
    CANCEL,
    FINISHED,
    UNANSWERED,
    claim,
    claims,
    claims_table,
    end_claim_in,
    question_key,
)
from agentflow.runtime.durable.dbos_launch import (
    ON_SHUTDOWN,
    REGISTRARS,
    RUN_WORKFLOW,
    UNIT_WORKFLOW,
    _recovery_queue,
    _state,
    check_recorded,
    dbos_with_workflows,
    launch,
    launched,
    lazy_labels,
    published,
    query_item_page,
    query_items,
    recorded_input,
    shutdown,
    waiting_questions,
)
from agentflow.runtime.durable.dbos_system import (
    dbos_instance,
    query_steps,
    query_workflows,
    sqlite_path,
    synced,
    system_database,
    unsynced,
)
from agentflow.runtime.durable.dbos_watch import (
    CANCEL_POLL_S,
    GATES,
    UnitGate,
    _CancelSeen,
    watched,
)
from agentflow.runtime.durable.engine import (
    NO_MESSAGE,
    DurableEffects,
    PlanIndex,
    Runtime,
    run_unit,
)
from agentflow.runtime.durable.items import ItemRecords, items_for
from agentflow.runtime.durable.liveness import taken_up
from agentflow.runtime.durable.ratelimit import rate_slot
from agentflow.runtime.durable.records import (
    ForeignRecord,
    UnreadableRecord,
    check_readable,
    check_record,
    lost_secret,
    question_digest,
    record_problem,
)
from agentflow.runtime.durable.spec import (
    context_from_spec,
    refuse_missing_workspace,
    run_root,
    trace_of,
)
from agentflow.runtime.interrupt import (
    StopRequest,
    cancel_within,
    stop_request,
    use_stop_request,
)

if TYPE_CHECKING:
    from dbos import DBOS

    from agentflow.ir.models import Plan
    from agentflow.runtime.config import Config
    from agentflow.runtime.context import RunContext
    from agentflow.runtime.events import Sink

__all__ = [
    "RUN_WORKFLOW",
    "UNIT_WORKFLOW",
    "DbosEngine",
    "build_runtime",
    "check_recorded",
    "dbos_with_workflows",
    "fleet_map_batch",
    "lazy_labels",
    "never_taken_up",
    "reuse_table",
    "waiting_questions",
    "register_queues",
    "query_item_page",
    "query_steps",
    "query_workflows",
    "sqlite_path",
    "Runtime",
    "launch",
    "launched",
    "register_runtime",
    "runtime_for",
    "shutdown",
]

T = TypeVar("T")

#: Seconds between two reads of a child's outcome while the parent waits for it.
RESULT_POLL_S = 0.05
#: Reads of a unit's status after DBOS refused its message, before the refusal is taken for
#: something other than a cancel (:meth:`DbosEffects.receive`).
_CANCEL_SEEN_POLLS = 10
#: A wait "without timeout" (DBOS needs a number): ten years.
FOREVER_S = 10 * 365 * 24 * 3600.0

_RUNTIMES: dict[str, Runtime] = {}
_RECORDED: dict[str, int] = {}
#: run id → the very spec object this process passes to ``start_workflow_async`` for it
#: (:func:`starting`): the workflow body that receives that object was just inserted by this
#: call, so it has recorded nothing yet and its records are not read
_STARTING: dict[str, dict[str, Any]] = {}
#: runtimes being built (one build per run at a time: :func:`runtime_for`)
_BUILDING: dict[str, asyncio.Future[Runtime]] = {}
#: Sinks of this process for runs it did not start (a worker's ``--trace``, a resume's trace).
_PROCESS_SINKS: list[Sink] = []
#: unit id → the task its workflow body runs in, in this process, while it runs: what
#: :meth:`DbosEngine.cancel_child` cancels (DBOS hands the parent only a shield of it)
_UNIT_TASKS: dict[str, asyncio.Task[Any]] = {}
#: unit id → the value its body returned in this process, while its workflow records it
#: (:meth:`DbosEngine.finished_child`)
_RETURNED: dict[str, Any] = {}


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Done callback: mark ``task``'s exception as retrieved (its owner may have left first)."""
    if not task.cancelled():
        task.exception()


def set_process_sinks(sinks: list[Sink]) -> None:
    """Event sinks for the units of runs this process did not start (a worker's trace)."""
    _PROCESS_SINKS[:] = sinks


# ---------------------------------------------------------------------------------------------
# The engine


class DbosEngine:
    """:class:`~agentflow.runtime.durable.engine.Engine` over DBOS (one per run and process).

    ``batch``: a ``--fleet`` run's map batch size, recorded in the run's input
    (``spec["map_batch"]``, so every worker agrees): a map of more items runs as batch units
    ``RUN/<map path>/batch.K`` taken by the workers, whose one-call items are item records of
    the batch (docs/durable.md "Big maps on a fleet").  None: a map is never batched (one
    process records its items as rows of its own unit)."""

    #: an operation whose record lost a secret runs again on replay, in the workflow
    #: (engine.py ``DurableEffects._again``)
    reruns_unrecorded = True

    def __init__(self, batch: int | None = None):
        self.batch = batch if batch and batch > 0 else None

    def map_batch(self, n: int) -> int | None:
        """Items per batch for a map of ``n`` items, or None when it runs unbatched."""
        return self.batch if self.batch is not None and n > self.batch else None

    def workflow_id(self) -> str:
        """The running DBOS workflow's id."""
        return str(dbos_with_workflows().DBOS.workflow_id or "")

    def cancelled_now(self) -> bool:
        """True when the running unit is cancelled in the database (``flowc cancel`` from
        another process), read at once and synchronously: asked by a busy evaluation, which
        holds the event loop (interrupt.EvalWatch, at most every ``CANCEL_ASK_S``); DBOS itself
        looks only when the next operation starts. A failed read is no cancel."""
        workflow_id = self.workflow_id()
        if not workflow_id:
            return False
        try:
            return workflow_id in system_database().get_cancelled_workflow_ids([workflow_id])
        except Exception:  # noqa: BLE001 - the next operation sees the cancel all the same
            return False

    def now(self) -> float:
        """The wall clock (deadlines count from the run's recorded start)."""

        return time.time()

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        """``DBOS.run_step_async`` named ``name``; a recorded step of another name at this
        position (the workflow took another path than when it was recorded) is a
        ``durable_replay_mismatch``."""
        dbos = dbos_with_workflows()
        await self.flush()
        ran = False

        workflow_id = self.workflow_id()

        async def body() -> T:
            nonlocal ran
            ran = True
            return await watched(workflow_id, fn)

        try:
            value = await dbos.DBOS.run_step_async({"name": name}, body)
        except dbos.error.DBOSUnexpectedStepError as e:
            raise _mismatch(e) from None
        except UnreadableRecord as e:  # replaying a row that is not agentflow's JSON
            raise _unreadable(workflow_id, name, e) from None
        except (dbos.error.DBOSWorkflowCancelledError, _CancelSeen):
            raise Cancelled() from None
        if not ran:  # replayed: a record agentflow wrote, or the run cannot go on
            _replayable(self.workflow_id(), name, value)
        return value, ran

    async def recorded_item(self, path: str) -> bool:
        """True when the running workflow recorded the one-call unit at ``path`` (items.py)."""
        return await _items().recorded_at(self.workflow_id(), path)

    async def item_step(
        self, name: str, fn: Callable[[], Awaitable[T]], *, ordered: bool = False
    ) -> tuple[T, bool]:
        """An idempotent operation recorded as a row of ``agentflow_items`` (items.py: group
        commit, read back by name) rather than as a DBOS step (two transactions)."""
        workflow_id = self.workflow_id()
        try:
            value, ran = await _items().step(
                workflow_id, name, lambda: watched(workflow_id, fn), ordered=ordered
            )
        except UnreadableRecord as e:  # replaying a row that is not agentflow's JSON
            raise _unreadable(workflow_id, name, e) from None
        except _CancelSeen:
            raise Cancelled() from None
        if not ran:
            _replayable(self.workflow_id(), name, value)
        return value, ran

    async def flush(self) -> None:
        """Wait until the running workflow's written-behind item records are committed
        (items.py): before each engine operation, so a record is never followed by another
        whose predecessors are not recorded, and before the workflow's result; a root's
        insert, committed behind (execution.run_durable), is on disk by then too."""
        await _items().flush(self.workflow_id())
        await synced(self.workflow_id())

    async def started(self) -> None:
        """Return once the running unit's start is on disk (a root's insert, committed behind:
        execution.run_durable) and its id was given."""
        await synced(self.workflow_id())

    def pending_record(self) -> Any:
        """The running workflow's latest item record written behind, while it is not
        committed, and a root's insert while it is not on disk (a future: done once they
        are); None when there is none."""
        workflow_id = self.workflow_id()
        last = _items().last_pending(workflow_id)
        syncing = unsynced(workflow_id)
        if syncing is None:
            return last
        return syncing if last is None else asyncio.gather(syncing, last, return_exceptions=True)

    def replaying_items(self) -> bool:
        """True while the running workflow has ordered item records not replayed yet."""
        return _items().replaying(self.workflow_id())

    async def sleep(self, seconds: float) -> None:
        """``DBOS.sleep_async``: the wake-up time is recorded (a resumed unit sleeps what is
        left).  DBOS looks at cancellation only when an operation starts, so the unit's status
        is read every :data:`CANCEL_POLL_S` seconds while it sleeps: ``flowc cancel`` from
        another process ends a long sleep promptly (:class:`Cancelled`, as :meth:`receive`)."""
        await self.flush()
        if seconds <= CANCEL_POLL_S:
            await dbos_with_workflows().DBOS.sleep_async(max(0.0, seconds))
            return
        workflow_id = self.workflow_id()
        sleeping = asyncio.ensure_future(dbos_with_workflows().DBOS.sleep_async(seconds))
        sleeping.add_done_callback(_retrieved)
        try:
            while True:
                done, _ = await asyncio.wait({sleeping}, timeout=CANCEL_POLL_S)
                if done:
                    break
                if await _cancelled(workflow_id):
                    raise Cancelled()
        finally:
            if not sleeping.done():
                sleeping.cancel()
                with contextlib.suppress(BaseException):
                    await sleeping
        sleeping.result()

    async def publish(self, key: str, value: Any) -> None:
        """``DBOS.set_event_async`` on the running workflow."""
        await self.flush()
        await dbos_with_workflows().DBOS.set_event_async(key, value)

    async def receive(self, topic: str, timeout: float | None) -> Any:
        """``DBOS.recv_async`` (durable timeout); :data:`NO_MESSAGE` when it passed.  The wait
        ends early when the unit is cancelled (``flowc cancel`` from another process): DBOS
        only looks at cancellation when an operation starts, so a question waited on for ever
        would keep its process and the run's lock; the unit's status is read every
        :data:`CANCEL_POLL_S` seconds while it waits, and a cancelled wait raises
        :class:`~agentflow.runtime.hooks.RunAborted` as a cancelled step does."""
        dbos = dbos_with_workflows()
        seconds = FOREVER_S if timeout is None else max(0.0, timeout)
        await self.flush()
        workflow_id = self.workflow_id()
        waiting = asyncio.ensure_future(dbos.DBOS.recv_async(topic, timeout_seconds=seconds))
        # the wait may end refused (the cancel landed) just as a poll below sees the cancel and
        # leaves: its outcome is taken here, so asyncio never logs "Task exception was never
        # retrieved" with a DBOS traceback on the terminal
        waiting.add_done_callback(_retrieved)
        try:
            while True:
                done, _ = await asyncio.wait({waiting}, timeout=CANCEL_POLL_S)
                if done:
                    break
                if await _cancelled(workflow_id):
                    raise Cancelled()
        finally:
            if not waiting.done():
                waiting.cancel()
                with contextlib.suppress(BaseException):
                    await waiting
        try:
            message = waiting.result()
        except (dbos.error.DBOSWorkflowCancelledError, dbos.error.DBOSWorkflowConflictIDError):
            # the wait ended as the cancel landed: taking the message was refused. The cancel
            # may not be visible to this process's next read at once (seen under load: the
            # refusal, then a status read that still said pending), so it is read again for a
            # few polls before the refusal counts as anything else
            for _ in range(_CANCEL_SEEN_POLLS):
                if await _cancelled(workflow_id):
                    raise Cancelled() from None
                await asyncio.sleep(CANCEL_POLL_S / 5)
            raise
        return NO_MESSAGE if message is None else message

    async def answer_claimed(self, key: str) -> bool:
        """True when an answer to question ``key`` of the running unit was accepted already
        (its claim row: answers.py), e.g. by ``flowc answer`` while the run was stopped."""

        found = await claims([self.workflow_id()])
        claim_ = found.get((self.workflow_id(), key))
        return claim_ is not None and claim_.kind == "answer"

    async def close_unanswered(self, key: str) -> bool:
        """Claim question ``key`` of the running unit as unanswered (runtime/durable/answers.py);
        not an operation of the record: the claim row is its own record."""

        await self.flush()
        closed = await claim(self.workflow_id(), key, UNANSWERED)
        return closed.kind == UNANSWERED  # this wait's claim, also when replayed

    async def claim_end(self) -> bool:
        """The running root takes its run's end (answers.claim_end): False when ``flowc
        cancel`` took it first."""
        workflow_id = self.workflow_id()
        taken = await _items().commit_with(workflow_id, _EndClaim(workflow_id))
        return bool(taken != CANCEL)

    async def start_child(self, child_id: str, spec: dict[str, Any], queue: str | None) -> Any:
        """A child workflow ``child_id`` (``DBOS.start_workflow_async``, or enqueued on
        ``queue`` in the partition ``spec["queue_key"]``)."""
        gate = GATES.get(child_id.split("/", 1)[0])
        if gate is not None:  # a unit recovered with its root: its parent reached it
            gate.reached.add(child_id)
        await self.flush()
        dbos = dbos_with_workflows()
        try:
            with dbos.SetWorkflowID(child_id):
                if queue is None:
                    handle = await dbos.DBOS.start_workflow_async(_WORKFLOWS[2], spec)
                else:
                    partition = spec.get("queue_key")
                    with dbos.SetEnqueueOptions(queue_partition_key=partition):
                        handle = await dbos.DBOS.enqueue_workflow_async(queue, _WORKFLOWS[2], spec)
        except dbos.error.DBOSUnexpectedStepError as e:
            raise _mismatch(e) from None
        if handle.get_workflow_id() != child_id:
            raise RunError(
                Code.DURABLE_REPLAY_MISMATCH,
                f"the run was recorded starting unit {handle.get_workflow_id()!r} here, "
                f"not {child_id!r} (the plan or agentflow changed under a run in flight?)",
            )
        return handle

    async def collect(self, handle: Any) -> Any:
        """The child's result: awaited directly when it runs here, else read from the
        database (no operation is recorded in the parent)."""
        errors = dbos_with_workflows().error
        try:
            task = getattr(handle, "task", None)
            if task is not None:
                return await asyncio.shield(task)
            from dbos._dbos import _get_dbos_instance

            sys_db = _get_dbos_instance()._sys_db
            return await sys_db.await_workflow_result_async(handle.get_workflow_id(), RESULT_POLL_S)
        except (errors.DBOSAwaitedWorkflowCancelledError, errors.DBOSWorkflowCancelledError):
            # the child was cancelled with its run (`flowc cancel`): the run stops as a
            # cancelled step does, so its steps and the run itself still finish (a DBOS
            # exception would leave the executor without `run_finished`)
            raise Cancelled() from None

    async def cancel_child(self, handle: Any, message: str | None = None) -> None:
        """``DBOS.cancel_workflow_async`` (a sibling failed, or the run was stopped), and, when
        the child runs in this process, its body cancelled and awaited (at most
        :data:`~agentflow.runtime.interrupt.CANCEL_GRACE_S`): DBOS's ``handle.task`` is a
        shield of the child's task, and DBOS looks at the cancel only when the child's next
        operation starts, so a model request in flight went on past the parent's end — its
        reply read after ``run_finished``, outside the trace and the record (docs/durable.md
        "What a cancelled run's process keeps").  ``message``: why (a sibling failed), the
        message the child's task is cancelled with, which its steps report."""
        child_id = handle.get_workflow_id()
        dbos = dbos_with_workflows()
        # in a parent that is cancelled itself (`flowc cancel` cancels the run's family), DBOS
        # refuses to record the call with its BaseException: the child is cancelled already
        with contextlib.suppress(Exception, dbos.error.DBOSWorkflowCancelledError):
            await dbos.DBOS.cancel_workflow_async(child_id)
        task = _UNIT_TASKS.get(child_id)
        if (
            task is not None
            and task is not asyncio.current_task()
            and task.get_loop() is asyncio.get_running_loop()  # (a recovered child: DBOS's loop)
        ):
            await cancel_within(task, message=message)

    def finished_child(self, handle: Any) -> tuple[Any] | None:
        """``(value,)`` when the child unit of ``handle`` ran in this process and its body
        returned ``value`` (its workflow may still be recording it), else None: what a parent
        stopped meanwhile keeps among what it finished (engine.py ``DurableEffects._child``)."""
        task = getattr(handle, "task", None)
        if task is not None and task.done() and not task.cancelled() and not task.exception():
            return (task.result(),)
        child_id = handle.get_workflow_id()
        return (_RETURNED[child_id],) if child_id in _RETURNED else None

    def replaying(self) -> bool:
        """True while the running workflow's step counter is behind what it has recorded."""
        from dbos._context import get_local_dbos_context

        ctx = get_local_dbos_context()
        if ctx is None or not ctx.workflow_id:
            return False
        recorded = _RECORDED.get(ctx.workflow_id, 0)
        return recorded > 0 and ctx.function_id < recorded


async def _cancelled(workflow_id: str) -> bool:
    """True when unit ``workflow_id`` is cancelled in the database (read directly, recording
    nothing)."""
    await dbos_with_workflows().DBOS._configure_asyncio_thread_pool()
    found = await asyncio.to_thread(system_database().get_cancelled_workflow_ids, [workflow_id])
    return workflow_id in found


def _unreadable(workflow_id: str, name: str, e: Exception) -> RunError:
    run_id = workflow_id.split("/", 1)[0]
    return RunError(
        Code.DURABLE_REPLAY_MISMATCH,
        f"run {run_id} cannot be resumed: the recorded result of {name} cannot be read "
        f"({e}); nothing in it was run",
    )


def _replayable(workflow_id: str, name: str, value: Any) -> None:
    """Raise :func:`_unreadable` when ``value``, operation ``name``'s recorded result read
    back to be replayed, is not one agentflow wrote (records.record_problem)."""
    run_id = workflow_id.split("/", 1)[0]
    reason = record_problem({"function_name": name, "output": value}, run_id)
    if reason is not None:
        raise _unreadable(workflow_id, name, ForeignRecord(reason))


def _mismatch(e: Exception) -> RunError:
    return RunError(
        Code.DURABLE_REPLAY_MISMATCH,
        f"resuming the run reached another operation than the one recorded: {e} (a durable "
        "run replays the code it was recorded with; agentflow or a tool changed meanwhile?)",
    )


class _EndClaim:
    """The root's end claim (answers.end_claim_in) as a write of the batch that commits the
    run's last item records (items.py ``commit_with``): one transaction as a run ends."""

    def __init__(self, workflow_id: str):
        self.workflow_id = workflow_id

    def prepare(self, engine: Any) -> None:
        claims_table(engine)

    def __call__(self, conn: Any) -> str:
        return end_claim_in(conn, self.workflow_id, FINISHED)


def _items() -> ItemRecords:
    """The item records (items.py) of this process's database."""
    return items_for(str(_state["url"]), system_database)


def recover_run(run_id: str) -> list[str]:
    """Put the unfinished workflows of run ``run_id`` — its root and its child units, PENDING
    under a process that is gone — back to be run, and nothing else: DBOS's own recovery of
    one workflow (``reenqueue_for_recovery``, as ``_recover_workflow`` does it: re-enqueued
    once, only while it is still PENDING under the executor it was found under), applied to
    the run's family only.  Units held by a
    fleet worker (``worker:NAME``) are left to their worker, its restart or the liveness watch
    (liveness.py) — except when that worker held the run's root too: then its units of the
    run are recovered with it.  Returns the ids recovered.

    DBOS's startup recovery takes every pending workflow of the launching process's executor
    id, whatever its run (two ``agentflow.run(durable=True)`` of one process share one): a
    process that resumes a run launches under an executor id of its own, which holds nothing,
    and recovers the run with this.  DBOS puts what it recovers on its internal queue, which
    every DBOS process of the database polls (another run's live process would take the run);
    here it goes on the run's recovery queue, an in-memory queue of this process alone
    (docs/decisions.md "Resume recovers its own run")."""
    from dbos._shard_keys import bind_shard_keys
    from dbos._utils import GlobalParams

    dbos = dbos_instance()
    queue = _recovery_queue(run_id)
    family = dbos._sys_db.list_workflows(
        workflow_id_prefix=run_id, status=["PENDING"], load_input=False, load_output=False
    )
    family = [
        w for w in family if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")
    ]
    executors = {str(w.executor_id or "") for w in family}
    root_holder = next((str(w.executor_id or "") for w in family if w.workflow_id == run_id), "")
    recovered: list[str] = []
    # the units recovered with the root wait for their parents (UnitGate): in place before
    # any of them may start; what was not recovered never waits
    gate = GATES[run_id] = UnitGate(set())
    for executor in sorted(executors):
        if executor.startswith("worker:") and executor != root_holder:
            continue
        for pending in dbos._sys_db.get_pending_workflows(executor, GlobalParams.app_version):
            wfid = pending.workflow_id
            if wfid == run_id or wfid.startswith(run_id + "/"):
                # DBOS's _recover_workflow, onto the run's queue (a unit that came from a fleet
                # queue keeps it: DBOS re-enqueues on the queue a workflow had)
                with bind_shard_keys({wfid: pending.shard_key}):
                    gate.held.add(wfid)
                    dbos._sys_db.reenqueue_for_recovery(wfid, [executor], queue)
                recovered.append(wfid)
    if run_id not in recovered:  # no root here to reach them
        gate.open = True
        GATES.pop(run_id, None)
    return recovered


def never_taken_up(w: Any) -> str | None:
    """Why root workflow ``w`` of a run that :func:`recover_run` did not recover, still
    pending, would never be run by any process — so a resume would wait for it for ever —
    or None when another may take it (a fleet worker holds it, or it waits on a queue for
    one).  DBOS takes up a pending workflow only in a process of the application version
    it was recorded under (agentflow's version: :func:`launch`), and calls only the
    workflow functions registered under its recorded name (docs/decisions.md "A recovered
    root no process calls")."""
    from dbos._utils import GlobalParams

    executor = str(getattr(w, "executor_id", None) or "")
    if w.status == "ENQUEUED" or executor.startswith("worker:"):
        return None  # a fleet's: its workers take it (liveness.py recovers a dead one's)
    recorded = getattr(w, "app_version", None)
    if not recorded:  # NULL or empty: a row an older agentflow wrote, or one edited
        return (
            "its row records no agentflow version (an older agentflow wrote it, or it was "
            "edited), and a durable run is taken up only by the version that started it, so "
            f"no process of agentflow {GlobalParams.app_version} takes it up. To go on, end it "
            f"with `flowc cancel {w.workflow_id}`, then `flowc redrive {w.workflow_id}` runs "
            "it again, taking every step it finished"
        )
    if recorded != GlobalParams.app_version:
        return (
            f"it was recorded by agentflow {recorded}, and this is agentflow "
            f"{GlobalParams.app_version}: a durable run is taken up only by the version "
            f"that started it (its recorded operations are that version's). Resume it with "
            f"agentflow {recorded}, or end it with `flowc cancel {w.workflow_id}`"
        )
    if w.name not in (RUN_WORKFLOW, UNIT_WORKFLOW):
        return f"its workflow {w.name!r:.40} is not one agentflow runs"
    return (
        "the engine did not take it up (its row names no process this one can take it "
        f"from: executor {executor!r:.60}); end it with `flowc cancel {w.workflow_id}`"
    )


def interrupted_question(w: Any) -> bool:
    """True when root workflow ``w`` (its input and output loaded) is a durable question
    (``flowc ask --durable``) that ended ``aborted`` because its process was asked to stop
    (``interrupted by SIGINT`` / ``SIGTERM``): what :func:`reopen_question` reopens."""
    args = w.input.get("args") if isinstance(w.input, dict) else None
    spec = args[0] if args and isinstance(args[0], dict) else {}
    out = w.output if isinstance(w.output, dict) else {}
    error = out.get("error")
    if not isinstance(error, dict):
        error = {}
    return (
        w.status == "SUCCESS"
        and "ask" in spec
        and out.get("status") == "aborted"
        and str(error.get("message") or "").startswith("interrupted by SIG")
    )


def reopen_question(run_id: str) -> bool:
    """Put durable question ``run_id``, which a Ctrl-C ended ``aborted``
    (:func:`interrupted_question`), back to PENDING under its executor, its outcome removed,
    so :func:`recover_run` continues it: its recorded calls are replayed, and the call it was
    stopped in — which recorded nothing (engine.py ``_Interrupted``) — is made again.  DBOS
    has no API to reopen a finished workflow: this writes its ``workflow_status`` and
    ``workflow_output`` tables (pinned by tests/cli/test_ask_edges.py).  Returns False when
    the row was no longer a finished one (nothing changed)."""
    import sqlalchemy as sa

    sys_db = dbos_instance()._sys_db
    status, output = sys_db.tables.workflow_status, sys_db.tables.workflow_output
    with sys_db.engine.begin() as c:
        reopened = c.execute(
            sa.update(status)
            .where(status.c.workflow_uuid == run_id, status.c.status == "SUCCESS")
            .values(status="PENDING", completed_at=None, updated_at=int(time.time() * 1000))
        ).rowcount
        if reopened:
            c.execute(sa.delete(output).where(output.c.workflow_uuid == run_id))
    return bool(reopened)


@contextlib.contextmanager
def starting(run_id: str, spec: dict[str, Any]) -> Iterator[None]:
    """While this process starts a run with ``spec`` and waits for it: its root workflow, when
    its body gets this very object, has recorded nothing and its records are not read.  DBOS runs a body from
    ``start_workflow_async`` only when that call inserted the workflow's row (an id already in
    the database gives a handle to the existing workflow, whose body does not run here); a
    body recovered or dequeued gets its input read from the database, another object.  So
    only a workflow with no records yet skips the read (issue 35: a read per run saved)."""
    _STARTING[run_id] = spec
    try:
        yield
    finally:
        if _STARTING.get(run_id) is spec:
            del _STARTING[run_id]


async def _note_recorded(workflow_id: str, spec: Any = None) -> None:
    """Remember how many operations ``workflow_id`` has recorded (while it replays them, its
    events are left out, and its finished events go to a continued trace only).  ``spec``: the
    root workflow's input object, which tells a run this process just inserted (:func:`starting`)."""
    items = _items()  # and its item records, read again (the unit starts again): both at once
    items.forget(workflow_id)
    if spec is not None and _STARTING.get(workflow_id) is spec:
        del _STARTING[workflow_id]  # once: a later run of this body here reads
        items.none_recorded(workflow_id)
        _RECORDED[workflow_id] = 0
        return
    steps, _ = await asyncio.gather(
        query_steps(workflow_id, load_output=False), items.load(workflow_id)
    )
    _RECORDED[workflow_id] = max((s["function_id"] for s in steps), default=0)


# ---------------------------------------------------------------------------------------------
# Runtimes: what a process needs to run a run's units


def register_runtime(
    run_id: str, spec: dict[str, Any], plan: Plan, ctx: RunContext, effects: DurableEffects
) -> Runtime:
    """Register the runtime of a run started (or resumed) by this process with its own context."""
    rt = Runtime(run_id, spec, plan, ctx, effects)
    _RUNTIMES[run_id] = rt
    return rt


async def runtime_for(
    run_id: str, spec: dict[str, Any] | None = None, *, ahead: bool = False
) -> Runtime:
    """The runtime of ``run_id`` in this process, built from the run's recorded input (its
    plan text, input and configuration path) the first time a unit of it runs here; ``ahead``:
    built by ``flowc resume`` before it recovers the run (execution.py), so a ConfigError
    leaves the run as it was.  Raises ConfigError (a key unset, a [tools] module broken…)."""
    rt = _RUNTIMES.get(run_id)
    if rt is not None:
        return rt
    # one build per run and process: the units a resumed process recovers start together,
    # and each build (plan, catalog, tool modules, models) holds the event loop a while —
    # replies that arrive meanwhile wait to be read and recorded
    building = _BUILDING.get(run_id)
    if building is None:
        building = _BUILDING[run_id] = asyncio.ensure_future(_build(run_id, spec, ahead))
    try:
        return await asyncio.shield(building)
    finally:
        if building.done():
            _BUILDING.pop(run_id, None)


async def _build(run_id: str, spec: dict[str, Any] | None, ahead: bool) -> Runtime:
    if spec is None:
        spec = await recorded_input(run_id)
    rt = await build_runtime(run_id, spec, extra_sinks=list(_PROCESS_SINKS), ahead=ahead)
    _RUNTIMES.setdefault(run_id, rt)
    return _RUNTIMES[run_id]


# ---------------------------------------------------------------------------------------------
# The two workflows (registered when DBOS is first used in this process: :func:`dbos_with_workflows`)


def _register(dbos: Any) -> tuple[Any, Any]:
    workflows: type[DBOS] = dbos.DBOS  # typed: its decorator keeps each workflow's signature

    @workflows.workflow(name=RUN_WORKFLOW, max_recovery_attempts=50)
    async def run_workflow(spec: dict[str, Any]) -> dict[str, Any]:
        wfid = dbos.DBOS.workflow_id
        await _note_recorded(wfid, spec)
        try:
            rt = await taken_up(wfid, runtime_for(wfid, spec))
            rt.effects.forget(wfid)
            with _stoppable(wfid):
                return await _flushed(wfid, _kept(wfid, run_root(rt)), rt.effects)
        finally:
            gate = GATES.pop(wfid, None)
            if gate is not None:  # the root ended here: no unit still held waits for ever
                gate.open = True

    @workflows.workflow(name=UNIT_WORKFLOW, max_recovery_attempts=50)
    async def unit_workflow(spec: dict[str, Any]) -> Any:
        wfid = dbos.DBOS.workflow_id
        task = asyncio.current_task()  # DBOS runs the body in the child's own task
        if task is None:
            return await _unit_body(wfid, spec)
        _UNIT_TASKS[wfid] = task
        try:
            return await _unit_body(wfid, spec)
        finally:
            _RETURNED.pop(wfid, None)
            if _UNIT_TASKS.get(wfid) is task:
                del _UNIT_TASKS[wfid]

    async def _unit_body(wfid: str, spec: dict[str, Any]) -> Any:
        gate = GATES.get(wfid.split("/", 1)[0])
        if gate is not None:
            await gate.wait(wfid)
        if spec.get("kind") == "model":  # one request, no events; its model's rate limit
            rt = await taken_up(spec["run"], runtime_for(spec["run"]))
            if rt.ctx.router is not None:  # the client (and its modules) made before the wait
                rt.ctx.router.client_for(spec["role"])
            label = spec.get("model")
            config = rt.ctx.config
            named = config.models.named.get(label) if config is not None and label else None
            if named is not None and named.rate_limit:
                async with rate_slot(str(_state["url"]), str(label), named.rate_limit):
                    return await run_unit(rt.unit_executor(), rt.effects.index, spec)
            return await run_unit(rt.unit_executor(), rt.effects.index, spec)
        await _note_recorded(wfid)
        rt = await taken_up(spec["run"], runtime_for(spec["run"]))
        rt.effects.forget(wfid)
        try:
            if spec.get("kind") == "body" and not spec.get("queue_key"):
                async with rt.limit(f"{spec['run']}|{spec['group']}", spec.get("limit")):
                    return await _flushed(
                        wfid, run_unit(rt.unit_executor(), rt.effects.index, spec), rt.effects
                    )
            return await _flushed(
                wfid, run_unit(rt.unit_executor(), rt.effects.index, spec), rt.effects
            )
        finally:
            await _export_unit_spans(rt)

    return run_workflow, unit_workflow


#: ``[dbos, run workflow, unit workflow]`` once :func:`dbos_with_workflows` registered them.
_WORKFLOWS: list[Any] = []


def _register_workflows(dbos: Any) -> None:
    _WORKFLOWS[:] = [dbos, *_register(dbos)]


#: run id → the outcome its root computed in this process (:func:`_kept`), until the
#: process that waits for the run takes it (:func:`kept_outcome`)
_OUTCOMES: dict[str, dict[str, Any]] = {}


#: run id → a future done once its root, running in this process, has ended (:func:`_kept`)
_ROOT_ENDS: dict[str, concurrent.futures.Future[None]] = {}


async def _kept(run_id: str, body: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """``await body`` (a run's root), keeping its outcome for :func:`kept_outcome`: a run
    cancelled while its root ran here has no outcome in the engine (DBOS refuses to record
    one for a cancelled workflow), yet its root finished — its usage, results and duration
    are what the waiting process reports.  While it runs, :func:`root_ended` waits for it."""
    ended: concurrent.futures.Future[None] = concurrent.futures.Future()
    _ROOT_ENDS[run_id] = ended
    try:
        out = await body
        _OUTCOMES[run_id] = out
        return out
    finally:
        if _ROOT_ENDS.get(run_id) is ended:
            del _ROOT_ENDS[run_id]
        ended.set_result(None)


async def root_ended(run_id: str) -> None:
    """Return once run ``run_id``'s root has ended when it runs in this process (at once when
    it does not).  A resumed run's root runs on the engine's own loop, and its waiting process
    learns of a ``flowc cancel`` from the engine's record (``get_result``) before the root has
    seen it (at its wait's next poll, its next operation): the waiting process takes the root's
    own ``cancelled`` end (:func:`kept_outcome`, its trace's ``run_finished``) rather than
    shutting the engine down under it, which would end the root ``aborted``."""
    ended = _ROOT_ENDS.get(run_id)
    if ended is not None:
        await asyncio.shield(asyncio.wrap_future(ended))


def kept_outcome(run_id: str) -> dict[str, Any] | None:
    """The outcome run ``run_id``'s root computed in this process (taken once), or None."""
    return _OUTCOMES.pop(run_id, None)


#: run id → (its root's stop request, the loop it runs on), for the runs whose waiting process
#: forwards its signals (:func:`forward_stops`); a signal that came before the root started
#: here waits in the entry (``(None, (signal name, number))``)
_ROOT_STOPS: dict[str, tuple[Any, Any]] = {}


def forward_stops(run_id: str) -> None:
    """This process waits for run ``run_id`` whose root runs on the engine's own loop (``flowc
    resume``: DBOS runs a recovered workflow there, not on the caller's loop, so the root
    does not see the stop request of :func:`agentflow.runtime.interrupt.run`): its root
    gets a stop request of its own, which :func:`stop_root` sets."""
    _ROOT_STOPS.setdefault(run_id, (None, None))


def forget_stops(run_id: str) -> None:
    """This process no longer waits for run ``run_id`` (:func:`forward_stops`)."""
    _ROOT_STOPS.pop(run_id, None)


def stop_root(run_id: str, name: str, signum: int) -> None:
    """Stop run ``run_id``'s root as a first SIGINT / SIGTERM stops a run (its steps in flight
    cancelled, ``run_finished`` with status ``aborted``, that outcome recorded): at once when
    it runs here, else as it starts (see :func:`forward_stops`)."""
    stop, loop = _ROOT_STOPS.get(run_id, (None, None))
    if stop is None:
        _ROOT_STOPS[run_id] = (None, (name, signum))
    else:
        loop.call_soon_threadsafe(stop.forward, name, signum)


@contextlib.contextmanager
def _stoppable(run_id: str) -> Iterator[None]:
    """The root of ``run_id`` runs with a stop request of its own when its waiting process
    forwards its signals (:func:`forward_stops`) and none is set here already."""
    if run_id not in _ROOT_STOPS or stop_request() is not None:
        yield
        return
    stop = StopRequest()
    _, asked = _ROOT_STOPS[run_id]
    _ROOT_STOPS[run_id] = (stop, asyncio.get_running_loop())
    if asked is not None:
        stop.forward(*asked)
    token = use_stop_request(stop)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            token.var.reset(token)
        _ROOT_STOPS.pop(run_id, None)


def _forget_runtimes() -> None:
    _UNIT_TASKS.clear()
    _ROOT_STOPS.clear()
    _OUTCOMES.clear()
    _ROOT_ENDS.clear()
    _RUNTIMES.clear()
    _RECORDED.clear()
    _STARTING.clear()
    _BUILDING.clear()


REGISTRARS.append(_register_workflows)  # DBOS knows agentflow's workflows once this module loads
ON_SHUTDOWN.append(_forget_runtimes)


async def _flushed(workflow_id: str, body: Awaitable[T], effects: DurableEffects) -> T:
    """``await body``, then wait for the workflow's written-behind item records (items.py):
    its result, which DBOS commits as it returns, comes after every record, and its events
    held for them are delivered.  When ``body`` raised, its exception is what the workflow
    records (a write that failed too is left to the next process, which runs that operation
    again)."""
    try:
        value = await body
    except BaseException:
        with contextlib.suppress(Exception):
            await effects.settle()
        raise
    if workflow_id in _UNIT_TASKS:  # a unit's value, for a parent stopped while it is recorded
        _RETURNED[workflow_id] = value
    await _items().flush(workflow_id)
    await effects.settle()
    return value


async def _export_unit_spans(rt: Runtime) -> None:
    """In a worker (``flowc worker``), export the spans of the unit that just ended before
    its result is recorded, so a worker killed after that has lost none of them (the batch
    would go out up to a second later; docs/durable.md "Telemetry").  Elsewhere: nothing."""
    if not str(_state["executor_id"] or "").startswith("worker:"):
        return
    sinks = [s for s in rt.ctx.sinks if hasattr(s, "export_now")]
    if not sinks:
        return
    await dbos_with_workflows().DBOS._configure_asyncio_thread_pool()
    for sink in sinks:  # an HTTP request each: not on the event loop
        await asyncio.to_thread(sink.export_now)


def run_workflow() -> Any:
    """The registered ``agentflow.run`` workflow function."""
    dbos_with_workflows()
    return _WORKFLOWS[1]


def new_effects(
    run_id: str, plan: Plan, callable_plans: dict[str, Plan], spec: dict[str, Any], **kw: Any
) -> DurableEffects:
    """The :class:`DurableEffects` of run ``run_id`` over DBOS."""
    batch = spec.get("map_batch") if spec.get("fleet") else None
    engine = DbosEngine(batch if isinstance(batch, int) else None)
    return DurableEffects(
        engine, run_id, PlanIndex(plan, callable_plans), started=spec.get("started"), **kw
    )


# ---------------------------------------------------------------------------------------------
# Building a run's runtime; reuse and redrive: one table of an earlier run's results


async def build_runtime(
    run_id: str,
    spec: dict[str, Any],
    *,
    context: RunContext | None = None,
    extra_sinks: list[Any] | None = None,
    reuse: dict[str, tuple[str, Any]] | None = None,
    plan: Plan | None = None,
    ahead: bool = False,
) -> Runtime:
    """The runtime of run ``run_id`` from its recorded input ``spec``: the plan from its text,
    the configuration from its ``flow.toml`` path, the catalog and model router built from it
    (``context``: the caller's own, for a run started in this process; ``plan``: the plan
    the caller already loaded from that very text, not loaded again; ``ahead``: built before
    the engine recovers the run, :func:`runtime_for`)."""

    if plan is None:
        plan = load_plan_text(spec["plan_text"], spec.get("plan_file") or "<durable>")
    owned = context is None
    if context is None:
        if ahead:  # `flowc resume`, before it takes the run up: the run stays `stopped`
            refuse_missing_workspace(run_id, spec)
        context = context_from_spec(spec, plan, extra_sinks)
    await _continue_trace(run_id, spec, plan, context.sinks, resumed=owned, ahead=ahead)
    config = context.config or load_config(spec.get("config"))
    effects = new_effects(
        run_id,
        plan,
        context.callable_plans,
        spec,
        reuse=reuse if reuse is not None else spec.get("_reuse_table"),
        ask_timeout=config.durable.ask_timeout_s if config is not None else None,
        queues=_Queues(config, spec) if spec.get("fleet") else None,
    )
    rt = Runtime(run_id, spec, plan, context, effects, owned=owned)
    if spec.get("reuse") and not effects.reuse:
        effects.reuse = await reuse_table(spec["reuse"], asks=not spec.get("ask_again"))
    return rt


async def _continue_trace(
    run_id: str, spec: dict[str, Any], plan: Plan, sinks: Any, *, resumed: bool, ahead: bool
) -> None:
    """Put the OpenTelemetry sinks among ``sinks`` on the run's recorded trace (one trace and
    one run span across every process of the run; docs/durable.md "Telemetry"); ``resumed``:
    this process did not start the run (its attempt number is the engine's count of
    recoveries, counted before this one when it is built ``ahead`` of it)."""
    targets = [s for s in sinks if hasattr(s, "durable_run")]
    if not targets:
        return
    attempt = 0
    if resumed:
        with contextlib.suppress(Exception):  # an attribute; never worth failing the run
            found = await query_workflows(workflow_ids=[run_id])
            done = int(found[0].recovery_attempts or 1) if found else 1
            attempt = done if ahead else max(0, done - 1)
    for sink in targets:
        sink.durable_run(
            trace_of(run_id, spec),
            run_id=run_id,
            plan=plan.name,
            started=float(spec.get("started") or time.time()),
            attempt=attempt,
        )


#: The queue of a fleet run's map batches (docs/durable.md "Big maps on a fleet"): no limit
#: of its own (the map's pool bounds the batches at once), ``worker_concurrency`` in batches.
BATCH_QUEUE = "agentflow.batches"
#: The queue of a batch's items that are not one call (each a child unit of the batch): no
#: limit of its own (the batch's pool bounds its items at once).
BATCH_ITEM_QUEUE = "agentflow.units.c0"
#: A ``--fleet`` run's map batch size when ``[durable] map_batch`` is 0.
FLEET_MAP_BATCH = 1000


def fleet_map_batch(config: Config | None) -> int:
    """The map batch size of a ``--fleet`` run on ``config``: ``[durable] map_batch``, else
    :data:`FLEET_MAP_BATCH`."""
    size = config.durable.map_batch if config is not None else 0
    return size or FLEET_MAP_BATCH


class _Queues:
    """How a fleet run spreads its work: concurrent units on ``agentflow.units.c{limit}``
    (partitioned by the step that made them: a map's ``limit`` holds across the fleet), a
    wide map's batches on :data:`BATCH_QUEUE` (their items that are not one call on
    :data:`BATCH_ITEM_QUEUE`), model calls of a model with ``rate_limit``/``concurrency`` on
    ``agentflow.model.{name}``."""

    batch_queue = BATCH_QUEUE
    batch_item_queue = BATCH_ITEM_QUEUE

    def __init__(self, config: Config | None, spec: dict[str, Any]):
        self.config = config
        self.registered: set[str] = set(spec.get("queues") or ())

    def unit_queue(self, spec: Any) -> str | None:
        if spec.kind != "body":
            return None
        return f"agentflow.units.c{spec.limit or 0}"

    def model_queue(self, client: Any) -> str | None:
        if self.config is None:
            return None
        for resolved in getattr(client, "models", None) or ():
            named = self.config.models.named.get(resolved)
            if named is not None and (named.rate_limit or named.concurrency):
                return f"agentflow.model.{resolved}"
        return None


async def register_queues(config: Config | None, limits: set[int]) -> list[str]:
    """Register the fleet's queues: one per map limit in use (and the limit 0's, which a
    batch's items use), the map batches' (:data:`BATCH_QUEUE`) and one per model with a
    ``rate_limit`` or ``concurrency`` (``DBOS.register_queue_async``, persisted: every worker
    finds them).  The queue holds a model's concurrency; its rate limit is held per request
    (runtime/durable/ratelimit.py), not by the queue's limiter.  A map limit's queue also
    holds ``[durable] worker_concurrency``, the most of its items one worker runs at once; the
    batches' queue holds it in batches of :data:`~agentflow.runtime.control.BATCH_CONCURRENCY`
    items (``ceil(worker_concurrency / 32)`` batches a worker at once)."""
    dbos = dbos_with_workflows()
    names = []
    per_worker = config.durable.worker_concurrency if config is not None else None
    for limit in sorted(limits | {0}):
        name = f"agentflow.units.c{limit}"
        await dbos.DBOS.register_queue_async(
            name,
            partition_concurrency=limit if limit else None,
            worker_concurrency=per_worker,
            polling_interval_sec=0.05,
            on_conflict="always_update",
        )
        names.append(name)
    await dbos.DBOS.register_queue_async(
        BATCH_QUEUE,
        worker_concurrency=-(-per_worker // BATCH_CONCURRENCY) if per_worker else None,
        polling_interval_sec=0.05,
        on_conflict="always_update",
    )
    names.append(BATCH_QUEUE)
    if config is not None:
        for label, named in config.models.named.items():
            if not (named.rate_limit or named.concurrency):
                continue
            name = f"agentflow.model.{label}"
            await dbos.DBOS.register_queue_async(
                name,
                global_concurrency=named.concurrency,
                polling_interval_sec=0.05,
                on_conflict="always_update",
            )
            names.append(name)
    return names


async def reuse_table(run_id: str, *, asks: bool = True) -> dict[str, tuple[str, Any]]:
    """``{operation name: (input digest, value)}`` of every step run ``run_id`` (and its child
    units) finished without error: what ``--reuse`` and ``redrive`` may take.  ``asks``: its
    answered questions too (``--ask-again``: False, every question is asked again)."""
    runs = await query_workflows(workflow_id_prefix=run_id, load_input=True, load_output=True)
    runs = [w for w in runs if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")]
    table: dict[str, tuple[str, Any]] = {}
    ids = [w.workflow_id for w in runs]
    if run_id not in ids:
        raise InputError(f"no durable run {run_id!r} to reuse")
    label = lazy_labels(run_id, runs)
    check_readable(run_id, runs, label)  # every row of the run: what it takes is its record
    for wfid in ids:
        for step in [*await query_steps(wfid), *await query_items(wfid)]:
            check_record(run_id, step, label)
            out = step.get("output")
            if step.get("error") is None and isinstance(out, dict) and "d" in out and "v" in out:
                if lost_secret(out):  # a secret was redacted from it: run again, not reused
                    continue
                table.setdefault(step["function_name"], (out["d"], out["v"]))
    if not asks:
        table = {k: v for k, v in table.items() if "/ask#" not in k and not k.startswith("ask#")}
        return table
    for name, entry in (await answered_while_stopped(ids, table)).items():
        table.setdefault(name, entry)
    return table


async def answered_while_stopped(
    ids: list[str], recorded: Mapping[str, Any]
) -> dict[str, tuple[str, Any]]:
    """``{operation name: (question digest, answer)}`` of the questions of the units ``ids``
    that an answer closed (``flowc answer`` while the run was stopped: its claim, answers.py)
    but that no unit took yet: no operation of ``recorded`` holds them, yet ``--reuse`` takes
    them as it takes an answer the run recorded.  The digest is the published question's
    text, choices and schema (records.question_digest, as :meth:`DurableEffects.ask`)."""
    found: dict[str, tuple[str, Any]] = {}
    closed = await claims(ids)
    for wfid in ids:
        keys = {k for (w, k), c in closed.items() if w == wfid and c.kind == "answer"}
        if not keys - set(recorded):
            continue
        for event, value in (await published(wfid)).items():
            if not str(event).startswith("question:") or not isinstance(value, dict):
                continue
            key = question_key(value)
            if key in keys and key not in recorded:
                asked = question_digest(
                    value.get("question"), value.get("choices"), value.get("schema")
                )
                found[key] = (asked, closed[(wfid, key)].value)
    return found
