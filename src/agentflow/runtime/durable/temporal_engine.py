"""The Temporal backend of durable runs (``temporalio`` 1.35.x; ``[durable] engine = "temporal"``,
docs/durable.md "Temporal").

- two workflow types, ``agentflow.run`` (a run: its input is the plan *text*, the input and
  where the configuration is, as for DBOS) and ``agentflow.unit`` (a child unit: a map item, a
  parallel branch, a ``plan__*`` call, the tool calls of one agent round), run **unsandboxed**:
  agentflow's interpreter is deterministic by construction — every effect (tool, model, MCP
  call, question, sleep, clock) goes through :class:`~agentflow.runtime.durable.engine.
  DurableEffects`, which is what the engine records — so nothing needs the sandbox's
  re-import per workflow (docs/decisions.md "Temporal as a second durable engine");
- every operation of the record (a tool call, a model call, an answer) is a **local
  activity** named by its step path (``activity_id`` ``E1/do.4/E0/tool:note#1``): it runs in
  the worker that runs the workflow, on that worker's own event loop, and its result is a
  marker in the workflow's history. A worker killed mid-call: the next worker replays the
  history and runs the call again (at least once, as DBOS);
- :class:`TemporalEngine`, the :class:`~agentflow.runtime.durable.engine.Engine` over those:
  ``ask`` publishes its question in the workflow's **memo** (readable with no worker alive)
  and waits for a **signal** (accepted by the server with no worker alive: ``flowc answer``
  never blocks); durable sleep is a Temporal timer; a child unit is a child workflow whose id
  is the run id + its step path;
- values travel as agentflow's JSON records (records.py, never a pickle); a payload over
  ``[durable] claim_check_bytes`` goes to the claim-check store (a directory; :class:`ClaimCheck`)
  and the history holds its digest (the URL, the client and the converter:
  :mod:`.temporal_client`, re-exported here);
- a step's failure is recorded as a value and raised again in the workflow: Temporal never
  retries agentflow's errors (a ``.flow``'s ``retry`` does, through durable sleeps).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from agentflow.core.vocabulary import Code
from agentflow.errors import Cancelled, FlowError, RunAborted, RunError
from agentflow.ir.loader import load_plan_text
from agentflow.runtime import interrupt
from agentflow.runtime.control import SIBLING_FAILED
from agentflow.runtime.durable.engine import NO_MESSAGE, DurableEffects, PlanIndex, Runtime
from agentflow.runtime.durable.ratelimit import STALE_S, rate_window
from agentflow.runtime.durable.records import lost_secret
from agentflow.runtime.durable.shown import parse_operation
from agentflow.runtime.durable.spec import context_from_spec, trace_of, untaken_message
from agentflow.runtime.durable.temporal_budget import ledger_budgets, ledger_id
from agentflow.runtime.durable.temporal_client import (
    COMMIT_ACTIVITY,
    END_MEMO,
    END_PAUSE_ENV,
    MESSAGE_SIGNAL,
    OP_TIMEOUT,
    OPERATION,
    RATE_REASK_S,
    RATE_RETRY_S,
    RATE_TRIES,
    RATE_WORKFLOW,
    RECORD_TIMER_S,
    RUN_WORKFLOW,
    SCHEME,
    STEP_ACTIVITY,
    STICKY_TIMEOUT,
    TASK_TIMEOUT,
    UNIT_WORKFLOW,
    ClaimCheck,
    Target,
    client_for,
    forget_clients,
    is_temporal,
    make_url,
    parse_url,
    url_for,
    versioned_queue,
)
from agentflow.runtime.result import running_step_usage

_log = logging.getLogger("agentflow.durable")

if TYPE_CHECKING:
    from agentflow.runtime.config import Config
    from agentflow.runtime.events import Sink

__all__ = [
    "COMMIT_ACTIVITY",
    "MESSAGE_SIGNAL",
    "RATE_WORKFLOW",
    "RUN_WORKFLOW",
    "STEP_ACTIVITY",
    "STICKY_TIMEOUT",
    "TASK_TIMEOUT",
    "UNIT_WORKFLOW",
    "forget_clients",
    "url_for",
    "versioned_queue",
    "SCHEME",
    "ClaimCheck",
    "Target",
    "TemporalEngine",
    "client_for",
    "ask_slot",
    "fleet_slot",
    "slot_request",
    "is_temporal",
    "make_url",
    "parse_url",
    "recorded_settings",
]

T = TypeVar("T")

# ---------------------------------------------------------------------------------------------
# A model's fleet-wide limits: a slot of its limiter workflow (temporal_rate.py) per request


def limiter_id(queue: str, model: str) -> str:
    """The workflow id of ``model``'s limiter on (versioned) task queue ``queue``."""
    return f"{RATE_WORKFLOW}/{queue}/{model}"


def slot_request(rid: str, rate_limit: float | None, concurrency: int | None) -> dict[str, Any]:
    """The limiter's request ``rid`` (temporal_rate.RateWorkflow.ask)."""
    limit, period = rate_window(rate_limit) if rate_limit else (1_000_000, 1.0)
    return {"id": rid, "limit": limit, "period": period, "concurrency": concurrency}


async def _ask_limiter(
    client: Any, wid: str, queue: str, model: str, request: dict[str, Any]
) -> None:
    """Signal-with-start ``ask(request)`` to ``model``'s limiter workflow ``wid`` on ``queue``:
    the first request starts it, asking again is harmless (temporal_rate.py)."""
    from temporalio.common import WorkflowIDConflictPolicy

    await client.start_workflow(
        RATE_WORKFLOW,
        {},
        id=wid,
        task_queue=queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        task_timeout=TASK_TIMEOUT,
        start_signal="ask",
        start_signal_args=[request],
        static_summary=f"rate limit of model {model}"[:200],
    )


def _limiter_failed(model: str, failures: int, error: Exception) -> int:
    """``failures + 1`` after asking ``model``'s limiter failed with ``error`` (it was ending:
    ask again); raises RunError once that passes :data:`RATE_TRIES` in a row."""
    if failures + 1 > RATE_TRIES:
        raise RunError(
            Code.FAILED,
            f"model {model}: no slot of its fleet-wide rate limit could be taken "
            f"from Temporal ({str(error).strip() or type(error).__name__})",
        ) from None
    return failures + 1


async def ask_slot(url: str, model: str, request: dict[str, Any], notify: str) -> bool:
    """Ask ``model``'s limiter for slot ``request`` (signal-with-start: the first request
    starts the limiter; asking again is harmless) and look once whether it is granted; not
    granted yet, have its grant signalled to workflow ``notify`` (topic ``slot:ID``).  Runs
    in an operation.  Raises RunError when the limiter cannot be reached :data:`RATE_TRIES`
    times in a row."""

    client = await client_for(url)
    queue = versioned_queue(url)
    wid = limiter_id(queue, model)
    failures = 0
    while True:
        try:
            await _ask_limiter(client, wid, queue, model, request)
            handle = client.get_workflow_handle(wid)
            state = await handle.query("slot", request["id"])
            if not state.get("granted"):
                await handle.signal("notify", args=[request["id"], notify])
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - the limiter was ending: ask again
            failures = _limiter_failed(model, failures, e)
            await asyncio.sleep(RATE_RETRY_S)
            continue
        return bool(state.get("granted"))  # ended: its operation ran before; fleet_slot asks anew


@contextlib.asynccontextmanager
async def fleet_slot(
    url: str,
    model: str,
    rate_limit: float | None,
    concurrency: int | None,
    granted: str | None = None,
) -> AsyncIterator[None]:
    """Hold a slot of ``model`` (``rate_limit`` requests per second, ``concurrency`` at once,
    across every worker of ``url``'s task queue) while the body sends one request; waits
    while the model's window is full.  ``granted``: the id of a slot granted to this
    request already (waited for in workflow code): held if it still is, else (its operation
    runs again after its slot ended) a slot is asked for as without it.  Runs in an operation
    (an activity), not workflow code.  Raises RunError when the limiter cannot be reached
    :data:`RATE_TRIES` times in a row."""

    client = await client_for(url)
    queue = versioned_queue(url)
    wid = limiter_id(queue, model)
    handle = client.get_workflow_handle(wid)
    if granted is not None:
        try:
            state = await handle.query("slot", granted)
        except asyncio.CancelledError:
            await asyncio.shield(_release(handle, granted))
            raise
        except Exception:  # noqa: BLE001 - not reachable now: a slot of its own below
            state = {}
        if state.get("granted") and not state.get("ended"):
            try:
                yield
            finally:
                await asyncio.shield(_release(handle, granted))
            return
        await asyncio.shield(_release(handle, granted))  # ended, or unknown: let it go
    rid = secrets.token_hex(8)
    request = slot_request(rid, rate_limit, concurrency)
    failures = 0
    asked_at = 0.0
    try:
        asked = False
        while True:
            try:
                if not asked:  # signal-with-start: the first request starts the limiter
                    await _ask_limiter(client, wid, queue, model, request)
                    asked, asked_at = True, time.monotonic()
                state = await handle.query("slot", rid)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - the limiter was ending: ask again
                failures = _limiter_failed(model, failures, e)
                asked = False
                await asyncio.sleep(RATE_RETRY_S)
                continue
            failures = 0
            if state.get("granted"):
                break
            if state.get("unknown"):
                # the signal is in the limiter's history but not handled yet (a query may
                # answer from the state before it; queries compete with that handling, so
                # they back off); still unknown long after: ask again
                waited = time.monotonic() - asked_at
                asked = waited < RATE_REASK_S
                await asyncio.sleep(min(0.5, max(RATE_RETRY_S, waited / 2)))
                continue
            await asyncio.sleep(float(state.get("wait") or RATE_RETRY_S))
    except BaseException:
        await asyncio.shield(_release(handle, rid))  # granted as it gave up, or waiting
        raise
    try:
        yield
    finally:
        await asyncio.shield(_release(handle, rid))


async def _release(handle: Any, rid: str) -> None:
    with contextlib.suppress(Exception):  # the limiter ended: nothing to release
        await handle.signal("release", rid)


# ---------------------------------------------------------------------------------------------
# Operations: local activities that run closures made by the workflow in this process

#: token → the operation's coroutine function, registered by the workflow just before it
#: schedules the activity (a local activity runs in the process of its workflow)
_PENDING: dict[str, tuple[Callable[[], Awaitable[Any]], contextvars.Context]] = {}
#: tokens whose operation ran in this process (not replayed)
_RAN: set[str] = set()
#: token → what the operation returned in this process, before it became a payload: a record
#: that held a secret is redacted in its payload (records.py REDACTED), and the run that made
#: it goes on with the value it saw (docs/decisions.md "A record that held a secret is not
#: replayed")
_LIVE: dict[str, dict[str, Any]] = {}


async def _value(fn: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
    try:
        return {"v": await fn()}
    except Exception as e:  # noqa: BLE001 - recorded, raised again in the workflow
        return {"e": e}


# ---------------------------------------------------------------------------------------------
# The engine


def _count_operation(name: str | None) -> None:
    """Count operation ``name`` (its marker is in the history) in the running workflow's
    ``ops`` (``[shown, internal]``: what ``runs show`` lists of it, read from its memo once it
    ended: temporal_manage.show_run skips a closed workflow's steps by that count); None: an
    operation cancelled, which may or may not have left a marker — the count is unknown."""
    from temporalio import workflow

    unit = workflow.instance()
    ops = getattr(unit, "ops", None)
    if ops is None:
        return
    if name is None:
        unit.ops = None
    else:
        ops[0 if parse_operation(name[-250:]) is not None else 1] += 1


def _cancelled(name: str, why: asyncio.CancelledError | None = None) -> None:
    """An operation was cancelled: by ``flowc cancel`` (the workflow's cancellation — the run
    ends ``aborted``, as on DBOS); by this unit's parent because a sibling failed (the parent's
    task was cancelled with :data:`~agentflow.runtime.control.SIBLING_FAILED`, which Temporal
    hands the child as its cancellation reason) or by this workflow's own code (``why``: the
    awaiting task was cancelled — a sibling failed, a step's timeout): then the step ends as a
    plain run's cancelled step does, ``CancelledError`` with the same message; or because its
    worker is stopping (a Ctrl-C of ``flowc run``, a ``flowc worker`` restarted): then this
    workflow task fails, nothing of it is recorded, and another worker takes the run up from
    its history."""
    from temporalio import workflow

    reason = workflow.cancellation_reason()
    if reason == SIBLING_FAILED:
        raise asyncio.CancelledError(reason) from None
    if reason is not None:
        raise Cancelled() from None
    if why is not None:
        raise asyncio.CancelledError(*why.args[:1]) from None
    raise RuntimeError(f"{name} was stopped with its worker: another worker continues the run")


def _said_why(e: asyncio.CancelledError) -> asyncio.CancelledError:
    """``e``, a cancellation met in workflow code, with the message of a parent that cancelled
    this unit because a sibling failed (the SDK cancels the workflow's task with none)."""
    from temporalio import workflow

    if not e.args and workflow.cancellation_reason() == SIBLING_FAILED:
        return asyncio.CancelledError(SIBLING_FAILED)
    return e


async def _settled(handle: asyncio.Task[Any]) -> asyncio.CancelledError | None:
    """Wait until ``handle`` (an operation's or a child's: a task of the workflow's loop) is
    done.  When the waiting task is cancelled meanwhile, the operation is cancelled with the same
    message (Temporal forwards it to a child as its cancellation reason) and waited for to its
    end; that cancellation is returned (else None).  (The SDK's own await of an operation
    catches the cancellation and drops its message: a sibling's failure read as a user's
    cancel.)"""
    why: asyncio.CancelledError | None = None
    while not handle.done():
        try:
            await asyncio.wait({handle})
        except asyncio.CancelledError as e:
            if why is None:
                why = e
            handle.cancel(*e.args[:1])
    return why


#: The work (elements walked, counted at the evaluator's checkpoints) an evaluation may do in
#: workflow code; past it, it runs in an operation (TemporalEngine.evaluate): about 0.1-0.5 s
#: of evaluation, far below the workflow task's timeout (TASK_TIMEOUT)
EVAL_WORK_BUDGET = 1_000_000

#: ``[durable] history_events`` of the task queue this process serves (set by
#: temporal_workflows.serve): what a run recorded before runs recorded theirs uses
HISTORY_EVENTS = [10_000]
#: the ``temporal://`` URL this process serves (set by temporal_workflows.serve): where a
#: rate-limited model call asks for its slot (temporal_rate.py)
SERVING_URL = [""]
#: ``[durable] map_batch`` of the task queue this process serves (0: derived from
#: :data:`HISTORY_EVENTS`; set by temporal_workflows.serve), likewise
MAP_BATCH = [0]
#: The events one map item may add to a workflow history, at most: a one-call item's marker
#: and its share of workflow tasks, or a child item's initiated/started/completed events and
#: tasks; a batch of ``history_events // (2 * EVENTS_PER_ITEM)`` items stays under half the guard
EVENTS_PER_ITEM = 5


def recorded_settings(url: str) -> dict[str, int]:
    """What a run records of ``[durable]`` when it starts, so every worker of the run applies
    the same (a worker's own ``flow.toml`` may differ; the run's workflow code must not):
    ``history_events`` and the resolved ``map_batch`` (items per batch of a wide map)."""
    target = parse_url(url)
    events = target.history_events
    return {
        "history_events": events,
        "map_batch": target.map_batch or max(1, events // (2 * EVENTS_PER_ITEM)),
    }


def _check_history(name: str, limit: int) -> None:
    """Fail the unit before operation or child ``name`` when its history passed ``limit``
    events (the run's ``[durable] history_events``): Temporal terminates a workflow at 51,200
    events, which would leave the run ``cancelled`` with no word of why.  (Deterministic: the
    history length at this point of the workflow is the same on replay.)"""
    from temporalio import workflow

    length = workflow.info().get_current_history_length()
    if length > limit:
        raise RunError(
            Code.FAILED,
            f"{name}: this unit's Temporal history reached {length} events, past [durable] "
            f"history_events ({limit}; Temporal ends a workflow at 51,200): too "
            "many operations in one unit (a long sequence or agent loop; a wide map runs in "
            'batches: [durable] map_batch) (docs/durable.md "Temporal")',
        )


class TemporalEngine:
    """:class:`~agentflow.runtime.durable.engine.Engine` over Temporal (one per run and
    process); every method but :meth:`workflow_id` runs in workflow code.  ``settings``: what
    the run recorded of ``[durable]`` (:func:`recorded_settings`); a run recorded before it
    did (agentflow 0.9.0 and earlier) uses this process's own."""

    #: workflow time stands still while workflow code runs: a busy evaluation's clock would
    #: make a replay diverge, so the deadline reaches it only between steps (interrupt.EvalWatch)
    evaluation_clock = False
    #: the root's task that says the run's end is recorded before the workflow completes
    #: (temporal_workflows.RunWorkflow): an end met while replaying was said
    #: (DurableEffects.end_replayed)
    end_recorded = True

    def __init__(self, settings: dict[str, Any] | None = None, config: Config | None = None):
        #: the run's configuration in this process: its models' ``rate_limit``/``concurrency``
        self.config = config
        settings = settings or {}
        self.history_events = int(settings.get("history_events") or HISTORY_EVENTS[0])
        self.batch = int(
            settings.get("map_batch")
            or MAP_BATCH[0]
            or max(1, self.history_events // (2 * EVENTS_PER_ITEM))
        )

    def workflow_id(self) -> str:
        """The running workflow's id (also inside one of its operations)."""
        from temporalio import activity, workflow

        if workflow.in_workflow():
            return workflow.info().workflow_id
        with contextlib.suppress(RuntimeError):
            return activity.info().workflow_id or ""
        return ""

    def now(self) -> float:
        """The workflow's clock (epoch seconds): the same on replay."""
        from temporalio import workflow

        if workflow.in_workflow():
            return workflow.now().timestamp()

        return time.time()

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        """The local activity ``name`` running ``fn``; on replay its recorded result.  A
        recorded operation of another name at this position fails the workflow
        (Temporal's nondeterminism check, mapped to ``durable_replay_mismatch``)."""
        from temporalio import workflow
        from temporalio.common import RetryPolicy
        from temporalio.exceptions import ActivityError, CancelledError

        info = workflow.info()
        _check_history(name, self.history_events)
        token = f"{info.workflow_id}|{info.run_id}|{name}"
        context = contextvars.copy_context()
        context.run(OPERATION.set, f"{info.workflow_id}|{name}")
        _PENDING[token] = (fn, context)
        why: asyncio.CancelledError | None = None
        try:
            handle = workflow.start_local_activity(
                STEP_ACTIVITY,
                token,
                activity_id=name[-250:],
                summary=name[:200],
                start_to_close_timeout=OP_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
            why = await _settled(handle)
            out = handle.result()
        except ActivityError as e:
            if isinstance(e.cause, CancelledError):
                _count_operation(None)
                _cancelled(name, why)
            _count_operation(name)
            raise RunError(Code.FAILED, f"{name}: {e.cause or e}") from None
        except asyncio.CancelledError as e:
            _count_operation(None)
            _cancelled(name, why or e)
            raise
        finally:
            _PENDING.pop(token, None)
            live = _LIVE.pop(token, None)
        _count_operation(name)
        # a local activity's result enters the history only when the workflow task completes,
        # and a workflow running one local activity after another keeps its task open (the SDK
        # completes it at 80 % of the task timeout, TASK_TIMEOUT): a non-idempotent tool's
        # "begin" marker must be in the history before the call runs, so a timer completes the
        # task now (a timer costs about a second: only there; docs/durable.md)
        if name.endswith("/begin"):
            await workflow.sleep(RECORD_TIMER_S)
        ran = token in _RAN
        _RAN.discard(token)
        if ran and live is not None and lost_secret(out.get("v")):
            out = live  # ran here: its value, not the payload's redacted copy
        if "e" in out:
            raise out["e"]
        return out["v"], ran

    async def evaluate(self, name_of: Callable[[], str], work: Callable[[], T]) -> T:
        """``work()``, an evaluation in workflow code, while its counted work stays within
        :data:`EVAL_WORK_BUDGET` (a :class:`~agentflow.runtime.interrupt.WorkMeter`: elements
        walked, a function of the data alone, so a replay decides the same); past it, the
        evaluation is given up and run again in the operation ``name_of()`` — a local
        activity, on a thread of the worker's loop — whose result (or error) is recorded.
        There the real clock may end it (the step's deadline or timeout:
        ``interrupt.offload_watch``) and a cancel (``flowc cancel``, a sibling's failure, the
        step's bound as a workflow timer) cancels it at its next checkpoint; the workflow task
        is heartbeated meanwhile, never held past its timeout (docs/decisions.md "Temporal: a
        long evaluation runs in an operation")."""
        from temporalio import workflow

        if not workflow.in_workflow():  # (an operation's own code)
            return work()
        metered = interrupt.use_meter(interrupt.WorkMeter(EVAL_WORK_BUDGET))
        try:
            return work()
        except interrupt.EvalOffload:
            pass
        finally:
            interrupt.end_meter(metered)
        watch = interrupt.offload_watch()

        async def elsewhere() -> T:
            return await interrupt.evaluate_in_thread(work, watch)

        value, _ = await self.step(name_of(), elsewhere)
        return value

    async def sleep(self, seconds: float) -> None:
        """A Temporal timer."""
        from temporalio import workflow

        try:
            await workflow.sleep(max(0.0, seconds))
        except asyncio.CancelledError as e:
            raise _said_why(e) from None

    async def publish(self, key: str, value: Any) -> None:
        """The workflow's memo ``key`` (readable by ``describe`` with no worker alive)."""
        from temporalio import workflow

        workflow.upsert_memo({key: value})

    async def receive(self, topic: str, timeout: float | None) -> Any:
        """The first message signalled to this unit on ``topic``, or :data:`NO_MESSAGE` once
        ``timeout`` seconds passed (a Temporal timer: durable)."""
        from temporalio import workflow

        inbox: dict[str, list[Any]] = workflow.instance().inbox
        try:
            await workflow.wait_condition(lambda: bool(inbox.get(topic)), timeout=timeout)
        except asyncio.CancelledError as e:
            raise _said_why(e) from None
        except TimeoutError:
            # a message signalled before a worker took the fired timer (the run had no worker
            # when its timeout ran out) came in the same activation: it is taken, as DBOS
            # takes an answer claimed while the run was stopped — whichever the SDK resolved
            # first
            if not inbox.get(topic):
                return NO_MESSAGE
        return inbox[topic].pop(0)

    async def close_unanswered(self, key: str) -> bool:
        """Always True: signals that arrived by the time the wait timed out were delivered
        before the timer (one activation), so the wait would have taken them; a later answer
        finds the question closed (its memo says so)."""
        return True

    async def start_child(self, child_id: str, spec: dict[str, Any], queue: str | None) -> Any:
        """The child workflow ``child_id`` on the run's task queue (any worker takes it)."""
        from temporalio import workflow

        label = spec.get("unit") or spec.get("path") or child_id
        _check_history(str(label), self.history_events)
        return await workflow.start_child_workflow(
            UNIT_WORKFLOW,
            {**spec, "root": workflow.instance().root},
            id=child_id,
            task_timeout=TASK_TIMEOUT,
            static_summary=str(label)[:200],
        )

    async def collect(self, handle: Any) -> Any:
        """The child's result, or its exception raised here."""
        from temporalio import workflow
        from temporalio.exceptions import ChildWorkflowError

        why = await _settled(handle)
        try:
            out = handle.result()
        except ChildWorkflowError as e:
            cause = e.cause
            if type(cause).__name__ == "CancelledError":
                if why is None and workflow.cancellation_reason() is None:
                    raise Cancelled() from None  # cancelled from outside the run
                _cancelled(str(handle.id), why)
            raise RunError(Code.FAILED, f"unit {handle.id} failed: {cause or e}") from None
        if isinstance(out, dict) and out.get("calls"):
            _report_calls(out["calls"])
        if isinstance(out, dict) and out.get("usage"):
            # the unit's calls by step and stage, added where this unit counts its own
            counted = running_step_usage.get()
            if counted is not None:
                counted.add_counts(out["usage"])
        if why is not None and workflow.cancellation_reason() is None:
            # this unit's own code cancelled the child (a sibling failed): it ends as a plain
            # run's cancelled step, whatever the child made of its cancel
            raise asyncio.CancelledError(*why.args[:1])
        if isinstance(out, dict) and "e" in out:
            raise out["e"]
        return out["v"] if isinstance(out, dict) else out

    async def cancel_child(self, handle: Any, message: str | None = None) -> None:
        """Request the child's cancellation (``message``: its reason)."""
        with contextlib.suppress(Exception):
            handle.cancel(message)

    def map_batch(self, n: int) -> int | None:
        """Items per batch for a map of ``n`` items, or None when it fits this unit's history:
        the run's recorded ``[durable] map_batch``, else ``history_events // (2 *
        EVENTS_PER_ITEM)`` (1,000 by default: a batch's history stays under half the guard)."""
        return self.batch if n > self.batch else None

    def _limits(self, client: Any) -> tuple[str, float | None, int | None] | None:
        """``(model, rate_limit, concurrency)`` of ``client``'s first model with
        ``[models.named.X] rate_limit`` or ``concurrency``, or None."""
        config = self.config
        if config is None or not SERVING_URL[0]:
            return None
        for resolved in getattr(client, "models", None) or ():
            named = config.models.named.get(resolved)
            if named is not None and (named.rate_limit or named.concurrency):
                return resolved, named.rate_limit, named.concurrency
        return None

    async def take_model_slot(self, client: Any, name: str) -> str | None:
        """Wait, in workflow code, for the fleet-wide slot model call ``name`` of ``client``'s
        limited model will be sent in (temporal_rate.py); its id (the ticket
        :meth:`model_slot` takes), or None: the model has no fleet-wide limit.

        The slot is asked for by a short operation ``{name}/slot`` (signal-with-start, one
        query; the request id is the workflow's, the same on replay); not granted at once,
        the unit waits for the limiter's grant as a message (topic ``slot:ID``) — its
        workflow task completes, so what ran before (a tool's result) is recorded while it
        waits, and a worker whose task timed out while a call waited cannot have it run
        again (docs/decisions.md).  Asked again after :data:`STALE_S` with no grant (the
        limiter lost).  Cancelled while it waits: the request is released."""
        from temporalio import workflow

        limits = self._limits(client)
        if limits is None:
            return None
        model, rate_limit, concurrency = limits
        url = SERVING_URL[0]
        rid = str(workflow.uuid4()).replace("-", "")[:16]
        request = slot_request(rid, rate_limit, concurrency)
        unit = workflow.info().workflow_id

        async def ask() -> bool:
            return await ask_slot(url, model, request, unit)

        try:
            while True:
                granted, _ = await self.step(f"{name}/slot", ask)
                if granted:
                    return rid
                if await self.receive(f"slot:{rid}", STALE_S) is not NO_MESSAGE:
                    return rid
        except (asyncio.CancelledError, Cancelled):
            if workflow.cancellation_reason() is not None:  # `flowc cancel`, not a stop
                limiter = workflow.get_external_workflow_handle(
                    limiter_id(versioned_queue(url), model)
                )
                with contextlib.suppress(Exception):  # the limiter ended: nothing to release
                    await asyncio.shield(limiter.signal("release", rid))
            raise

    def model_slot(
        self, client: Any, ticket: str | None = None
    ) -> contextlib.AbstractAsyncContextManager[None] | None:
        """The fleet-wide slot a request of ``client``'s model must hold while it is sent (in
        its operation, not workflow code): its first model with ``[models.named.X]
        rate_limit`` or ``concurrency`` (temporal_rate.py), or None.  ``ticket``: the slot
        :meth:`take_model_slot` was granted."""
        limits = self._limits(client)
        if limits is None:
            return None
        return fleet_slot(SERVING_URL[0], *limits, granted=ticket)

    async def claim_end(self) -> bool:
        """The run's root takes its end (in workflow code, before its ``run_finished``): False
        when a cancel request came first — the run ends ``cancelled``; else the claim is
        written to the memo (:data:`END_MEMO`) and a timer completes the workflow task, so
        the claim is in the history before the root says how it ended (a completion the
        server refuses, because a cancel request arrived while the task ran, leaves nothing
        said: the next attempt decides again, seeing the request).  A cancel request that
        arrives after the claim is ignored — the run keeps its end — and ``flowc cancel``,
        which reads the claim, says the run has already finished (docs/durable.md "A cancel
        that comes late")."""
        from temporalio import workflow

        if not workflow.unsafe.is_replaying():
            _end_pause()
        if workflow.cancellation_reason() is not None:
            return False
        workflow.upsert_memo({END_MEMO: "finished"})
        await commit_task()  # a cancel request after the claim: the run keeps its end
        return True

    def run_budgets(self, budgets: list[Any], run_id: str) -> list[Any]:
        """The run's budgets as its model calls in this process reserve them: in the run's
        ledger, shared by every worker (temporal_budget.py), when this process serves a task
        queue; else ``budgets`` themselves."""
        if not budgets or not SERVING_URL[0]:
            return budgets
        return ledger_budgets(budgets, SERVING_URL[0], run_id)

    async def close_budget(self, run_id: str) -> None:
        """Close run ``run_id``'s ledger (in the root's workflow code, as the run ends; it
        may never have started: nothing then)."""
        from temporalio import workflow

        # (a cancel request that arrives meanwhile changes nothing: the run has ended)
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await workflow.get_external_workflow_handle(ledger_id(run_id)).signal("close")

    def cancel_requested(self) -> bool:
        """True once the running workflow's cancellation was requested (``flowc cancel``)."""
        from temporalio import workflow

        return workflow.cancellation_reason() is not None

    def replaying(self) -> bool:
        """True while the workflow replays its history."""
        from temporalio import workflow

        return workflow.in_workflow() and workflow.unsafe.is_replaying()


#: This process, as the model calls a child unit reports name it (:func:`_report_calls`).
PROCESS = secrets.token_hex(8)
#: In a child unit's workflow: the model calls made in it and in the units below it, by the
#: process that made them, ``{process: [[role, usage, cost, unknown]…]}`` (its result's
#: ``calls``; temporal_workflows.UnitWorkflow sets it).  None in the run's root.
UNIT_CALLS: contextvars.ContextVar[dict[str, list[Any]] | None] = contextvars.ContextVar(
    "agentflow_unit_calls", default=None
)


def _report_calls(calls: dict[str, list[Any]]) -> None:
    """A child unit's ``calls`` (:data:`UNIT_CALLS`): passed up by a unit; counted by the
    root in its process's router — those made in another process (its router counted the
    others when they were made), so the run's ``usage`` covers every model call of the run,
    whichever worker made it, once.  Workflow code."""
    from temporalio import workflow

    above = UNIT_CALLS.get()
    if above is not None:
        for process, made in calls.items():
            above.setdefault(process, []).extend(made)
        return
    rt = _RUNTIMES.get(workflow.info().workflow_id)
    add = getattr(rt.ctx.router, "add_calls", None) if rt is not None else None
    if add is None:
        return
    for process, made in calls.items():
        if process != PROCESS:
            add(made)


async def commit_task() -> None:
    """Complete the running workflow's task now, so what ran in it is in the history before
    the workflow goes on: it runs :data:`COMMIT_ACTIVITY`, an activity that does nothing (any
    worker of the task queue runs it; its result comes in the workflow's next task).  A timer
    would cost about a second (the dev server's timer granularity); a workflow cannot signal
    itself.  A cancel request that arrives meanwhile is ignored (the work is done: the workflow
    ends with it).  Workflow code."""
    from temporalio import workflow

    try:
        await workflow.execute_activity(
            COMMIT_ACTIVITY, start_to_close_timeout=COMMIT_TIMEOUT, summary="commit"
        )
    except asyncio.CancelledError:
        pass


#: How long a worker may take to run :data:`COMMIT_ACTIVITY` before another is asked
COMMIT_TIMEOUT = timedelta(seconds=10)


def _end_pause(env: str = END_PAUSE_ENV) -> None:
    """The tests' hook :data:`END_PAUSE_ENV` (or ``env``: ``LAST_PAUSE_ENV``; blocking:
    the workflow task stays open)."""
    mark = os.environ.get(env)
    if not mark:
        return
    with open(mark, "w"):
        pass
    for _ in range(300):
        if not os.path.exists(mark):
            return
        time.sleep(0.01)


# ---------------------------------------------------------------------------------------------
# Runtimes (one per run and process) and the two workflows

_RUNTIMES: dict[str, Runtime] = {}
#: Sinks of this process for runs it did not start (a worker's ``--trace``, a resume's).
_PROCESS_SINKS: list[Sink] = []


def set_process_sinks(sinks: list[Sink]) -> None:
    """Event sinks for the runs this process did not start."""
    _PROCESS_SINKS[:] = sinks


def register_runtime(rt: Runtime) -> None:
    """The runtime of a run started by this process (its own context: console, trace)."""
    _RUNTIMES[rt.run_id] = rt


class _UntakenRun(Exception):
    """A run this worker cannot build: its workflow task fails (Temporal hands it on; the run
    is not ended), said once by :func:`runtime_for`, the SDK's traceback of it dropped."""


#: the runs this process could not build, said once each (:func:`runtime_for`)
_UNTAKEN: set[str] = set()
#: a ``flowc worker``'s stop (temporal_runs.work): told of the first run it cannot build
STOP_ON_UNTAKEN: list[Callable[[str, FlowError], None]] = []


def runtime_for(run_id: str, spec: dict[str, Any]) -> Runtime:
    """The runtime of ``run_id`` in this process, built from the run's recorded input the first
    time one of its workflows runs here (synchronously: in workflow code).  What this process
    cannot give the run (a FlowError of the build: an API key unset, a ``[tools]`` module
    missing, a plan that no longer loads) neither ends the run nor is retried here in silence:
    it is said once (a warning of logger ``agentflow.durable``, on stderr) and raised as
    :class:`_UntakenRun`, which fails the workflow task — Temporal gives it again, to any
    worker, so one that can build the run takes it up — as ``flowc resume`` refuses a run it
    cannot build and leaves it as it was (docs/durable.md "Temporal"). In a ``flowc worker``
    (:data:`STOP_ON_UNTAKEN`) the worker is told instead, and stops with that error rather than
    be given the task again and again."""
    rt = _RUNTIMES.get(run_id)
    if rt is None:
        try:
            built = build(run_id, spec, None)
        except (RunError, RunAborted):
            raise
        except FlowError as e:
            if STOP_ON_UNTAKEN:  # a `flowc worker`: it stops, and says why (once)
                STOP_ON_UNTAKEN[-1](run_id, e)
            elif run_id not in _UNTAKEN:
                _UNTAKEN.add(run_id)
                _log.warning("%s", untaken_message(run_id, e, "temporal"))
            raise _UntakenRun(f"run {run_id} cannot be taken up by this worker: {e}") from None
        rt = _RUNTIMES.setdefault(run_id, built)
    return rt


def quiet_untaken(record: logging.LogRecord) -> bool:
    """A filter of the SDK's workflow logger: False (dropped) for its "Failed activation"
    record of a run this worker could not build, said once already, without a traceback."""
    exc = record.exc_info[1] if record.exc_info else None
    return not isinstance(exc, _UntakenRun)


def build(run_id: str, spec: dict[str, Any], context: Any) -> Runtime:
    """A :class:`~agentflow.runtime.durable.engine.Runtime` of run ``run_id`` over this
    engine (``context``: the starting process's own; else one built from ``spec``)."""

    plan = load_plan_text(spec["plan_text"], spec.get("plan_file") or "<durable>")
    owned = context is None
    if context is None:
        context = context_from_spec(spec, plan, list(_PROCESS_SINKS))

    for sink in context.sinks:  # every process exports into the run's one recorded trace
        if hasattr(sink, "durable_run"):
            sink.durable_run(
                trace_of(run_id, spec),
                run_id=run_id,
                plan=plan.name,
                started=float(spec.get("started") or 0.0),
                attempt=0 if not owned else 1,
            )
    config = context.config
    effects = DurableEffects(
        TemporalEngine(spec.get("temporal"), config),
        run_id,
        PlanIndex(plan, context.callable_plans),
        started=spec.get("started"),
        reuse=spec.get("_reuse_table") or {},
        ask_timeout=config.durable.ask_timeout_s if config is not None else None,
    )
    return Runtime(run_id, spec, plan, context, effects, owned=owned)
