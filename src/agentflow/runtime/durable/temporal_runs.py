"""Durable runs on Temporal from the outside: what runs.py's commands do when ``[durable] engine
= "temporal"`` (runs.py hands every call on a ``temporal://`` URL here; docs/durable.md
"Temporal").

- ``flowc run --durable``: this process is a worker of the task queue while it waits, and
  starts the run's workflow (eagerly: its first task runs here, so its live view and trace are
  this process's); another worker may take its units;
- ``flowc resume RUN``: Temporal resumes a run by itself as soon as a worker polls its task
  queue; ``resume`` is that worker, waiting for RUN's result;
- ``flowc worker``: a worker of the task queue until stopped;
- ``runs``, ``runs show``, ``answer``, ``cancel`` need no worker: they read the service's
  visibility and histories, signal and cancel (:mod:`.temporal_manage`, re-exported here).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentflow.core.vocabulary import Code
from agentflow.errors import ConfigError, ErrorInfo, FlowError, InputError
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.durable import temporal_client as tc
from agentflow.runtime.durable import temporal_engine as te
from agentflow.runtime.durable.run_info import worker_stopped_message
from agentflow.runtime.durable.shown import asked_question
from agentflow.runtime.durable.spec import (
    close_context,
    context_from_spec,
    new_run_id,
    process_telemetry,
    run_spec,
)
from agentflow.runtime.durable.temporal_manage import (
    _describe,
    _family,
    _no_run,
    _outcome,
    _questions,
    _where,
    answer,
    cancel,
    list_runs,
    pending_questions,
    recorded_spec,
    reuse_table,
    show_run,
    unanswered,
)
from agentflow.runtime.executor import validate_input
from agentflow.runtime.interrupt import Stopped, until_stopped
from agentflow.runtime.result import RunResult, as_usage, partial_from_json, steps_from_json

if TYPE_CHECKING:
    from agentflow.ir.models import Plan
    from agentflow.runtime.context import RunContext
    from agentflow.runtime.durable.run_info import Question

__all__ = [
    "answer",
    "cancel",
    "current_run",
    "list_runs",
    "pending_questions",
    "recorded_spec",
    "resume",
    "reuse_table",
    "run_durable",
    "served",
    "served_run",
    "show_run",
    "unanswered",
    "work",
]


def _memo_of(plan_name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The memo of a run's workflow: its plan's name, when it started and, for a durable
    question, the question (``flowc runs`` shows it without reading the history)."""
    memo: dict[str, Any] = {"plan": plan_name, "started": spec["started"]}
    question = asked_question(spec)
    if question is not None:
        memo["question"] = question
    return memo


def _serve(url: str, *, identity: str) -> Any:
    """:func:`~.temporal_workflows.serve`: its module, which imports temporalio, is loaded only
    when a Temporal run is served (an optional package: ``_temporal`` says how to install it)."""
    tc._temporal()
    from agentflow.runtime.durable.temporal_workflows import serve  # lazy: temporalio

    return serve(url, identity=identity)


# ---------------------------------------------------------------------------------------------
# Start, resume, work


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
    """:func:`agentflow.runtime.durable.runs.run_durable` on Temporal (its arguments; ``fleet``
    changes nothing: every unit goes to the task queue, which every worker polls)."""

    input = validate_input(plan, input)
    run_id = run_id or new_run_id()
    spec = run_spec(
        run_id, plan_text, plan_file, input, config_path, context,
        reuse=reuse, ask_again=ask_again, replay=replay, model=model, fleet=fleet, ask=ask,
    )  # fmt: skip
    # every worker of the run applies these, whatever its own flow.toml says
    spec["temporal"] = te.recorded_settings(url)
    async with _serve(url, identity=f"run:{run_id}@{secrets.token_hex(3)}") as client:
        if reuse:
            spec["_reuse_table"] = await reuse_table(url, reuse, asks=not ask_again)
        te.register_runtime(te.build(run_id, spec, context))
        from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy

        try:
            handle = await client.start_workflow(
                te.RUN_WORKFLOW,
                spec,
                id=run_id,
                task_queue=te.versioned_queue(url),
                memo=_memo_of(plan.name, spec),
                static_summary=f"{plan.name} ({plan_file or 'plan'})"[:200],
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                request_eager_start=True,
                task_timeout=te.TASK_TIMEOUT,
            )
        except Exception as e:  # an id taken: said in the run's terms
            if "already" in str(e).lower():
                raise InputError(
                    f"a durable run {run_id!r} exists already in {_where(url)}"
                ) from None
            raise
        if on_start is not None:
            on_start(run_id)
        out = await _waited(handle, run_id)
    return run_id, _result(out)


async def _waited(handle: Any, run_id: str) -> dict[str, Any]:
    """The run's outcome; a Ctrl-C / SIGTERM of this process stops waiting (and working) for
    it: the run goes on in Temporal (``flowc resume`` or any worker continues it)."""

    try:
        return await until_stopped(_outcome(handle))
    except Stopped as e:
        message = (
            f"{e.message}: this process stopped, the run goes on in Temporal; "
            f"flowc resume {run_id} waits for it"
        )
        return {"status": "aborted", "error": {"code": Code.ABORTED, "message": message}}


def _result(out: dict[str, Any]) -> RunResult:

    return RunResult(
        status=out.get("status", "error"),
        output=out.get("output"),
        error=ErrorInfo.from_dict(out.get("error")),
        results=out.get("results") or {},
        steps=steps_from_json(out.get("steps")),
        partial=partial_from_json(out.get("partial")),
        usage=as_usage(out.get("usage") or {}),
        duration_ms=int(out.get("duration_ms") or 0),
    )


async def resume(
    url: str,
    run_id: str,
    *,
    sinks: list[Any] | None = None,
    telemetry: Any = None,
    on_waiting: Callable[[list[Question]], None] | None = None,
) -> RunResult:
    """Wait for run ``run_id`` as a worker of its task queue: Temporal resumes a run by itself
    once a worker polls (this one, or any ``flowc worker``).  Returns its result (at once for
    a run that ended).  Raises InputError for an unknown run."""

    # what this process cannot give the run (an API key unset, a [tools] module missing or
    # broken) is refused before it becomes a worker that takes the run up: the run stays
    # `stopped`, as on DBOS (execution.py), instead of failing in its workflow
    await _buildable(url, run_id)
    with process_telemetry(sinks, telemetry) as process_sinks:
        te.set_process_sinks(process_sinks)
        try:
            async with _serve(url, identity=f"resume:{run_id}@{secrets.token_hex(3)}") as c:
                if await _describe(c, run_id) is None:
                    raise await _no_run(c, url, run_id)
                if on_waiting is not None:
                    on_waiting(await _questions(c, run_id, await _family(c, run_id)))
                return _result(await _waited(c.get_workflow_handle(run_id), run_id))
        finally:
            te.set_process_sinks([])


async def _buildable(url: str, run_id: str) -> None:
    """Build the context of run ``run_id`` (still running: not ended) from its recorded input
    as a worker of this process would, and close it again.  Raises ConfigError for what the
    environment or configuration cannot give it (spec.context_from_spec)."""
    described = await _describe(await tc.client_for(url), run_id)
    if described is None or getattr(described.status, "name", "") != "RUNNING":
        return  # unknown (said below) or ended: its recorded end is given back
    spec = await recorded_spec(url, run_id)
    plan = load_plan_text(spec["plan_text"], spec.get("plan_file") or "<durable>")
    await close_context(context_from_spec(spec, plan, []))


async def work(
    url: str, name: str, *, sinks: list[Any] | None = None, telemetry: Any = None
) -> None:
    """Be a worker of the task queue until cancelled (Temporal itself hands a dead worker's
    work to the live ones: no name lock is needed; ``name`` is the worker's identity).  A run
    it cannot build (an API key unset here, a ``[tools]`` module missing) stops it: raises
    ConfigError (:func:`~.run_info.worker_stopped_message`) once it stopped polling,
    and Temporal hands the run's task to the queue's other workers (docs/durable.md)."""

    loop = asyncio.get_running_loop()
    untaken: asyncio.Future[tuple[str, FlowError]] = loop.create_future()

    def stop(run_id: str, error: FlowError) -> None:  # from a workflow's thread
        def first() -> None:
            if not untaken.done():
                untaken.set_result((run_id, error))

        loop.call_soon_threadsafe(first)

    with process_telemetry(sinks, telemetry) as process_sinks:
        te.set_process_sinks(process_sinks)
        te.STOP_ON_UNTAKEN.append(stop)
        try:
            async with _serve(url, identity=f"worker:{name}@{os.getpid()}"):
                run_id, error = await untaken
        finally:
            te.STOP_ON_UNTAKEN.remove(stop)
            te.set_process_sinks([])
    raise ConfigError(worker_stopped_message(name, run_id, error, "temporal"))


# ---------------------------------------------------------------------------------------------
# Served runs (``flowc serve --mcp --durable``)


@contextlib.asynccontextmanager
async def served(url: str, identity: str, sinks: list[Any]) -> Any:
    """Be a worker of ``url``'s task queue while an MCP server serves (``sinks``: the process
    sinks of the runs it did not start: a run an earlier server left is taken up by this
    worker, or any other, as soon as it polls — nothing to recover by hand)."""
    te.set_process_sinks(sinks)
    try:
        async with _serve(url, identity=identity):
            yield
    finally:
        te.set_process_sinks([])


async def served_run(url: str, run_id: str) -> tuple[Any, Any] | None:
    """``(input, the awaitable of its RunResult)`` of the run ``run_id`` an earlier call
    started, or None when there is none (a served call's idempotency key names it).  The run
    goes on in whichever worker takes it; the awaitable only waits for its outcome."""
    client = await te.client_for(url)
    if await _describe(client, run_id) is None:
        return None
    spec = await recorded_spec(url, run_id)

    async def outcome() -> RunResult:
        return _result(await _outcome(client.get_workflow_handle(run_id)))

    return spec.get("input"), outcome()


def current_run() -> str:
    """The run id of the workflow this code runs in (a unit's id starts with it)."""
    return te.TemporalEngine().workflow_id().split("/", 1)[0]
