"""Durable runs from the outside: start, resume, inspect, answer, cancel, redrive, work
(``flowc run --durable``, ``flowc resume``, ``flowc runs``, ``flowc answer``, ``flowc cancel``,
``flowc redrive``, ``flowc worker``; docs/durable.md).

A run's id is printed when it starts; its state lives in the database of ``[durable] database``
(default ``.flowc/durable.sqlite`` beside ``flow.toml``, else in the current directory).  A run
started here holds a lock file while its process lives, so ``flowc resume`` can tell a run
whose process died from one still running (SQLite; a fleet on PostgreSQL recovers through its
workers, each of which resumes the work of its predecessor of the same ``--name``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agentflow.errors import ConfigError, ErrorInfo, InputError, RunError
from agentflow.runtime.durable.records import (
    UnreadableRecord,
    check_readable,
    reading,
    unreadable,
    unreadable_error,
)
from agentflow.runtime.durable.run_info import Question, RunInfo, published_questions

if TYPE_CHECKING:
    from agentflow.ir.models import Plan
    from agentflow.runtime.config import Config
    from agentflow.runtime.context import RunContext
    from agentflow.runtime.durable.dbos_engine import Runtime
    from agentflow.runtime.result import RunResult

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "Question",
    "RunInfo",
    "answer",
    "build_runtime",
    "cancel",
    "database_for",
    "list_runs",
    "missing_database",
    "new_run_id",
    "open_database",
    "pending_questions",
    "process_executor",
    "resume",
    "reuse_table",
    "run_durable",
    "run_root",
    "show_run",
    "unanswered",
    "work",
]


# ---------------------------------------------------------------------------------------------
# Where the state is


def database_for(config: Config, database: str | None = None) -> str:
    """The database URL of durable runs under ``config``: ``database`` when given, else
    ``[durable] database`` (``${VAR}`` expanded), a SQLite file relative to the directory of
    ``flow.toml`` (the current directory without one). Raises ConfigError for an unset
    variable or a URL that is neither SQLite nor PostgreSQL."""
    import re

    from agentflow.runtime.durable.dbos_engine import database_url, with_synchronous

    if (database or "").startswith("temporal://") or (
        database is None and config.durable.engine == "temporal"
    ):
        from agentflow.runtime.durable.temporal_engine import url_for

        return database or url_for(config)
    raw = database or config.durable.database

    def var(m: re.Match[str]) -> str:
        if m.group(1) not in os.environ:
            raise ConfigError(
                f"{config.where()}: [durable] database: environment variable {m.group(1)} is "
                "not set"
            )
        return os.environ[m.group(1)]

    raw = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", var, raw)
    try:
        return with_synchronous(database_url(raw, config.base_dir()), config.durable.synchronous)
    except ValueError as e:
        where = "--database" if database else f"{config.where()}: [durable] database"
        raise ConfigError(f"{where}: {e}") from None


def _on_engine(fn: F) -> F:
    """A command of durable runs that the Temporal backend (temporal_runs.py, the function of
    the same name) does instead when its ``url`` is ``temporal://``: the one place a command
    picks its engine."""
    import functools

    @functools.wraps(fn)
    async def dispatch(*args: Any, **kw: Any) -> Any:
        url = kw["url"] if "url" in kw else args[0]
        if isinstance(url, str) and url.startswith("temporal://"):
            from agentflow.runtime.durable import temporal_runs

            return await getattr(temporal_runs, fn.__name__)(*args, **kw)
        return await fn(*args, **kw)

    return dispatch  # type: ignore[return-value]


def open_database(
    url: str, *, executor_id: str, queues: list[str] | None = None, recovering: str | None = None
) -> None:
    """Launch the durable engine on ``url`` in this process as ``executor_id`` (``recovering``:
    the run this process resumes, :func:`~agentflow.runtime.durable.dbos_engine.launch`)."""
    from agentflow.runtime.durable.dbos_engine import launch

    try:
        launch(url, executor_id=executor_id, queues=queues, recovering=recovering)
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001 - a database that cannot be opened
        # the driver's own words, without SQLAlchemy's wrapping and "Background on this error" link
        reason = str(getattr(e, "orig", None) or e).strip()
        raise ConfigError(f"cannot open the durable runs database {_safe(url)}: {reason}") from None


def missing_database(url: str) -> Path | None:
    """The file of SQLite database ``url`` when it does not exist (None: it exists, or ``url``
    is PostgreSQL): a command that only reads or messages runs has nothing to do there, and
    creates nothing."""
    from agentflow.runtime.durable.dbos_engine import sqlite_path

    file = sqlite_path(url)
    return file if file is not None and not file.exists() else None


def _attach(url: str, run_id: str | None = None) -> None:
    """Open ``url`` for inspecting or messaging runs: the engine this process already runs on
    ``url`` (a server's, a run's) as it is, else a launch as this command-line process.
    Raises InputError, naming ``run_id``, for a SQLite file that does not exist (it is not
    created: see :func:`missing_database`)."""
    from agentflow.runtime.durable.dbos_engine import _state

    if _state["url"] != url:
        missing = missing_database(url)
        if missing is not None:
            what = f"no durable run {run_id!r}" if run_id else "no durable runs"
            raise InputError(f"{what} (no database at {missing})")
        open_database(url, executor_id=f"cli:{os.getpid()}", queues=[])


def _safe(url: str) -> str:
    """``url`` without a password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return url


def process_executor(run_id: str) -> str:
    """The engine's executor id for a process that starts or resumes run ``run_id``:
    ``run:RUN@xxxxxx``, new for each process, so nothing is pending under it when the engine
    starts (its start-up recovery takes every pending workflow of the executor id it
    launches with)."""
    return f"run:{run_id}@{secrets.token_hex(3)}"


def new_run_id() -> str:
    """A fresh run id: ``run-`` + UTC date and time + 6 random hex digits."""
    return time.strftime("run-%Y%m%d-%H%M%S-", time.gmtime()) + secrets.token_hex(3)


def _lock_path(url: str, run_id: str) -> Path | None:
    if not url.startswith("sqlite:///"):
        return None
    db = Path(url[len("sqlite:///") :].split("?", 1)[0])
    return db.parent / "locks" / f"{run_id.replace('/', '_')}.lock"


@contextlib.contextmanager
def _run_lock(url: str, run_id: str) -> Any:
    """Hold the lock of ``run_id`` while this process runs it (released by the OS when the
    process dies, however it dies).  Raises InputError when another process holds it."""
    path = _lock_path(url, run_id)
    if path is None:
        yield
        return
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fh = path.open("a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise InputError(
                f"run {run_id} is running in another process (its lock {path} is held)"
            ) from None
        yield
    finally:
        fh.close()


# ---------------------------------------------------------------------------------------------
# Runtimes


async def build_runtime(
    run_id: str,
    spec: dict[str, Any],
    *,
    context: RunContext | None = None,
    extra_sinks: list[Any] | None = None,
    reuse: dict[str, tuple[str, Any]] | None = None,
    plan: Plan | None = None,
) -> Runtime:
    """The runtime of run ``run_id`` from its recorded input ``spec``: the plan from its text,
    the configuration from its ``flow.toml`` path, the catalog and model router built from it
    (``context``: the caller's own, for a run started in this process; ``plan``: the plan
    the caller already loaded from that very text, not loaded again)."""
    from agentflow.ir.loader import load_plan_text
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import dbos_engine

    if plan is None:
        plan = load_plan_text(spec["plan_text"], spec.get("plan_file") or "<durable>")
    owned = context is None
    if context is None:
        context = context_from_spec(spec, plan, extra_sinks)
    await _continue_trace(run_id, spec, plan, context.sinks, resumed=owned)
    config = context.config or load_config(spec.get("config"))
    effects = dbos_engine.new_effects(
        run_id,
        plan,
        context.callable_plans,
        spec,
        reuse=reuse if reuse is not None else spec.get("_reuse_table"),
        ask_timeout=config.durable.ask_timeout_s if config is not None else None,
        queues=_Queues(config, spec) if spec.get("fleet") else None,
    )
    rt = dbos_engine.Runtime(run_id, spec, plan, context, effects, owned=owned)
    if spec.get("reuse") and not effects.reuse:
        effects.reuse = await reuse_table(spec["reuse"], asks=not spec.get("ask_again"))
    return rt


def context_from_spec(
    spec: dict[str, Any], plan: Plan, extra_sinks: list[Any] | None
) -> RunContext:
    """The :class:`~agentflow.runtime.context.RunContext` of a run from its recorded input
    ``spec`` (configuration, catalog, model router; ``extra_sinks``: the process's), for a
    process that did not start the run (engine-neutral: DBOS and Temporal build it alike)."""
    from agentflow.runtime.config import load_config
    from agentflow.runtime.context import RunContext
    from agentflow.runtime.models.router import ModelRouter
    from agentflow.runtime.tools.build import build_catalog

    config = load_config(spec.get("config"))
    catalog = build_catalog(config, plan=plan)
    router: Any
    if spec.get("model"):  # `--model test[:SEED]`: the built-in test model again
        from agentflow.runtime.models.test_model import parse_model_option, test_router

        seed, call_tools = parse_model_option(spec["model"])
        router = test_router(config, seed, call_tools=call_tools)
    elif spec.get("replay"):
        from agentflow.runtime.models.cassette import ReplayRouter

        router = ReplayRouter(spec["replay"], config)
    else:
        router = ModelRouter(config) if config.has_model() else None
    return RunContext(
        catalog=catalog,
        router=router,
        config=config,
        workspace=Path(spec.get("workspace") or Path.cwd()),
        sinks=tuple(_per_run(extra_sinks or ())),
    )


def _per_run(sinks: Any) -> list[Any]:
    """The process's sinks for one more run: a factory of per-run sinks (the telemetry of
    ``flowc resume`` / ``flowc worker``, :class:`~agentflow.runtime.telemetry.RunSinks`)
    makes this run's own."""
    return [s.for_run() if hasattr(s, "for_run") else s for s in sinks]


def trace_of(run_id: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The trace identity recorded with run ``run_id`` (``spec["trace"]``), else (a run
    recorded before it was) the one derived from its id and start."""
    from agentflow.runtime.telemetry import durable_trace

    recorded = spec.get("trace")
    if isinstance(recorded, dict) and recorded.get("trace_id") and recorded.get("span_id"):
        return recorded
    return durable_trace(run_id, spec.get("started") or 0.0)


async def _continue_trace(
    run_id: str, spec: dict[str, Any], plan: Plan, sinks: Any, *, resumed: bool
) -> None:
    """Put the OpenTelemetry sinks among ``sinks`` on the run's recorded trace (one trace and
    one run span across every process of the run; docs/durable.md "Telemetry"); ``resumed``:
    this process did not start the run (its attempt number is the engine's count of
    recoveries)."""
    targets = [s for s in sinks if hasattr(s, "durable_run")]
    if not targets:
        return
    attempt = 0
    if resumed:
        from agentflow.runtime.durable.dbos_engine import query_workflows

        with contextlib.suppress(Exception):  # an attribute; never worth failing the run
            found = await query_workflows(workflow_ids=[run_id])
            attempt = max(0, int(found[0].recovery_attempts or 1) - 1) if found else 0
    for sink in targets:
        sink.durable_run(
            trace_of(run_id, spec),
            run_id=run_id,
            plan=plan.name,
            started=float(spec.get("started") or time.time()),
            attempt=attempt,
        )


async def run_root(rt: Runtime) -> dict[str, Any]:
    """Run the root of a durable run (inside its ``agentflow.run`` workflow)."""
    from agentflow.runtime.executor import run_plan

    try:
        result = await run_plan(rt.plan, rt.spec.get("input"), rt.ctx, effects=rt.effects)
    finally:
        if rt.owned:
            await _close(rt.ctx)
    out = result.to_dict()
    out["reused"] = len(rt.effects.reused)
    return out


async def _close(ctx: RunContext) -> None:
    if ctx.catalog is not None:
        with contextlib.suppress(Exception):
            await ctx.catalog.aclose()
    close = getattr(ctx.router, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()


class _Queues:
    """How a fleet run spreads its work: concurrent units on ``agentflow.units.c{limit}``
    (partitioned by the step that made them: a map's ``limit`` holds across the fleet), model
    calls of a model with ``rate_limit``/``concurrency`` on ``agentflow.model.{name}``."""

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
    """Register the fleet's queues: one per map limit in use and one per model with a
    ``rate_limit`` or ``concurrency`` (``DBOS.register_queue_async``, persisted: every worker
    finds them).  The queue holds a model's concurrency; its rate limit is held per request
    (runtime/durable/ratelimit.py), not by the queue's limiter.  A map limit's queue also
    holds ``[durable] worker_concurrency``, the most of its items one worker runs at once."""
    from agentflow.runtime.durable.dbos_engine import _dbos

    dbos = _dbos()
    names = []
    for limit in sorted(limits):
        name = f"agentflow.units.c{limit}"
        await dbos.DBOS.register_queue_async(
            name,
            partition_concurrency=limit if limit else None,
            worker_concurrency=config.durable.worker_concurrency if config is not None else None,
            polling_interval_sec=0.05,
            on_conflict="always_update",
        )
        names.append(name)
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


def plan_limits(plan: Plan) -> set[int]:
    """Every literal map ``concurrency`` of ``plan`` and its sub-plans (1 for a templated one)."""
    from agentflow.ir.models import Step

    found: set[int] = set()

    def visit(value: Any) -> None:
        if isinstance(value, Step):
            if value.tool_name in ("map", "parallel"):
                c = (value.input or {}).get("concurrency")
                found.add(c if isinstance(c, int) and not isinstance(c, bool) else 0)
            visit(value.input)
        elif isinstance(value, dict):
            for v in value.values():
                visit(v)
        elif isinstance(value, list):
            for v in value:
                visit(v)

    for step in plan.steps:
        visit(step)
    for sub in (plan.plans or {}).values():
        found |= plan_limits(sub)
    return found


# ---------------------------------------------------------------------------------------------
# Start, resume


def run_spec(
    run_id: str,
    plan_text: str,
    plan_file: str | None,
    input: Any,
    config_path: str | None,
    context: RunContext,
    *,
    reuse: str | None,
    ask_again: bool,
    replay: str | None,
    model: str | None,
    fleet: bool,
) -> dict[str, Any]:
    """What a durable run records when it starts, on every engine: the plan's text and file,
    the input, where ``flow.toml`` is, the workspace, the start time, the reuse/replay/model
    options, and the run's trace context (every process of the run exports into this trace:
    docs/durable.md "Telemetry"; a ``TRACEPARENT`` of the caller is its parent)."""
    from agentflow.runtime.telemetry import OtelSink, durable_trace

    started = time.time()
    traceparent = next(
        (s.settings.traceparent for s in context.sinks if isinstance(s, OtelSink)),
        os.environ.get("TRACEPARENT"),
    )
    return {
        "plan_text": plan_text,
        "plan_file": plan_file,
        "input": input,
        "config": config_path,
        "workspace": str(context.workspace),
        "started": started,
        "reuse": reuse,
        "ask_again": ask_again,
        "replay": replay,
        "model": model,
        "fleet": fleet,
        "trace": durable_trace(run_id, started, traceparent),
    }


@_on_engine
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
) -> tuple[str, RunResult]:
    """Run ``plan`` (loaded from ``plan_text``) as durable run ``run_id`` (default: a new id)
    with ``context``; ``on_start(run_id)`` is called once the run is recorded.  ``reuse``: an
    earlier run whose steps are taken where their path and rendered input are unchanged, its
    answered questions where their text and choices are (``ask_again``: every question is
    asked again).  ``fleet``: hand concurrent units and rate-limited model calls to the fleet's queues.
    ``replay`` / ``model``: the cassette or the test model (``test[:SEED]``) answering the
    run's model calls, recorded so a resumed process answers the same way.
    Returns ``(run_id, result)``."""
    from agentflow.runtime.durable import dbos_engine
    from agentflow.runtime.executor import validate_input
    from agentflow.runtime.result import RunResult

    validate_input(plan, input)
    run_id = run_id or new_run_id()
    if dbos_engine._state["url"] != url:
        # fleet work goes to the workers.  A process that runs several runs launches once: the
        # later runs share the first one's executor id; `flowc resume` of one of them recovers
        # that run alone (dbos_engine.recover_run)
        open_database(url, executor_id=process_executor(run_id), queues=[])
    spec = run_spec(
        run_id, plan_text, plan_file, input, config_path, context,
        reuse=reuse, ask_again=ask_again, replay=replay, model=model, fleet=fleet,
    )  # fmt: skip
    if fleet:
        spec["queues"] = await register_queues(context.config, plan_limits(plan))
    reuse_table_ = await reuse_table(reuse, asks=not ask_again) if reuse else {}
    rt = await build_runtime(run_id, spec, context=context, reuse=reuse_table_, plan=plan)
    dbos_engine._RUNTIMES[run_id] = rt
    dbos = dbos_engine._dbos()
    with _run_lock(url, run_id):
        with dbos.SetWorkflowID(run_id):
            handle = await dbos.DBOS.start_workflow_async(dbos_engine.run_workflow(), spec)
        if on_start is not None:
            on_start(run_id)
        out = await _outcome(handle, watch=(url, run_id) if fleet else None)
    return run_id, _result(out, RunResult)


async def _outcome(handle: Any, *, watch: tuple[str, str] | None = None) -> dict[str, Any]:
    """The recorded outcome of a run's workflow; a run cancelled (``flowc cancel``) while this
    process waited for it ends ``aborted``, not with the engine's exception.  ``watch``:
    ``(database url, run id)`` of a fleet run, whose units held by a worker that dies meanwhile
    are recovered while this process waits (liveness.watch_run)."""
    from agentflow.runtime.durable.dbos_engine import _dbos
    from agentflow.runtime.durable.liveness import watch_run

    watcher = asyncio.create_task(watch_run(*watch)) if watch is not None else None
    try:
        out: dict[str, Any] = await handle.get_result(polling_interval_sec=0.1)
    except _dbos()._error.DBOSAwaitedWorkflowCancelledError:
        message = "the run was cancelled (flowc cancel)"
        return {"status": "aborted", "error": {"code": "aborted", "message": message}}
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
    return out


def _result(out: dict[str, Any], cls: Any) -> RunResult:
    return cls(
        status=out.get("status", "error"),
        output=out.get("output"),
        error=ErrorInfo.from_dict(out.get("error")),
        results=out.get("results") or {},
        usage=out.get("usage") or {},
        duration_ms=int(out.get("duration_ms") or 0),
    )


@_on_engine
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
    (:class:`~agentflow.runtime.telemetry.TelemetrySettings`) into the run's trace.
    ``on_waiting``: called once, as the run continues, with the questions it was already
    waiting on (asked before its process stopped; a replayed ``ask`` emits no event, so the
    sinks never see them).  Raises InputError for an unknown run or one still running."""
    from agentflow.runtime.durable import dbos_engine
    from agentflow.runtime.result import RunResult

    with _process_telemetry(sinks, telemetry) as process_sinks:
        # the sinks are in place before the engine starts: it may recover the run at once
        dbos_engine.set_process_sinks(process_sinks)
        try:
            return await _resume(url, run_id, dbos_engine, RunResult, on_waiting)
        finally:
            dbos_engine.set_process_sinks([])


@contextlib.contextmanager
def _process_telemetry(sinks: list[Any] | None, telemetry: Any) -> Any:
    """``sinks`` plus, with ``telemetry`` settings, a factory of per-run OpenTelemetry sinks
    (closed, i.e. flushed, at the end)."""
    factory = None
    if telemetry is not None:
        from agentflow.runtime.telemetry import RunSinks, otel_available

        if not otel_available():
            from agentflow.runtime.telemetry import INSTALL_HINT

            raise ConfigError(INSTALL_HINT)
        factory = RunSinks(telemetry)
    try:
        yield [*(sinks or []), *([factory] if factory is not None else [])]
    finally:
        if factory is not None:
            factory.close()


async def _resume(
    url: str,
    run_id: str,
    dbos_engine: Any,
    result_cls: Any,
    on_waiting: Callable[[list[Question]], None] | None = None,
) -> RunResult:
    missing = missing_database(url)
    if missing is not None:
        raise InputError(f"no durable run {run_id!r} (no database at {missing})")
    # the run's lock first: `flowc runs` tells a run in progress from a stopped one by its lock
    # (issue 28: "stopped" while this process had already taken it up). Then an executor id of
    # its own, which holds nothing: the engine's start-up recovery (every pending workflow of the
    # launching executor, whatever its run) finds nothing, and the run is recovered alone below
    with _run_lock(url, run_id):
        open_database(url, executor_id=process_executor(run_id), queues=[], recovering=run_id)
        dbos = dbos_engine._dbos()
        found = await dbos.DBOS.list_workflows_async(workflow_ids=[run_id])
        if not found or found[0].name != dbos_engine.RUN_WORKFLOW:
            raise InputError(f"no durable run {run_id!r} in {_safe(url)}")
        check_readable(run_id, await dbos.DBOS.list_workflows_async(workflow_id_prefix=run_id))
        status = found[0]
        if status.status in ("PENDING", "ENQUEUED"):
            await asyncio.to_thread(dbos_engine.recover_run, run_id)
            if on_waiting is not None:
                family = await dbos.DBOS.list_workflows_async(workflow_id_prefix=run_id)
                family = [
                    w
                    for w in family
                    if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")
                ]
                with reading(run_id):
                    on_waiting(await _questions(run_id, family))
        handle = await dbos.DBOS.retrieve_workflow_async(run_id)
        # a fleet run (units held by workers): recover those of a worker that is gone, now and
        # whenever one dies while this process waits
        out = await _outcome(handle, watch=(url, run_id))
    return _result(out, result_cls)


@_on_engine
async def work(
    url: str, name: str, *, sinks: list[Any] | None = None, telemetry: Any = None
) -> None:
    """Be a worker of the fleet on ``url`` until cancelled: take units and runs from every
    queue; the pending work of an earlier worker named ``name`` is resumed first.
    ``telemetry``: export the spans of the units it runs, each into its run's trace."""
    from agentflow.runtime.durable import dbos_engine
    from agentflow.runtime.durable.liveness import worker_lock

    with _process_telemetry(sinks, telemetry) as process_sinks:
        dbos_engine.set_process_sinks(process_sinks)
        try:
            # the worker's liveness lock, held from before it takes any unit until its process
            # ends: while it is held nobody recovers its units (liveness.py)
            with worker_lock(url, name):
                try:
                    open_database(url, executor_id=f"worker:{name}", queues=None)
                    await asyncio.Event().wait()
                finally:  # the engine stops before the lock goes: no unit runs unguarded
                    dbos_engine.shutdown()
        finally:
            dbos_engine.set_process_sinks([])


# ---------------------------------------------------------------------------------------------
# Reuse and redrive: one table of an earlier run's results


async def reuse_table(run_id: str, *, asks: bool = True) -> dict[str, tuple[str, Any]]:
    """``{operation name: (input digest, value)}`` of every step run ``run_id`` (and its child
    units) finished without error: what ``--reuse`` and ``redrive`` may take.  ``asks``: its
    answered questions too (``--ask-again``: False, every question is asked again)."""
    from agentflow.runtime.durable.dbos_engine import query_items, query_steps, query_workflows

    runs = await query_workflows(workflow_id_prefix=run_id, load_input=False, load_output=False)
    table: dict[str, tuple[str, Any]] = {}
    ids = [w.workflow_id for w in runs if w.workflow_id == run_id or
           w.workflow_id.startswith(run_id + "/")]  # fmt: skip
    if run_id not in ids:
        raise InputError(f"no durable run {run_id!r} to reuse")
    for wfid in ids:
        for step in [*await query_steps(wfid), *await query_items(wfid)]:
            out = step.get("output")
            reason = unreadable(out, step.get("error"))
            if reason is not None:
                raise unreadable_error(run_id, reason)
            if step.get("error") is None and isinstance(out, dict) and "d" in out and "v" in out:
                table.setdefault(step["function_name"], (out["d"], out["v"]))
    if not asks:
        table = {k: v for k, v in table.items() if "/ask#" not in k and not k.startswith("ask#")}
    return table


# ---------------------------------------------------------------------------------------------
# Inspection


async def _questions(run_id: str, workflows: list[Any]) -> list[Question]:
    from agentflow.runtime.durable.dbos_engine import _dbos

    dbos = _dbos()
    out = []
    for w in workflows:
        if w.status not in ("PENDING", "ENQUEUED"):
            continue
        events = await dbos.DBOS.get_all_events_async(w.workflow_id)
        out.extend(published_questions(run_id, w.workflow_id, events))
    return out


def _status(w: Any, alive: bool) -> str:
    if w.status == "SUCCESS":
        out = w.output if isinstance(w.output, dict) else {}
        return str(out.get("status") or "ok")
    if w.status == "ERROR":
        return "error"
    if w.status == "CANCELLED":
        return "cancelled"
    if w.status in ("PENDING", "ENQUEUED"):
        return "running" if alive else "stopped"
    return str(w.status).lower()


def _alive(url: str, run_id: str) -> bool:
    """True when a process holds the run's lock (SQLite); always True without locks."""
    path = _lock_path(url, run_id)
    if path is None or not path.exists():
        return path is None
    import fcntl

    with path.open("a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


@_on_engine
async def list_runs(url: str, *, limit: int = 50) -> list[RunInfo]:
    """The latest ``limit`` durable runs in ``url``, newest first, with pending questions
    (none, and nothing created, for a SQLite file that does not exist)."""
    from agentflow.runtime.durable.dbos_engine import RUN_WORKFLOW, _dbos, _state

    if _state["url"] != url and missing_database(url) is not None:
        return []
    _attach(url)
    dbos = _dbos()
    roots = await dbos.DBOS.list_workflows_async(
        name=RUN_WORKFLOW, limit=limit, sort_desc=True, load_input=True, load_output=True
    )
    out = []
    for w in roots:
        alive = _alive(url, w.workflow_id)
        # a run with a row that cannot be read is listed as such; the others as usual
        reason = unreadable(w.input, w.output, w.error)
        if reason is None:
            info = _info(w, alive)
            if w.status in ("PENDING", "ENQUEUED"):
                family = await dbos.DBOS.list_workflows_async(workflow_id_prefix=w.workflow_id)
                try:
                    info.questions = await _questions(w.workflow_id, family)
                except UnreadableRecord as e:
                    reason = str(e)
                if info.questions and info.status == "running":
                    info.status = "waiting"
        if reason is not None:
            info = RunInfo(
                w.workflow_id, "unreadable", "", (w.created_at or 0) / 1000.0,
                (w.updated_at or 0) / 1000.0,
                unreadable=str(unreadable_error(w.workflow_id, reason)),
            )  # fmt: skip
        out.append(info)
    return out


def _info(w: Any, alive: bool) -> RunInfo:
    spec = w.input["args"][0] if w.input and w.input.get("args") else {}
    plan_name = ""
    text = spec.get("plan_text") if isinstance(spec, dict) else None
    if isinstance(text, str):
        for line in text.splitlines():
            if line.startswith("name:"):
                plan_name = line.split(":", 1)[1].strip()
                break
    output = w.output if isinstance(w.output, dict) else {}
    return RunInfo(
        run_id=w.workflow_id,
        status=_status(w, alive),
        plan=plan_name,
        created_at=(w.created_at or 0) / 1000.0,
        updated_at=(w.updated_at or 0) / 1000.0,
        error=output.get("error") if output else (_error_text(w.error) if w.error else None),
        output=output.get("output") if output else None,
    )


def _error_text(error: Any) -> dict[str, Any]:
    if isinstance(error, RunError):
        return error.to_dict()
    # not a step's failure: the engine's own (a workflow that raised outside any step)
    return {"code": "failed", "message": str(error), "step_path": None}


@_on_engine
async def show_run(
    url: str, run_id: str, *, internals: bool = False, values: bool = False
) -> RunInfo:
    """Run ``run_id`` in detail: its steps in the user's terms (each recorded tool call, model
    call and question: unit, step path, `.flow` label, status, start and end), the count of the
    engine's own operations left out (``internals``: listed too, marked ``internal``), the cost
    of its model calls so far, pending questions, the error, and for a ``--fleet`` run which
    worker holds which unfinished unit and whether that worker is alive.  Raises
    InputError for an unknown run, or one with a row it cannot read.  ``values``: each step
    also carries its recorded result as JSON (``value``: a tool's result, a model's reply, an
    answer), what ``flowc ui`` shows of an agent's conversation."""
    from agentflow.runtime.durable.dbos_engine import _dbos

    _attach(url, run_id)
    dbos = _dbos()
    family = await dbos.DBOS.list_workflows_async(
        workflow_id_prefix=run_id, load_input=True, load_output=True
    )
    root = next((w for w in family if w.workflow_id == run_id), None)
    if root is None:
        raise InputError(f"no durable run {run_id!r} in {_safe(url)}")
    family = [
        w for w in family if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")
    ]
    check_readable(run_id, family)
    with reading(run_id):
        return await _show_run(url, run_id, root, family, internals, values)


async def _show_run(
    url: str, run_id: str, root: Any, family: list[Any], internals: bool, values: bool = False
) -> RunInfo:
    from agentflow.runtime.durable.dbos_engine import _dbos, query_items
    from agentflow.runtime.durable.shown import Labels, parse_operation

    dbos = _dbos()
    info = _info(root, _alive(url, run_id))
    spec = _spec_of(root)
    labels = Labels(_plan_of(spec))
    cost: dict[str, Any] = {"inferences": 0, "input_tokens": 0, "output_tokens": 0}
    priced = 0.0
    for w in family:
        unit = w.workflow_id[len(run_id) :].lstrip("/") or "(run)"
        steps = await dbos.DBOS.list_workflow_steps_async(w.workflow_id)
        steps += await query_items(w.workflow_id)  # one-call units' records (items.py)
        for step in steps:
            name = step["function_name"]
            error = step.get("error")
            out = step.get("output")
            reason = unreadable(out, error)
            if reason is not None:
                raise unreadable_error(run_id, reason)
            op = parse_operation(name)
            if op is None:
                info.internal += 1
                if not internals:
                    continue
            entry: dict[str, Any] = {
                "unit": unit,
                "operation": name,
                "status": "error" if error is not None else "done",
                "started_at": _seconds(step.get("started_at_epoch_ms")),
                "finished_at": _seconds(step.get("completed_at_epoch_ms")),
            }
            if op is None:
                entry["internal"] = True
            else:
                entry.update(path=op.path, kind=op.title(), label=labels.label(op.path))
            if error is not None:
                entry["error"] = _error_text(error)
            value = out.get("v") if isinstance(out, dict) else None
            if "/model:" in name and value is not None and not out.get("reused"):
                usage = getattr(value, "usage", None) or {}
                cost["inferences"] += 1
                cost["input_tokens"] += int(usage.get("input_tokens", 0) or 0)
                cost["output_tokens"] += int(usage.get("output_tokens", 0) or 0)
                if getattr(value, "cost", None) is not None:
                    priced += float(value.cost)
            if isinstance(out, dict) and out.get("reused"):
                entry["reused"] = True
            if values and op is not None and value is not None:
                entry["value"] = _json_of(value)
            info.steps.append(entry)
        if any(s["function_name"] == "DBOS.setEvent" for s in steps):
            info.steps.extend(await _unanswered(w.workflow_id, unit, labels))
    # in the order they started, across units (map items, branches); stable: record order
    info.steps.sort(key=lambda e: e["started_at"] or float("inf"))
    if priced:
        cost["cost"] = round(priced, 10)
    info.cost = cost
    if root.status in ("PENDING", "ENQUEUED"):
        info.questions = await _questions(run_id, family)
        if info.questions and info.status == "running":
            info.status = "waiting"
        if isinstance(spec, dict) and spec.get("fleet"):
            info.workers = await _holders(url, run_id, family)
    return info


def _json_of(value: Any) -> Any:
    """A recorded value as JSON data (a model's reply, a dataclass, is its fields)."""
    import dataclasses
    import json

    def plain(o: Any) -> Any:
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}
        if hasattr(o, "to_list"):  # a range
            return o.to_list()
        if isinstance(o, bytes):
            return o.decode("utf-8", "replace")
        if isinstance(o, set | frozenset):
            return sorted(o, key=repr)
        return str(o)

    return json.loads(json.dumps(value, default=plain))


def _seconds(epoch_ms: Any) -> float | None:
    return epoch_ms / 1000.0 if isinstance(epoch_ms, (int, float)) and epoch_ms else None


def _spec_of(w: Any) -> dict[str, Any]:
    """The recorded input (``run_durable``'s spec) of a run's root workflow ``w``."""
    args = w.input.get("args") if isinstance(w.input, dict) else None
    return args[0] if args and isinstance(args[0], dict) else {}


def _plan_of(spec: dict[str, Any]) -> Plan | None:
    """The plan recorded in ``spec``, or None when it no longer loads."""
    from agentflow.ir.loader import load_plan_text

    text = spec.get("plan_text")
    if not isinstance(text, str):
        return None
    try:
        return load_plan_text(text, spec.get("plan_file") or "<durable>")
    except Exception:  # noqa: BLE001 - names are a nicety: the paths still show
        return None


async def _unanswered(workflow_id: str, unit: str, labels: Any) -> list[dict[str, Any]]:
    """The questions unit ``workflow_id`` asked that went unanswered (its ``ask`` went on as
    after a timeout): they record no operation of the run's own, only their events."""
    from agentflow.runtime.durable.dbos_engine import _dbos

    events = await _dbos().DBOS.get_all_events_async(workflow_id)
    out = []
    for key, value in sorted(events.items()):
        if not key.startswith("question:") or not isinstance(value, dict):
            continue
        if value.get("answered") is not False:
            continue  # answered: its `ask#` operation shows; pending: under `waiting`
        path = str(value.get("path") or key[len("question:") :])
        out.append(
            {
                "unit": unit,
                "operation": f"{path}/ask",
                "status": "unanswered",
                "started_at": value.get("asked_at"),
                "finished_at": None,
                "path": path,
                "kind": "ask",
                "label": labels.label(path),
            }
        )
    return out


async def _holders(url: str, run_id: str, family: list[Any]) -> list[dict[str, Any]]:
    """Who holds the unfinished units of fleet run ``run_id``: one entry per executor (a
    worker ``worker:NAME`` — with ``alive`` from its liveness lock — or the run's own
    process), plus ``queued`` for units no worker has taken yet."""
    from agentflow.runtime.durable.liveness import worker_alive

    held: dict[str, list[str]] = {}
    queued: list[str] = []
    for w in family:
        if w.workflow_id == run_id:
            continue
        unit = w.workflow_id[len(run_id) + 1 :]
        if w.status == "ENQUEUED":
            queued.append(unit)
        elif w.status == "PENDING":
            held.setdefault(str(w.executor_id or ""), []).append(unit)
    out: list[dict[str, Any]] = []
    for executor, units in sorted(held.items()):
        entry: dict[str, Any] = {"executor": executor, "units": sorted(units)}
        if executor.startswith("worker:"):
            name = executor[len("worker:") :]
            entry["worker"] = name
            entry["alive"] = await asyncio.to_thread(worker_alive, url, name)
        out.append(entry)
    if queued:
        out.append({"executor": None, "queued": True, "units": sorted(queued)})
    return out


# ---------------------------------------------------------------------------------------------
# Answer, cancel


@_on_engine
async def answer(url: str, run_id: str, step: str, value: Any) -> Question:
    """Answer the question of run ``run_id`` at step path ``step`` with ``value`` (checked
    against the question's choices and schema), from any process.  Raises InputError for no
    such question or a value it does not accept."""
    from agentflow.runtime.durable.answers import claim, closed_message, refuse_closed
    from agentflow.runtime.durable.dbos_engine import _dbos

    _attach(url, run_id)
    dbos = _dbos()
    family = await dbos.DBOS.list_workflows_async(workflow_id_prefix=run_id)
    family = [
        w for w in family if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")
    ]
    if not family:
        raise InputError(f"no durable run {run_id!r} in {_safe(url)}")
    check_readable(run_id, family)
    with reading(run_id):
        pending = await _questions(run_id, family)
    question = next((q for q in pending if q.path == step), None)
    if question is None:
        await refuse_closed(run_id, [w.workflow_id for w in family], step)
        waiting = ", ".join(q.path for q in pending) or "none"
        raise InputError(f"run {run_id} has no question waiting at {step!r} (waiting: {waiting})")
    from agentflow.runtime.durable.answers import checked_answer

    value = checked_answer(question, value)
    closed = await claim(
        question.workflow_id, question.key, {"answer": value}, topic=f"answer:{step}"
    )
    if not closed.accepted:
        raise InputError(closed_message(run_id, step, closed))
    return question


@_on_engine
async def pending_questions(url: str, run_id: str) -> list[Question]:
    """The questions run ``run_id`` (and its child units) waits on now; none for a run that
    ended or does not exist."""
    from agentflow.runtime.durable.dbos_engine import _dbos

    if missing_database(url) is not None:
        return []
    _attach(url)
    family = await _dbos().DBOS.list_workflows_async(workflow_id_prefix=run_id)
    family = [
        w for w in family if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")
    ]
    check_readable(run_id, family)
    with reading(run_id):
        return await _questions(run_id, family)


@_on_engine
async def unanswered(url: str, run_id: str, step: str) -> Question:
    """Leave the question of run ``run_id`` at step path ``step`` unanswered: the ``ask``
    goes on as after its timeout (``when_unanswered`` decides).  Raises InputError for no such
    question."""
    from agentflow.runtime.durable.answers import UNANSWERED, claim, closed_message

    pending = await pending_questions(url, run_id)
    question = next((q for q in pending if q.path == step), None)
    if question is None:
        raise InputError(f"run {run_id} has no question waiting at {step!r}")

    closed = await claim(question.workflow_id, question.key, UNANSWERED, topic=f"answer:{step}")
    if not closed.accepted:
        raise InputError(closed_message(run_id, step, closed))
    return question


@_on_engine
async def cancel(url: str, run_id: str) -> None:
    """Cancel run ``run_id`` and its child units (each stops at its next operation). Raises
    InputError for an unknown run, and for one that has already ended (``ok``, ``error``,
    ``cancelled`` …), which cancelling would not change."""
    from agentflow.runtime.durable.dbos_engine import _dbos

    _attach(url, run_id)
    dbos = _dbos()
    family = await dbos.DBOS.list_workflows_async(workflow_id_prefix=run_id)
    ids = [w.workflow_id for w in family
           if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")]  # fmt: skip
    if run_id not in ids:
        raise InputError(f"no durable run {run_id!r} in {_safe(url)}")
    root = next(w for w in family if w.workflow_id == run_id)
    if root.status not in ("PENDING", "ENQUEUED"):
        raise InputError(
            f"run {run_id} has already ended ({_status(root, False)}): nothing to cancel"
        )
    for wfid in ids:
        with contextlib.suppress(Exception):
            await dbos.DBOS.cancel_workflow_async(wfid)


@_on_engine
async def recorded_spec(url: str, run_id: str, *, redrive: bool = False) -> dict[str, Any]:
    """The recorded input of run ``run_id`` (plan text, input, configuration path, …).
    ``redrive``: for ``flowc redrive``, which runs a run that did not succeed again: raises
    InputError for a run that ended ``ok`` or ``exited`` (``flowc run --reuse`` runs it again)
    and for one that has not ended, ``running`` or ``stopped`` (``flowc resume`` continues it;
    ``flowc cancel`` ends it, after which it may be redriven)."""
    from agentflow.runtime.durable.dbos_engine import query_workflows, recorded_input

    _attach(url, run_id)
    try:
        spec = await recorded_input(run_id)
    except RunError as e:
        raise InputError(e.message) from None
    if redrive:
        found = await query_workflows(workflow_ids=[run_id], load_input=False)
        status = _status(found[0], _alive(url, run_id)) if found else None
        if status in ("running", "stopped"):
            state = (
                "is still running"
                if status == "running"
                else "has not ended (its process stopped before it finished)"
            )
            raise InputError(
                f"run {run_id} {state}: nothing to redrive (redrive runs a run that ended "
                f"without success again); to continue it: flowc resume {run_id}; to give it up "
                f"and run it again from its finished steps: flowc cancel {run_id}, then flowc "
                f"redrive {run_id}"
            )
        if status in ("ok", "exited"):
            file = spec.get("plan_file") or "FILE"
            raise InputError(
                f"run {run_id} ended {status}: nothing to redrive (redrive runs a failed run "
                f"again); to run it again taking its finished steps: flowc run {file} --reuse "
                f"{run_id}"
            )
    return spec
