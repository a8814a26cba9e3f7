"""The Temporal definitions of durable runs (imported only when ``[durable] engine =
"temporal"``): the workflow types ``agentflow.run`` and ``agentflow.unit`` and the operation
activity ``agentflow.op`` (temporal_engine.py explains them).  Workflows run unsandboxed:
agentflow's interpreter sends every effect through the engine (docs/decisions.md "Temporal as
a second durable engine")."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError

from agentflow.runtime import interrupt
from agentflow.runtime.durable import temporal_engine as te
from agentflow.runtime.durable.engine import run_unit
from agentflow.runtime.durable.spec import run_root
from agentflow.runtime.durable.temporal_client import LAST_PAUSE_ENV
from agentflow.runtime.durable.temporal_ledger import BudgetWorkflow
from agentflow.runtime.durable.temporal_rate import RateWorkflow
from agentflow.runtime.events import EventBus
from agentflow.runtime.executor import Executor, run_budgets
from agentflow.runtime.models.budget import pop_budget, push_budget
from agentflow.runtime.models.router import recorded_calls
from agentflow.runtime.result import StepUsage, running_step_usage

__all__ = ["RunWorkflow", "UnitWorkflow", "commit", "op", "serve"]


@activity.defn(name=te.STEP_ACTIVITY)
async def op(token: str) -> dict[str, Any]:
    """Run the operation the workflow registered under ``token`` (in this process): its value,
    or its exception as a value (recorded; raised again in the workflow, never retried)."""
    found = te._PENDING.pop(token, None)
    if found is None:
        raise ApplicationError(
            f"operation {token} is not registered in this worker", non_retryable=True
        )
    fn, context = found
    te._RAN.add(token)
    task = asyncio.get_running_loop().create_task(te._value(fn), context=context)
    try:
        result = await asyncio.shield(task)
        te._LIVE[token] = result  # the workflow, in this process, goes on with it
        return result
    except asyncio.CancelledError:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        raise


@activity.defn(name=te.COMMIT_ACTIVITY)
async def commit() -> None:
    """Nothing: running it completes the workflow's task (temporal_engine.commit_task)."""


def _own_context() -> None:
    """Forget the starting process's stop request (a context variable the workflow's thread
    inherited): its event belongs to that process's loop, and a Ctrl-C stops the process, not
    the run (docs/durable.md "Temporal")."""

    interrupt.forget_stop_request()


class _Unit:
    """What both workflow types share: the inbox of signalled messages and the run's input."""

    def __init__(self) -> None:
        self.inbox: dict[str, list[Any]] = {}
        self.root: dict[str, Any] = {}
        #: the operations recorded in this workflow's history, ``[shown, internal]`` (counted
        #: by temporal_engine.step, on replay too; None once one was cancelled: unknown),
        #: written to the memo as ``ops`` when it ends (``runs show`` skips by it)
        self.ops: list[int] | None = [0, 0]

    def _ended_memo(self) -> dict[str, Any]:
        return {"ops": list(self.ops)} if self.ops is not None else {}

    @workflow.signal(name=te.MESSAGE_SIGNAL)
    def message(self, message: dict[str, Any]) -> None:
        """A message (an answer) to this unit: ``{"topic", "value", "token"}``."""
        self.inbox.setdefault(str(message.get("topic")), []).append(message.get("value"))


@workflow.defn(name=te.RUN_WORKFLOW, sandboxed=False,
               failure_exception_types=[workflow.NondeterminismError])  # fmt: skip
class RunWorkflow(_Unit):
    """A durable run: the plan interpreter over :class:`~.temporal_engine.TemporalEngine`."""

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Run the run's root; its output record (``RunResult.to_dict()``)."""

        _own_context()
        wfid = workflow.info().workflow_id
        # what a child unit needs of the run to build its runtime: all but the run's input (a
        # 100,000-item input in each batch's start would pass the server's message limit)
        self.root = {k: v for k, v in spec.items() if k != "input"}
        rt = te.runtime_for(wfid, spec)
        rt.spec.setdefault("input", spec.get("input"))  # built here by a child, without it
        rt.effects.forget(wfid)
        try:
            out = await run_root(rt)
        finally:
            # the task that said the run's end (`run_finished`) is recorded before the workflow
            # completes: a late signal that makes the server refuse the last task's completion
            # has its next attempt replay that end, not say it again (Effects.end_replayed) —
            # the ledger's close (a signal: the task completes with it) or a commit
            if run_budgets(rt.plan, rt.ctx.config):  # the run's ledger ends with it
                await rt.effects.engine.close_budget(wfid)  # type: ignore[attr-defined]
            else:
                await te.commit_task()
        te._RUNTIMES.pop(wfid, None)  # the run ended: a long-lived worker keeps nothing of it
        workflow.upsert_memo({"status": out.get("status"), **self._ended_memo()})
        if not workflow.unsafe.is_replaying():
            te._end_pause(LAST_PAUSE_ENV)
        return out


@workflow.defn(name=te.UNIT_WORKFLOW, sandboxed=False,
               failure_exception_types=[workflow.NondeterminismError])  # fmt: skip
class UnitWorkflow(_Unit):
    """A child unit (a map item, a branch, a ``plan__*`` call …) of a durable run."""

    @workflow.run
    async def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Run the unit; ``{"v": value}`` or ``{"e": exception}`` (raised in the parent)."""

        _own_context()
        wfid = workflow.info().workflow_id
        self.root = spec["root"]
        rt = te.runtime_for(spec["run"], self.root)
        rt.effects.forget(wfid)
        # an executor of this workflow's own (its event loop is this workflow's), counting its
        # steps' model calls (and, as it collects them, its child units'): reported with its
        # result, added to the unit above it (temporal_engine.collect)
        usage = StepUsage()
        ex = Executor(
            rt.ctx, EventBus([usage, *rt.ctx.sinks]), effects=rt.effects, step_usage=usage
        )
        # the run's budgets hold for the unit's model calls too (a workflow's task does not
        # inherit the root's): in the ledger every worker of the run reserves in
        held = [push_budget(b) for b in rt.effects.run_budgets(run_budgets(rt.plan, rt.ctx.config))]
        # the model calls made in the unit (and below it), by process, reported to the root,
        # which counts those its own router did not (temporal_engine._report_calls)
        own: list[list[Any]] = []
        calls = {te.PROCESS: own}
        logged = (recorded_calls.set(own), te.UNIT_CALLS.set(calls))
        counted = running_step_usage.set(usage)
        try:
            out: dict[str, Any] = {"v": await run_unit(ex, rt.effects.index, spec)}
        except Exception as e:  # noqa: BLE001 - raised again in the parent
            out = {"e": e}
        finally:
            for token in reversed(held):
                pop_budget(token)
            recorded_calls.reset(logged[0])
            te.UNIT_CALLS.reset(logged[1])
            running_step_usage.reset(counted)
        if any(calls.values()):
            out["calls"] = {k: v for k, v in calls.items() if v}
        if usage.by_step:
            out["usage"] = usage.counts()
        # the unit's work (its operations, and the events said of them) is in the history
        # before it completes: a completion the server refuses — its parent's cancel arrived
        # while the task ran — does not run the unit's last operations again, saying them twice
        await te.commit_task()
        if self.ops is not None:
            workflow.upsert_memo(self._ended_memo())
        return out


#: (url, event loop id) → how many blocks of :func:`serve` use its worker now
_SERVING: dict[tuple[str, int], int] = {}


@contextlib.asynccontextmanager
async def serve(url: str, *, identity: str | None = None) -> Any:
    """Be a Temporal worker of ``url``'s task queue while the block runs: take run and unit
    workflow tasks (and run their operations).  Yields the client.  Re-entrant: within a
    block already serving ``url`` on this event loop (a ``flowc serve --mcp --durable``
    process starting a run), the worker that runs is that one (the SDK allows one worker per
    task queue and process)."""
    from temporalio.worker import PollerBehaviorSimpleMaximum, Worker

    sdk_log = logging.getLogger("temporalio.worker._workflow_instance")
    if te.quiet_untaken not in sdk_log.filters:  # a run this worker cannot build: said once
        sdk_log.addFilter(te.quiet_untaken)
    client = await te.client_for(url)
    target = te.parse_url(url)
    te.HISTORY_EVENTS[0] = target.history_events
    te.MAP_BATCH[0] = target.map_batch
    te.SERVING_URL[0] = url
    key = (url, id(asyncio.get_running_loop()))
    if _SERVING.get(key):
        _SERVING[key] += 1
        try:
            yield client
        finally:
            _SERVING[key] -= 1
        return
    worker = Worker(
        client,
        task_queue=te.versioned_queue(url),
        workflows=[RunWorkflow, UnitWorkflow, RateWorkflow, BudgetWorkflow],
        activities=[op, commit],
        identity=identity,
        # loading a run's plan, configuration and tools is workflow code here: on a busy
        # machine it may hold a workflow task past Temporal's 2 s deadlock alarm
        debug_mode=True,
        # [durable] worker_concurrency: the most operations (tool, model, MCP calls) this
        # process runs at once, whichever units it holds
        max_concurrent_local_activities=target.worker_concurrency or 200,
        max_concurrent_activities=target.worker_concurrency or None,
        # a child unit's first task comes through the shared queue, not the sticky one:
        # as many pollers on each (the default, 1 in 5 on the shared queue, made each map
        # item wait its turn for a poll)
        workflow_task_poller_behavior=PollerBehaviorSimpleMaximum(maximum=10),
        nonsticky_to_sticky_poll_ratio=1.0,
        # a worker killed holding a workflow in its cache: the next task of that workflow goes
        # to the other workers after this long (Temporal's default, 10 s, is the recovery
        # time after a SIGKILL)
        sticky_queue_schedule_to_start_timeout=te.STICKY_TIMEOUT,
    )
    async with worker:
        _SERVING[key] = 1
        try:
            yield client
        finally:
            _SERVING.pop(key, None)
