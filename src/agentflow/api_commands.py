"""The api functions behind flowc's other commands around a plan: ``flowc plan validate``
(:func:`check_plan`), ``flowc graph``, ``flowc report``, ``flowc tools`` and ``flowc ask``.
:mod:`agentflow.api` re-exports every public name here: ``flowc`` (``cli/``) reaches the rest of
the package only through ``agentflow.api`` (docs/ARCHITECTURE.md "The front door").

This module loads the runtime with the graph, the run report and the chat loop, which a run
does without (docs/decisions.md "The api split by what it loads").  Nothing here prints;
errors in the user's files come back as :class:`agentflow.errors.FlowError`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentflow.api_compile import _fspath, compile_source, load
from agentflow.api_run import build_catalog
from agentflow.compiler.api import read_source
from agentflow.core.diagnostics import PLAN_UNREADABLE, Diagnostic
from agentflow.core.spans import Span
from agentflow.core.text import visible
from agentflow.errors import CompileError, ConfigError, FlowError, InputError, PlanLoadError
from agentflow.ir.graph import render
from agentflow.ir.loader import check_plan_data, check_plan_text, read_plan_text
from agentflow.ir.models import Plan
from agentflow.runtime import interrupt
from agentflow.runtime.chat import AskProgress, AskResult, ask_with_config, test_model_router
from agentflow.runtime.config import Config, missing_key_message, no_model_message
from agentflow.runtime.config import load_config as read_config
from agentflow.runtime.context import RunContext
from agentflow.runtime.durable.dbos_engine import launched, shutdown
from agentflow.runtime.durable.runs import ask_durable, ask_result, database_for
from agentflow.runtime.events import JsonlSink, read_trace
from agentflow.runtime.models.router import ModelRouter
from agentflow.runtime.report import build_report
from agentflow.runtime.run_index import remember as remember_run
from agentflow.runtime.tools.build import list_catalog, plan_load_problems

__all__ = [
    "PlanCheck",
    "ask_progress_sink",
    "ask_sync",
    "check_plan",
    "durable_ask_result",
    "graph",
    "list_tools",
    "report",
]


@dataclass
class PlanCheck:
    """The result of :func:`check_plan`: ``diagnostics`` (every problem, sorted by position; the
    ``plan-*`` codes of docs/diagnostics.md, or a `.flow` file's own) and ``sources`` (file →
    text, for the renderers' source excerpts)."""

    diagnostics: list[Diagnostic]
    sources: dict[str, str]

    @property
    def ok(self) -> bool:
        """True when no diagnostic is an error."""
        return not any(d.is_error for d in self.diagnostics)


def check_plan(path: str | os.PathLike[str], *, config: Any = None) -> PlanCheck:
    """Every problem of the plan file at ``path`` in one run (``flowc plan validate``): its YAML,
    its structure and templates (docs/spec/PLAN_IR.md §1–6), and the load-time checks
    ``flowc run`` makes (:func:`agentflow.runtime.tools.build.plan_load_problems`: tool names,
    ``tools`` patterns and literal tool arguments) against the catalog of ``config`` (a
    :class:`~agentflow.runtime.config.Config`, a flow.toml path, or None: the nearest flow.toml
    from the plan file's directory upward, docs/reference/configuration.md "Which flow.toml";
    MCP servers are not connected, so their tools' arguments are left to the run;
    docs/spec/RUNTIME.md §4), together — without a problem hiding another, and without follow-up
    problems of one mistake.  A `.flow`
    file is compiled first; when it has errors, those are the diagnostics.

    Never raises for the plan's content (an unreadable file is a ``plan-unreadable``
    diagnostic); raises :class:`ConfigError` for a broken configuration and what
    :func:`build_catalog` raises for a broken plans directory.
    """
    file = str(path)
    if Path(path).suffix == ".flow":
        try:
            text = read_source(path)
        except OSError as e:
            why = f"cannot read: {e.strerror or e}"
            return PlanCheck([Diagnostic(PLAN_UNREADABLE, why, Span.at(file))], {})
        try:
            compiled = compile_source(text, file)
        except CompileError as e:
            return PlanCheck(e.diagnostics, e.sources)
        plan, diags = check_plan_data(compiled.plan, file)
    else:
        try:
            text = read_plan_text(os.fspath(path))
        except PlanLoadError as e:
            return PlanCheck(e.diagnostics, {})
        plan, diags = check_plan_text(text, file)
    if plan is not None:
        if not isinstance(config, Config):
            config = read_config(config, near=file)
        catalog = build_catalog(config, plan=plan)  # MCP servers are not connected
        diags = diags + plan_load_problems(plan, catalog, config)
    return PlanCheck(sorted(diags, key=lambda d: d.sort_key()), {file: text})


def graph(
    target: str | os.PathLike[str] | Plan,
    *,
    format: str = "mermaid",
    run: str | os.PathLike[str] | Iterable[dict[str, Any]] | None = None,
) -> str:
    """The graph of a `.flow` file (compiled in memory), a plan file or a loaded plan, as
    Mermaid (``format="mermaid"``, a ``flowchart``) or Graphviz DOT (``"dot"``) text: stages,
    steps and their data dependencies, branches, maps with their concurrency, agents (alias or
    team member, contract type, tools), tools, ``require``/``verify`` checks, ``ask`` steps
    (docs/observability.md). ``run``: a ``--trace`` file (or its events) whose outcome colours
    the nodes (status, time, inferences, tokens).

    Raises :class:`CompileError`, :class:`PlanLoadError`, :class:`InputError` (an unreadable
    trace, or one of another plan's run) or ValueError (an unknown format).
    """
    plan = target if isinstance(target, Plan) else load(target)
    events = None
    if run is not None:
        if isinstance(run, str | os.PathLike):
            events = read_trace(os.fspath(run))
        else:
            events = list(run)
        _refuse_another_plans_run(events, plan)
    return render(plan, format, events)


def _refuse_another_plans_run(events: list[dict[str, Any]], plan: Plan) -> None:
    """Raise :class:`InputError` when ``events`` are a run of another plan than ``plan`` (its
    top-level ``run_started`` names another): none of its steps would be this plan's, and the
    graph would show every node skipped without a word (break14)."""
    started = next(
        (e for e in events if e.get("kind") == "run_started" and len(e.get("stack") or []) <= 1),
        None,
    )
    data = started.get("data") if started is not None else None
    ran = data.get("plan") if isinstance(data, dict) else None
    if isinstance(ran, str) and ran and ran != plan.name:
        file = data.get("file") if isinstance(data, dict) else None
        where = f" ({visible(file)})" if isinstance(file, str) and file else ""
        raise InputError(
            f"the trace is a run of `{visible(ran)}`{where}, not of `{visible(plan.name)}`: "
            "give the flow or plan that ran"
        )


def report(
    trace: str | os.PathLike[str],
    *,
    plan: str | os.PathLike[str] | Plan | None = None,
    title: str | None = None,
) -> str:
    """A self-contained HTML report of the run recorded in ``trace`` (a ``--trace`` file): the
    flow's graph coloured by outcome with each step's status, time, inferences and cost; a
    timeline of steps, model calls and tool calls (map items side by side); each agent's
    conversation round by round with its tool calls and contract check; the output; errors with
    their `.flow` location (docs/observability.md). Needs no network to open.

    ``plan``: the `.flow` or plan file that ran (default: the file the trace names, looked up as
    given, then beside the trace); without one the graph is left out.

    Raises :class:`InputError` for an unreadable trace, :class:`CompileError` /
    :class:`PlanLoadError` for a ``plan`` given explicitly that does not load.
    """
    events = read_trace(os.fspath(trace))
    loaded, source_text, source_name = _report_plan(events, trace, plan)
    return build_report(
        events, plan=loaded, source=source_text, source_name=source_name, title=title
    )


def _report_plan(
    events: list[dict[str, Any]], trace: str | os.PathLike[str], plan: Any
) -> tuple[Plan | None, str | None, str | None]:
    """The plan of a report and its `.flow` text: ``plan`` when given (errors raised), else the
    file named by the trace's ``run_started`` (None when it cannot be found or loaded)."""
    if isinstance(plan, Plan):
        return plan, None, None
    candidates: list[Path] = []
    if plan is not None:
        candidates = [Path(plan)]
    else:
        named = next(
            (e["data"].get("file") for e in events if e.get("kind") == "run_started"), None
        )
        if isinstance(named, str) and named:
            candidates = [Path(named), Path(trace).parent / Path(named).name]
    for candidate in candidates:
        if not candidate.is_file():
            continue
        try:
            loaded = load(candidate)
        except FlowError:
            if plan is not None:
                raise
            return None, None, None
        text = None
        if candidate.suffix == ".flow":
            try:
                text = read_source(candidate)
            except OSError:
                text = None
        return loaded, text, candidate.name
    if plan is not None:
        raise InputError(f"{plan}: no such file")
    return None, None, None


def list_tools(
    config: Config | str | os.PathLike[str] | None = None, *, connect: bool = True
) -> tuple[list[dict[str, Any]], list[str]]:
    """``(rows, errors)`` of the tool catalog of ``config`` (``flowc tools``;
    docs/reference/tools.md): a row ``{name, source, description, input_schema,
    output_schema, summary, kind}`` for every tool, sorted by name; with ``connect`` the MCP
    servers are started to list theirs (then closed), and a server that cannot be reached is one
    of ``errors``.  Raises ConfigError, CompileError (a broken `.flow` in the plans directory)."""
    if not isinstance(config, Config):
        config = read_config(_fspath(config))
    return interrupt.run(list_catalog(build_catalog(config), connect=connect))


def ask_sync(
    question: str,
    *,
    config: Config | str | os.PathLike[str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
    trace: str | os.PathLike[str] | None = None,
    record: str | os.PathLike[str] | None = None,
    replay: str | os.PathLike[str] | None = None,
    max_iterations: int | None = None,
    on_progress: Callable[[str, str], Any] | None = None,
    durable: bool = False,
    database: str | None = None,
    run_id: str | None = None,
    on_start: Callable[[str], Any] | None = None,
    model: str | None = None,
) -> Any:
    """``flowc ask``: answer ``question`` with the chat model and the configuration's whole tool
    catalog (plans directory compiled with :func:`load`), on its own event loop (SIGINT/SIGTERM
    stop it); docs/reference/python-api.md "Chat and planning".  Returns the ``AskResult``
    (``status``, ``answer``, ``error``, ``tools_called``, ``usage``); ``on_progress(kind,
    text)`` sees each tool call and report.

    ``durable`` (implied by ``database`` or ``run_id``): the question is durable run ``run_id``
    (default: a new id) in ``database`` (default ``[durable] database``; DBOS or Temporal),
    ``on_start(run_id)`` called once it is recorded, and ``AskResult.run_id`` set: its model and
    tool calls are recorded, and ``flowc resume`` finishes a question whose process stopped
    without repeating a finished one (docs/durable.md "Durable questions").

    ``model``: ``"test"`` (``"test:SEED"``, ``"test+tools"``, ``"test+tools:SEED"``) answers
    with the built-in test model instead of the configured ones, as :func:`agentflow.api.run`'s
    (no network, no key; a durable question records it, and a resume answers with it again).

    Raises ConfigError (no model configured, a broken configuration or database, a ``model``
    that is not the test model), InputError
    (``durable`` with ``record``/``replay``: a durable question is replayed by ``flowc resume``,
    from its own records)."""
    if durable or database is not None or run_id is not None:
        if record is not None or replay is not None:
            raise InputError(
                "a durable question (--durable) cannot be recorded or replayed with a cassette "
                "(--record/--replay): its model calls are recorded on the durable engine, and "
                "`flowc resume RUN` replays them"
            )
        return interrupt.run(
            _ask_durable(
                question,
                config=config,
                workspace=_fspath(workspace),
                trace=_fspath(trace),
                max_iterations=max_iterations,
                on_progress=on_progress,
                database=database,
                run_id=run_id,
                on_start=on_start,
                model=model,
            )
        )
    return interrupt.run(
        ask_with_config(
            question,
            config=os.fspath(config) if isinstance(config, os.PathLike) else config,
            workspace=_fspath(workspace),
            trace=_fspath(trace),
            record=_fspath(record),
            replay=_fspath(replay),
            max_iterations=max_iterations,
            on_progress=on_progress,
            load_plan=load,
            model=model,
        )
    )


async def _ask_durable(
    question: str,
    *,
    config: Config | str | os.PathLike[str] | None,
    workspace: str | None,
    trace: str | None,
    max_iterations: int | None,
    on_progress: Callable[[str, str], Any] | None,
    database: str | None,
    run_id: str | None,
    on_start: Callable[[str], Any] | None,
    model: str | None = None,
) -> AskResult:
    """:func:`ask_sync` with ``durable``: the context built as ``flowc ask`` builds it (the
    whole catalog, the configured models), the question run by
    :func:`agentflow.runtime.durable.runs.ask_durable`; closes what it opened."""
    if not isinstance(config, Config):
        config = read_config(_fspath(config))
    router: ModelRouter
    if model is not None:
        router = test_model_router(config, model)
    elif not config.has_model():
        raise ConfigError(no_model_message(config, "chat"))
    elif (missing := missing_key_message(config, ("chat", "planner", "solver"))) is not None:
        raise ConfigError(missing)
    else:
        router = ModelRouter(config)
    url = database_for(config, database)  # a mistake in [durable] is said before anything opens
    catalog = build_catalog(config)
    trace_sink = JsonlSink(trace) if trace is not None else None
    sinks: list[Any] = [trace_sink] if trace_sink is not None else []
    if on_progress is not None:
        sinks.append(AskProgress(on_progress))
    context = RunContext(
        catalog=catalog,
        router=router,
        config=config,
        workspace=Path(workspace) if workspace is not None else Path.cwd(),
        sinks=tuple(sinks),
    )
    own_engine = not launched()  # the engine is stopped again when this call started it
    started = on_start

    def remembered(rid: str) -> None:  # found from any directory (run_index.py)
        remember_run(rid, url, config.path, own=database is not None)
        if started is not None:
            started(rid)

    try:
        rid, result = await ask_durable(
            question,
            context,
            url=url,
            max_iterations=max_iterations,
            run_id=run_id,
            config_path=str(config.path) if config.path else None,
            on_start=remembered,
            model=model,
        )
    finally:
        if own_engine:
            shutdown()
        if trace_sink is not None:
            trace_sink.close()
        await catalog.aclose()
        await router.aclose()
    result.run_id = rid
    return ask_result(result)


def ask_progress_sink(on_progress: Callable[[str, str], Any]) -> AskProgress:
    """A sink that gives a durable question resumed by :func:`agentflow.api.resume_run` its
    progress callback ``on_progress(kind, text)`` (``flowc resume`` of a question prints what
    ``flowc ask`` prints: docs/durable.md "Durable questions"); it takes no event."""
    return AskProgress(on_progress)


def durable_ask_result(result: Any) -> AskResult:
    """The ``AskResult`` of a durable question's ``RunResult`` (what
    :func:`agentflow.api.resume_run` returns for a run of ``flowc ask --durable``):
    ``answer``, ``status``, ``error``, ``tools_called``; ``run_id`` kept."""
    return ask_result(result)
