"""Durable runs executed: start, resume, work (``flowc run --durable``, ``flowc resume``,
``flowc redrive``, ``flowc worker``; docs/durable.md).  The execution half of the durable
front door (as dbos-transact-py keeps its core apart from its workflow commands); the
management half, which inspects, answers and cancels runs, is :mod:`.management`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentflow.core.vocabulary import Code
from agentflow.errors import Cancelled, ConfigError, ErrorInfo, FlowError, InputError
from agentflow.ir.dump import dump_plan
from agentflow.runtime.durable import dbos_engine, dbos_launch, temporal_runs
from agentflow.runtime.durable.asking import ASK_PLAN_FILE, ASK_PLAN_TEXT, ask_plan, ask_spec
from agentflow.runtime.durable.database import (
    no_runs_reason,
    on_engine,
    open_database,
    process_executor,
    run_lock,
    safe_url,
)
from agentflow.runtime.durable.dbos_engine import (
    build_runtime,
    check_recorded,
    dbos_with_workflows,
    fleet_map_batch,
    lazy_labels,
    register_queues,
    reuse_table,
    waiting_questions,
)
from agentflow.runtime.durable.dbos_system import (
    next_commit_behind,
    open_sync,
    start_sync,
    workflow_exists,
)
from agentflow.runtime.durable.liveness import stop_on_untaken, watch_run, worker_lock
from agentflow.runtime.durable.records import (
    check_readable,
    reading,
)
from agentflow.runtime.durable.run_info import Question, error_text, worker_stopped_message
from agentflow.runtime.durable.spec import (
    close_context,
    new_run_id,
    plan_limits,
    process_telemetry,
    run_spec,
)
from agentflow.runtime.executor import validate_input
from agentflow.runtime.interrupt import stop_request, while_loading
from agentflow.runtime.result import RunResult, as_usage, partial_from_json, steps_from_json

if TYPE_CHECKING:
    from agentflow.ir.models import Plan
    from agentflow.runtime.context import RunContext

__all__ = [
    "ask_durable",
    "await_outcome",
    "result_of",
    "resume",
    "run_durable",
    "work",
]


@on_engine(temporal_runs)
async def run_durable(
    plan: Plan,
    plan_text: str,
    input: Any,
    context: RunContext,
    *,
    url: str,
    run_id: str | None = None,
    plan_file: str | None = None,
    config_path: str | None = None,
    reuse: str | None = None,
    ask_again: bool = False,
    replay: str | None = None,
    fleet: bool = False,
    on_start: Any = None,
    model: str | None = None,
    ask: dict[str, Any] | None = None,
) -> tuple[str, RunResult]:
    """Run ``plan`` (loaded from ``plan_text``) as durable run ``run_id`` (default: a new id)
    with ``context``; ``on_start(run_id)`` is called once the run is recorded.  ``reuse``: an
    earlier run whose steps are taken where their path and rendered input are unchanged, its
    answered questions where their text and choices are (``ask_again``: every question is
    asked again).  ``fleet``: hand concurrent units and rate-limited model calls to the fleet's queues.
    ``replay`` / ``model``: the cassette or the test model (``test[:SEED]``) answering the
    run's model calls, recorded so a resumed process answers the same way.  ``ask``: the run is
    a question (:func:`ask_durable`).  Returns ``(run_id, result)``."""

    input = validate_input(plan, input)
    chosen = run_id is not None
    run_id = run_id or new_run_id()
    if dbos_launch._state["url"] != url:
        # fleet work goes to the workers.  A process that runs several runs launches once: the
        # later runs share the first one's executor id; `flowc resume` of one of them recovers
        # that run alone (dbos_engine.recover_run)
        open_database(url, executor_id=process_executor(run_id), queues=[])
    if chosen and await workflow_exists(run_id):
        # DBOS would hand back the existing run's outcome for a run that may have had another
        # input or plan (a new question answered with an old answer): refused, as on Temporal;
        # a new random id cannot be taken, so a fresh run reads nothing here
        raise InputError(
            f"a durable run {run_id!r} exists already in {safe_url(url)}: "
            f"`flowc resume {run_id}` continues it, a new --run-id starts another"
        )
    spec = run_spec(
        run_id, plan_text, plan_file, input, config_path, context,
        reuse=reuse, ask_again=ask_again, replay=replay, model=model, fleet=fleet, ask=ask,
    )  # fmt: skip
    if fleet:
        spec["queues"] = await register_queues(context.config, plan_limits(plan))
        # recorded with the run: every worker batches its maps alike (docs/durable.md "Big
        # maps on a fleet")
        spec["map_batch"] = fleet_map_batch(context.config)
    reuse_table_ = await reuse_table(reuse, asks=not ask_again) if reuse else {}
    rt = await build_runtime(run_id, spec, context=context, reuse=reuse_table_, plan=plan)
    dbos_engine._RUNTIMES[run_id] = rt
    dbos = dbos_engine.dbos_with_workflows()
    with run_lock(url, run_id), dbos_engine.starting(run_id, spec):
        # the insert is committed without an fsync of its own, which a thread makes while the
        # root starts (SQLite at `full`: issue 35); the run's id is given, and its events go
        # out, once it is on disk (docs/decisions.md "The root's insert is synced beside it")
        with dbos.SetWorkflowID(run_id), next_commit_behind():
            handle = await dbos.DBOS.start_workflow_async(dbos_engine.run_workflow(), spec)
        disk = start_sync(run_id, held=on_start is not None)
        if on_start is not None:
            try:
                if disk is not None:
                    with contextlib.suppress(Exception):  # the outcome's commit reports it
                        await asyncio.shield(disk)
            finally:
                try:
                    on_start(run_id)
                finally:
                    open_sync(run_id)  # the run's events, held until now, come after the id
        out = await await_outcome(handle, watch=(url, run_id) if fleet else None)
    return run_id, result_of(out, RunResult)


async def ask_durable(
    question: str,
    context: RunContext,
    *,
    url: str,
    max_iterations: int | None = None,
    run_id: str | None = None,
    config_path: str | None = None,
    on_start: Any = None,
    model: str | None = None,
) -> tuple[str, RunResult]:
    """Answer ``question`` (``flowc ask --durable``) as durable run ``run_id`` (default: a new
    id) on the engine of ``url`` with ``context`` (its catalog, chat model, workspace, sinks):
    a run of the plan ``ask`` whose input is the question and ``max_iterations`` and whose
    spec records the callable plans as compiled here (asking.py); its root is the question's
    agent loop with the run's durable effects, so ``flowc resume`` finishes it without
    repeating a finished model or tool call.  Returns ``(run_id, result)``: ``output`` the
    answer, ``results["ask"]`` the rounds, tools called and reports (asking.run_ask).
    ``model``: ``--model test[:SEED]``, recorded so a resume answers with the test model too."""
    plans = {name: dump_plan(plan) for name, plan in context.callable_plans.items()}
    return await run_durable(
        ask_plan(),
        ASK_PLAN_TEXT,
        {"question": question, "max_iterations": max_iterations},
        context,
        url=url,
        run_id=run_id,
        plan_file=ASK_PLAN_FILE,
        config_path=config_path,
        on_start=on_start,
        ask=ask_spec(plans),
        model=model,
    )


async def await_outcome(handle: Any, *, watch: tuple[str, str] | None = None) -> dict[str, Any]:
    """The recorded outcome of a run's workflow; a run cancelled (``flowc cancel``) while this
    process waited for it ends ``cancelled``, not with the engine's exception.  ``watch``:
    ``(database url, run id)`` of a fleet run, whose units held by a worker that dies meanwhile
    are recovered while this process waits (liveness.watch_run)."""

    watcher = asyncio.create_task(watch_run(*watch)) if watch is not None else None
    errors = dbos_with_workflows()._error
    try:
        out: dict[str, Any] = await _outcome_of(handle, errors)
    except errors.DBOSAwaitedWorkflowCancelledError:
        message = Cancelled().message
        cancelled = {"code": Code.ABORTED, "message": message}
        # a root that runs here (a resumed run's, on the engine's loop) sees the cancel
        # itself and ends `cancelled` (its trace closed, `run_finished` with its usage): that
        # outcome, whose record the engine refused, is the run's
        await dbos_engine.root_ended(handle.get_workflow_id())
        kept = dbos_engine.kept_outcome(handle.get_workflow_id())
        if kept is not None:  # `cancelled` itself when the root saw the cancel or its claim
            if kept.get("status") == "cancelled" and kept.get("error"):
                cancelled = kept["error"]
            return {**kept, "status": "cancelled", "output": None, "error": cancelled}
        return {"status": "cancelled", "error": cancelled}
    finally:
        dbos_engine.kept_outcome(handle.get_workflow_id())
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
    return out


async def _outcome_of(handle: Any, errors: Any) -> Any:
    """The outcome of the workflow of ``handle``: a workflow that runs in this process (its
    handle holds the task DBOS made for it, ``WorkflowHandleAsyncTask.task``) is awaited
    directly — its task returns only after DBOS has committed the outcome; a cancelled one,
    and a workflow that runs elsewhere, through ``get_result``, which reads the recorded
    outcome.  DBOS's own ``get_result`` awaits the same task, then serializes the output
    again and hands a no-op (``record_get_result``: nothing records the wait of a caller that
    is no workflow) to a thread and back: one hop on the run's critical path (issue 35).  A
    caller inside a workflow goes through ``get_result``, which records the wait as its step."""
    task = getattr(handle, "task", None)
    if task is None or dbos_with_workflows().DBOS.workflow_id is not None:
        return await handle.get_result(polling_interval_sec=0.1)
    try:
        return await asyncio.shield(task)
    except (errors.DBOSWorkflowCancelledError, errors.DBOSAwaitedWorkflowCancelledError):
        return await handle.get_result(polling_interval_sec=0.1)


def result_of(out: dict[str, Any], cls: type[RunResult]) -> RunResult:
    return cls(
        status=out.get("status", "error"),
        output=out.get("output"),
        error=ErrorInfo.from_dict(out.get("error")),
        results=out.get("results") or {},
        steps=steps_from_json(out.get("steps")),
        partial=partial_from_json(out.get("partial")),
        usage=as_usage(out.get("usage") or {}),
        duration_ms=int(out.get("duration_ms") or 0),
    )


@on_engine(temporal_runs)
async def resume(
    url: str,
    run_id: str,
    *,
    sinks: list[Any] | None = None,
    telemetry: Any = None,
    on_waiting: Callable[[list[Question]], None] | None = None,
) -> RunResult:
    """Continue run ``run_id`` whose process stopped (a crash, ``kill -9``, a reboot): its
    recorded steps are replayed, the rest runs here.  Returns its result (at once for a run
    that already finished).  ``telemetry``: export its spans
    (:class:`~agentflow.runtime.telemetry_settings.TelemetrySettings`) into the run's trace.
    ``on_waiting``: called once, as the run continues, with the questions it was already
    waiting on (asked before its process stopped; a replayed ``ask`` emits no event, so the
    sinks never see them).  Raises InputError for an unknown run or one still running."""

    with process_telemetry(sinks, telemetry) as process_sinks:
        # the sinks are in place before the engine starts: it may recover the run at once
        dbos_engine.set_process_sinks(process_sinks)
        try:
            # a first SIGINT / SIGTERM during the start-up (the lock, the engine, the run's
            # recovery) is kept for the wait below, which stops the run with it, rather than
            # cancelling the start-up and leaving the run `stopped`
            return await while_loading(_resume(url, run_id, dbos_engine, RunResult, on_waiting))
        finally:
            dbos_engine.set_process_sinks([])


async def _resume(
    url: str,
    run_id: str,
    dbos_engine: Any,
    result_cls: Any,
    on_waiting: Callable[[list[Question]], None] | None = None,
) -> RunResult:
    reason = no_runs_reason(url)
    if reason is not None:
        raise InputError(f"no durable run {run_id!r} ({reason})")
    # the run's lock first: `flowc runs` tells a run in progress from a stopped one by its lock
    # (issue 28: "stopped" while this process had already taken it up). Then an executor id of
    # its own, which holds nothing: the engine's start-up recovery (every pending workflow of the
    # launching executor, whatever its run) finds nothing, and the run is recovered alone below
    with run_lock(url, run_id):
        open_database(url, executor_id=process_executor(run_id), queues=[], recovering=run_id)
        await _startup_pause()
        dbos = dbos_engine.dbos_with_workflows()
        found = await dbos.DBOS.list_workflows_async(workflow_ids=[run_id])
        if not found or found[0].name == dbos_engine.UNIT_WORKFLOW:
            raise await dbos_launch.no_run_error(url, run_id)
        family = [
            w for w in await dbos.DBOS.list_workflows_async(workflow_id_prefix=run_id)
            if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")
        ]  # fmt: skip
        # every row the run replays, checked before anything is taken up (records.py)
        label = lazy_labels(run_id, family)
        check_readable(run_id, family, label)
        status = found[0]
        if status.status in ("PENDING", "ENQUEUED"):
            await check_recorded(run_id, family, label)
        if dbos_engine.interrupted_question(status):
            # a question a Ctrl-C ended: continued from its record (docs/durable.md)
            await asyncio.to_thread(dbos_engine.reopen_question, run_id)
            (status,) = await dbos.DBOS.list_workflows_async(workflow_ids=[run_id])
        here = False
        if status.status in ("PENDING", "ENQUEUED"):
            # the run's runtime is built before anything is taken up: what this process's
            # environment or configuration cannot give it (an unset API key, a [tools] module
            # missing or broken, a flow.toml that no longer loads) is refused here and the run
            # stays `stopped` — built inside its root, it would end the run for good
            await dbos_engine.runtime_for(run_id, ahead=True)
            dbos_engine.forward_stops(run_id)  # before its root may start
            recovered = await asyncio.to_thread(dbos_engine.recover_run, run_id)
            here = run_id in recovered
            if not recovered:  # nothing of it runs here (a fleet worker holds it): not kept
                await _drop_runtime(dbos_engine, run_id)
            if not here and (why := dbos_engine.never_taken_up(status)) is not None:
                dbos_engine.forget_stops(run_id)  # no root here to stop: it would wait for ever
                raise InputError(f"run {run_id} cannot be resumed: {why}")
            if on_waiting is not None:
                family = await dbos.DBOS.list_workflows_async(workflow_id_prefix=run_id)
                family = [
                    w
                    for w in family
                    if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")
                ]
                with reading(run_id):
                    on_waiting(await waiting_questions(run_id, family))
        handle = await dbos.DBOS.retrieve_workflow_async(run_id)
        # a fleet run (units held by workers): recover those of a worker that is gone, now and
        # whenever one dies while this process waits
        try:
            out = await _stopping_root(
                run_id, here, await_outcome(handle, watch=(url, run_id)), dbos_engine
            )
        except Exception as e:
            if status.status != "ERROR":
                raise
            # a run that had ended with an exception outside any step (a worker that could not
            # build it): that is its recorded end, given as a result (`flowc resume` says it
            # had ended, --json prints it), not raised as if this resume had failed
            out = {"status": "error", "error": error_text(e)}
        finally:
            dbos_engine.forget_stops(run_id)
    return result_of(out, result_cls)


async def _drop_runtime(dbos_engine: Any, run_id: str) -> None:
    """Forget the runtime :func:`_resume` built for run ``run_id`` before it took it up, and
    close what it opened, when nothing of the run runs in this process."""
    rt = dbos_engine._RUNTIMES.pop(run_id, None)
    if rt is not None and rt.owned:
        await close_context(rt.ctx)


#: Internal, for the tests only (tests/runtime/durable/test_cancel_and_sigterm_close_the_run.py
#: documents it): a file ``flowc resume`` creates once it holds the run's lock and its engine is
#: open, before it takes the run up; it then waits there (at most a minute) until a signal has
#: come, so a test's SIGTERM lands in the start-up, not in a race with it.
STARTUP_PAUSE_ENV = "_AGENTFLOW_RESUME_STARTUP_PAUSE"


async def _startup_pause() -> None:
    mark = os.environ.get(STARTUP_PAUSE_ENV)
    stop = stop_request()
    if not mark or stop is None:
        return
    Path(mark).touch()
    for _ in range(6000):
        if stop.received:
            return
        await asyncio.sleep(0.01)


async def _stopping_root(run_id: str, here: bool, outcome: Any, engine: Any) -> Any:
    """Await ``outcome`` (a resumed run's), forwarding this process's first SIGINT / SIGTERM
    (its stop request: :func:`agentflow.runtime.interrupt.run`) to the run's root when it runs
    here (``here``), on the engine's loop: the root stops as `flowc run --durable` stops (its
    steps in flight cancelled, ``run_finished``, the run recorded ``aborted``) and that
    outcome comes back.  A root that runs elsewhere (a fleet worker's) goes on: this process
    stops waiting (a second signal also stops it at once)."""
    stop = stop_request()
    if stop is None:
        return await outcome
    stop.listeners += 1
    waiting = asyncio.ensure_future(outcome)
    try:
        signal = asyncio.ensure_future(stop.event.wait())
        try:
            await asyncio.wait({waiting, signal}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            signal.cancel()
        if not waiting.done():
            if not here:
                message = (
                    f"interrupted by {stop.signal}: this process stopped, the run goes on "
                    f"with its fleet; flowc resume {run_id} waits for it"
                )
                return {"status": "aborted", "error": {"code": Code.ABORTED, "message": message}}
            engine.stop_root(run_id, str(stop.signal), stop.signum)
        return await waiting
    finally:
        stop.listeners -= 1
        if not waiting.done():
            waiting.cancel()


@on_engine(temporal_runs)
async def work(
    url: str, name: str, *, sinks: list[Any] | None = None, telemetry: Any = None
) -> None:
    """Be a worker of the fleet on ``url`` until cancelled: take units and runs from every
    queue; the pending work of an earlier worker named ``name`` is resumed first.  A run it
    cannot build (an API key unset here, a ``[tools]`` module missing) stops it: raises
    :class:`ConfigError` (:func:`~.run_info.worker_stopped_message`) once the engine is shut down and its liveness lock free, so the
    units it held go back to their queues for the other workers (docs/durable.md).
    ``telemetry``: export the spans of the units it runs, each into its run's trace."""

    with process_telemetry(sinks, telemetry) as process_sinks:
        dbos_engine.set_process_sinks(process_sinks)
        try:
            # the worker's liveness lock, held from before it takes any unit until its process
            # ends: while it is held nobody recovers its units (liveness.py)
            loop = asyncio.get_running_loop()
            untaken: asyncio.Future[tuple[str, FlowError]] = loop.create_future()

            def stop(run_id: str, error: FlowError) -> None:  # from the engine's threads too
                def first() -> None:
                    if not untaken.done():
                        untaken.set_result((run_id, error))

                loop.call_soon_threadsafe(first)

            with worker_lock(url, name), stop_on_untaken(stop):
                try:
                    open_database(url, executor_id=f"worker:{name}", queues=None)
                    run_id, error = await untaken
                finally:  # the engine stops before the lock goes: no unit runs unguarded
                    dbos_engine.shutdown()
            # its lock free now: the run's waiting process puts the units back (liveness.py)
            raise ConfigError(worker_stopped_message(name, run_id, error))
        finally:
            dbos_engine.set_process_sinks([])
