"""The embedding API: everything the CLI does, as documented Python functions.

- :func:`check` — parse and type-check a `.flow` file (docs/spec/LANGUAGE.md §9);
- :func:`compile_flow` — check and lower it to a plan (docs/spec/LANGUAGE.md §10);
- :func:`load` — a runnable :class:`~agentflow.ir.models.Plan` from a `.flow` or plan file;
- :func:`check_plan` — every problem of a plan file, tool names included, as diagnostics;
- :func:`run` / :func:`run_sync` — execute it (docs/spec/RUNTIME.md §1) and return a
  :class:`~agentflow.runtime.result.RunResult`;
- :func:`build_catalog` — the tool catalog of a configuration, its plans directory's `.flow`
  files compiled here (the runtime never calls the compiler: this module hands it ready plans
  or :func:`load` as the loader).

Errors in the user's files come back as :class:`agentflow.errors.FlowError` subclasses that name
file, line and column; nothing here prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentflow import api_commands
from agentflow.api_commands import *  # noqa: F403  # flowc's other commands: see its __all__
from agentflow.compiler.api import check_file, check_source, read_source
from agentflow.compiler.check_depth import too_deep_diagnostic
from agentflow.compiler.checker import CheckResult
from agentflow.core.diagnostics import COST_OVER_BUDGET, PLAN_TOO_DEEP, PLAN_UNREADABLE, Diagnostic
from agentflow.core.spans import Span
from agentflow.core.text import clean_json
from agentflow.errors import (
    CompileError,
    ConfigError,
    ContractError,
    FlowError,
    InputError,
    PlanLoadError,
)
from agentflow.grammar import ast

if TYPE_CHECKING:  # the plan models (pydantic) and the runtime load only when a plan is run
    from typing import Literal

    from agentflow.flowtest import TestReport
    from agentflow.ir.models import Plan
    from agentflow.runtime.config import Config
    from agentflow.runtime.events import Sink
    from agentflow.runtime.hooks import Hooks
    from agentflow.runtime.models.router import ModelRouter
    from agentflow.runtime.result import RunResult
    from agentflow.runtime.shape_cache import ShapeCache
    from agentflow.runtime.tools.catalog import Catalog

__all__ = [
    "CompileError",
    "CompiledFlow",
    "build_catalog",
    "check",
    "compile_checked",
    "compile_flow",
    "compile_source",
    "load",
    "run",
    "run_sync",
    "resume_run",
    "answer_run",
    "plan_text",
    "run_tests",
    "parse_input",
    "plan_needs_model",
    "graph",
    "report",
    "durable_database",
    "list_durable_runs",
    "show_durable_run",
    "recorded_run",
    "answer_durable",
    "missing_durable_database",
    "cancel_durable",
    "evaluate",
    "evaluate_async",
    "compare_eval",
    "eval_page",
    "eval_datasets_check",
    "cost_warnings",
    "check_source",
    "read_source",
    "list_tools",
    "ask_sync",
]
__all__ += api_commands.__all__


@dataclass
class CompiledFlow:
    """The result of :func:`compile_flow`: the plan as plain data and the check result
    (whose ``diagnostics`` may still hold warnings)."""

    plan: dict[str, Any]
    check: CheckResult
    file: str

    def to_yaml(self) -> str:
        """The plan as deterministic YAML (docs/spec/PLAN_IR.md §1; same input, same bytes)."""
        from agentflow.ir.dump import dump_plan

        return dump_plan(self.plan)

    def to_json(self) -> str:
        """The plan as JSON (keys in canonical order, 2-space indent)."""
        return json.dumps(self.plan, indent=2, ensure_ascii=False) + "\n"


def check(path: str | os.PathLike) -> CheckResult:
    """Parse and type-check the `.flow` file at ``path``.

    Never raises for the file's content (every problem is a diagnostic); raises ``OSError`` when
    the file cannot be read. The datasets its ``eval`` blocks name are checked too
    (:func:`eval_datasets_check`).
    """
    result = check_file(path)
    if result.ok and result.evals:
        result.diagnostics.extend(eval_datasets_check(result, str(path))[0])
    return result


def compile_source(text: str, file: str) -> CompiledFlow:
    """Check and lower `.flow` source text named ``file``.

    Raises :class:`CompileError` with every diagnostic when the program has errors; also when
    the lowered plan fails the runtime's structural validation (a compiler bug, reported rather
    than hidden): then each problem is an ``unsupported-construct`` diagnostic whose message
    starts with ``internal compiler error``, placed at the offending step's source.
    """
    return compile_checked(check_source(text, file), text, file)


def compile_checked(result: Any, text: str, file: str) -> CompiledFlow:
    """Lower a checked program (the :class:`~agentflow.compiler.checker.CheckResult` of
    ``text``, named ``file``) and validate the plan, as :func:`compile_source` does after its
    check (same errors); for a caller that has checked the source already."""
    from agentflow.compiler.lowering import LoweringError, lower
    from agentflow.ir.loader import load_plan_data

    if not result.ok:
        raise CompileError(result.errors, {file: text})
    try:
        data = lower(result, file=file)
    except LoweringError as e:
        diag = Diagnostic("unsupported-construct", e.message, e.span)
        raise CompileError([diag], {file: text}) from None
    try:
        load_plan_data(data, file)  # round trip: the compiled plan must validate
    except PlanLoadError as e:
        diags = [_plan_problem(p, data, file) for p in e.errors]
        raise CompileError(diags, {file: text}) from None
    return CompiledFlow(plan=data, check=result, file=file)


def _fspath(path: str | os.PathLike[Any] | None) -> str | None:
    """``path`` as a string (``os.fspath``), None kept."""
    return None if path is None else os.fspath(path)


def _plan_problem(problem: Diagnostic, plan: dict[str, Any], file: str) -> Diagnostic:
    """The ``unsupported-construct`` diagnostic for a compiled plan's load problem: a template
    deeper than the plan limit (``vocabulary.MAX_EXPR_DEPTH`` levels, e.g. a long member chain
    on a `let` that the lowering writes out in full) is the program's limit; anything else is
    an internal compiler error."""
    span = _problem_span(problem.message, plan, file)
    if problem.code == PLAN_TOO_DEEP:  # the check reports these first (compiler.check_depth)
        return too_deep_diagnostic(span)
    return Diagnostic(
        "unsupported-construct",
        f"internal compiler error: the compiled plan does not validate: {problem.message}",
        span,
        hint="this is a flowc bug; simplifying the expression may work around it",
    )


_STEP_PATH = re.compile(r"^(?:plans\.([A-Za-z0-9_]+)\.)?(steps\[\d+\](?:\.[A-Za-z0-9_]+|\[\d+\])*)")
_PATH_PART = re.compile(r"\.?([A-Za-z0-9_]+)|\[(\d+)\]")


def _problem_span(message: str, plan: dict[str, Any], file: str) -> Span:
    """The `.flow` position of a compiled plan's load problem: the ``meta.source`` of the
    innermost step on the value path its message starts with (``steps[3].input.do…`` /
    ``plans.<name>.steps[0]…``), as ``flowc check`` places it (compiler.check_depth), else
    line 1, column 1."""
    line = column = 1
    m = _STEP_PATH.match(message)
    if m:
        node: Any = (plan.get("plans") or {}).get(m.group(1)) if m.group(1) else plan
        for part in _PATH_PART.finditer(m.group(2)):
            try:
                node = node[part.group(1)] if part.group(1) else node[int(part.group(2))]
            except (KeyError, IndexError, TypeError):
                break
            meta = node.get("meta") if isinstance(node, dict) else None
            loc = Span.parse(meta.get("source")) if isinstance(meta, dict) else None
            if loc is not None:
                line, column = loc.line, loc.column
    return Span(file, line, column, line, column + 1)


def compile_flow(path: str | os.PathLike) -> CompiledFlow:
    """Check and lower the `.flow` file at ``path`` (see :func:`compile_source`)."""
    return compile_source(read_source(path), str(path))


def load(path: str | os.PathLike) -> Plan:
    """Load a runnable plan: a `.flow` file is compiled in memory, anything else is read as a
    YAML/JSON plan file.  Raises :class:`CompileError` or :class:`PlanLoadError`."""
    from agentflow.ir.loader import load_plan, load_plan_data

    p = Path(path)
    if p.suffix == ".flow":
        compiled = compile_flow(p)
        return load_plan_data(compiled.plan, str(p))
    return load_plan(p)


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


def check_plan(path: str | os.PathLike, *, config: Any = None) -> PlanCheck:
    """Every problem of the plan file at ``path`` in one run (``flowc plan validate``): its YAML,
    its structure and templates (docs/spec/PLAN_IR.md §1–6), and its tool names and ``tools``
    patterns against the catalog of ``config`` (a :class:`~agentflow.runtime.config.Config`, a
    flow.toml path, or None: the flow.toml found from the current directory;
    docs/spec/RUNTIME.md §4), together — without a problem hiding another, and without follow-up
    problems of one mistake.  A `.flow`
    file is compiled first; when it has errors, those are the diagnostics.

    Never raises for the plan's content (an unreadable file is a ``plan-unreadable``
    diagnostic); raises :class:`ConfigError` for a broken configuration and what
    :func:`build_catalog` raises for a broken plans directory.
    """
    from agentflow.ir.loader import check_plan_data, check_plan_text, read_plan_text
    from agentflow.runtime.config import Config, load_config
    from agentflow.runtime.tools.build import plan_tool_problems

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
            config = load_config(config)
        catalog = build_catalog(config, plan=plan)  # MCP servers are not connected
        diags = diags + plan_tool_problems(plan, catalog, config)
    return PlanCheck(sorted(diags, key=lambda d: d.sort_key()), {file: text})


def graph(
    target: str | os.PathLike | Plan,
    *,
    format: str = "mermaid",
    run: str | os.PathLike | Iterable[dict[str, Any]] | None = None,
) -> str:
    """The graph of a `.flow` file (compiled in memory), a plan file or a loaded plan, as
    Mermaid (``format="mermaid"``, a ``flowchart``) or Graphviz DOT (``"dot"``) text: stages,
    steps and their data dependencies, branches, maps with their concurrency, agents (alias or
    team member, contract type, tools), tools, ``require``/``verify`` checks, ``ask`` steps
    (docs/observability.md). ``run``: a ``--trace`` file (or its events) whose outcome colours
    the nodes (status, time, inferences, tokens).

    Raises :class:`CompileError`, :class:`PlanLoadError`, :class:`InputError` (an unreadable
    trace) or ValueError (an unknown format).
    """
    from agentflow.ir.graph import render
    from agentflow.ir.models import Plan

    plan = target if isinstance(target, Plan) else load(target)
    events = None
    if run is not None:
        if isinstance(run, str | os.PathLike):
            from agentflow.runtime.events import read_trace

            events = read_trace(os.fspath(run))
        else:
            events = list(run)
    return render(plan, format, events)


def report(
    trace: str | os.PathLike,
    *,
    plan: str | os.PathLike | Plan | None = None,
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
    from agentflow.runtime.events import read_trace
    from agentflow.runtime.report import build_report

    events = read_trace(os.fspath(trace))
    loaded, source_text, source_name = _report_plan(events, trace, plan)
    return build_report(
        events, plan=loaded, source=source_text, source_name=source_name, title=title
    )


def _report_plan(
    events: list[dict[str, Any]], trace: str | os.PathLike, plan: Any
) -> tuple[Plan | None, str | None, str | None]:
    """The plan of a report and its `.flow` text: ``plan`` when given (errors raised), else the
    file named by the trace's ``run_started`` (None when it cannot be found or loaded)."""
    from agentflow.ir.models import Plan

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


def build_catalog(config: Any = None, **kwargs: Any) -> Catalog:
    """The full tool catalog of ``config`` (builtins, user tools, the plans directory, MCP
    servers): :func:`agentflow.runtime.tools.build.build_catalog` with :func:`load` as the loader
    of the plans directory, so its `.flow` files are compiled (a broken one raises
    :class:`CompileError`).  ``kwargs`` as there (``plan``, ``entry_points``, ``plans``)."""
    from agentflow.runtime.tools.build import build_catalog as build

    kwargs.setdefault("load_plan", load)
    return build(config, **kwargs)


def parse_input(value: str | None) -> Any:
    """Parse a ``--input`` value: inline JSON, or ``@file.json``.  Raises :class:`InputError`."""
    if value is None:
        return {}
    if value.startswith("@"):
        file = value[1:]
        try:
            text = Path(file).read_text(encoding="utf-8")
        except OSError as e:
            raise InputError(f"{file}: cannot read input file: {e.strerror or e}") from None
        except UnicodeDecodeError as e:
            raise InputError(
                f"{file}: cannot read input file: not UTF-8 text (invalid byte at offset {e.start})"
            ) from None
        where = file
    else:
        text, where = value, "--input"
    from agentflow.runtime.extract import NonJsonNumber, loads_value

    try:
        return loads_value(text)
    except json.JSONDecodeError as e:
        raise InputError(
            f"{where}:{e.lineno}:{e.colno}: input is not valid JSON: {e.msg}"
        ) from None
    except NonJsonNumber as e:
        raise InputError(f"{where}: input is not valid JSON: {e.args[0]}") from None
    except ValueError as e:  # nested too deeply (loads_bounded)
        raise InputError(f"{where}: input is {e}") from None


_MODEL_STEPS = {"agent"}


def plan_needs_model(plan: Plan) -> bool:
    """True when running ``plan`` may call a model: an agent step, an ``infer`` gate, a verify
    judge or a solver finish, at any depth (sub-plans included)."""

    def visit(value: Any) -> bool:
        from agentflow.ir.models import Step

        if isinstance(value, Step):
            if value.tool_name in _MODEL_STEPS:
                return True
            return visit(value.input)
        if isinstance(value, dict):
            if "infer" in value or "judges" in value:
                return True
            return any(visit(v) for v in value.values())
        if isinstance(value, list):
            return any(visit(v) for v in value)
        return False

    if plan.finish is not None and plan.finish.mode == "solver":
        return True
    if any(visit(s) for s in plan.steps):
        return True
    return any(plan_needs_model(p) for p in (plan.plans or {}).values())


async def run(
    target: str | os.PathLike | Plan,
    input: Any = None,
    *,
    config: Config | str | os.PathLike | None = None,
    workspace: str | os.PathLike | None = None,
    trace: str | os.PathLike | None = None,
    sinks: Iterable[Sink] = (),
    hooks: Hooks | None = None,
    catalog: Catalog | None = None,
    router: ModelRouter | None = None,
    record: str | os.PathLike | None = None,
    replay: str | os.PathLike | None = None,
    shape_cache: ShapeCache | Literal[False] | None = None,
    on_partial: Callable[[str, Any], Any] | None = None,
    telemetry: bool | str | None = None,
    model: str | None = None,
    durable: bool = False,
    run_id: str | None = None,
    reuse: str | None = None,
    ask_again: bool = False,
    database: str | None = None,
    fleet: bool = False,
    on_start: Callable[[str], Any] | None = None,
) -> RunResult:
    """Run a `.flow` file, a plan file or a loaded :class:`Plan` and return its ``RunResult``.

    - ``config``: a :class:`agentflow.runtime.config.Config`, a path to ``flow.toml``, or None to
      find ``flow.toml`` from the current directory upwards (else the environment);
    - ``workspace``: the root the file tools are confined to (default: the current directory);
    - ``trace``: a JSON Lines file receiving every event;
    - ``sinks``: more event sinks (closed when the run ends); ``hooks``: the host's gate,
      on_tool_error and interlocutor (docs/spec/RUNTIME.md §7);
    - ``catalog`` / ``router``: override the tool catalog and the model router (embedding, tests);
    - ``record``: write every model exchange to this cassette (JSON Lines, no keys);
    - ``replay``: answer every model request from this cassette; needs no model configuration
      (a request not in it fails the step with ``replay_miss``).
    - ``model``: ``"test"`` (or ``"test:SEED"``, ``"test+tools"``, ``"test+tools:SEED"``) answers
      every agent with the built-in test model instead of the configured ones: values generated
      from each agent's contract, deterministic per seed, no network, no key (docs/models.md
      "The test model"). Raises :class:`ConfigError` for any other value.
    - ``shape_cache``: the :class:`~agentflow.runtime.shape_cache.ShapeCache` fed with the result
      shape of every successful tool call (default: the user's cache directory; ``False``: off).
    - ``on_partial``: ``fn(step_path, value)``, called with each typed partial answer of an agent
      step whose model streams (``stream = true``; docs/models.md "Streaming").
    - ``telemetry``: export the run as OpenTelemetry spans over OTLP/HTTP
      (docs/observability.md): an endpoint URL, ``True`` (the ``[telemetry]`` endpoint, else
      ``OTEL_EXPORTER_OTLP_ENDPOINT``, else ``http://127.0.0.1:4318``), ``False`` (off), or None
      (on when the configuration's ``[telemetry]`` table sets an endpoint). Needs the ``otel``
      extra; a host with its own TracerProvider passes
      ``sinks=[agentflow.runtime.telemetry.OtelSink(tracer_provider=…)]`` instead.

    - ``durable``: run it as a durable run (docs/durable.md): every tool call, model call,
      question and sleep is recorded in ``database`` (default ``[durable] database``), so a run
      whose process dies continues with :func:`resume_run` (``flowc resume``); ``run_id``:
      its id (default: a new one; ``on_start(run_id)`` is called once it is recorded, and
      ``result.run_id`` holds it); ``reuse``: an earlier run whose steps are taken where their
      step path and rendered input are unchanged, and its answered questions where their step
      path, text and choices are (``ask_again``: every question is asked again); ``fleet``:
      spread concurrent units and rate-limited model calls over the ``flowc worker``
      processes on the same database.

    The run itself is :func:`agentflow.runtime.executor.run_plan` with a
    :class:`~agentflow.runtime.context.RunContext` built from these.

    Raises :class:`ConfigError` before the first step when the plan needs a model and none is
    configured; :class:`InputError` when ``input`` does not match the plan's input schema;
    :class:`PlanLoadError` when a tool name or ``tools`` pattern does not resolve against the
    catalog (built by :func:`build_catalog` unless given; its MCP connections are closed when the
    run ends).
    """
    import asyncio  # the event loop only for a run: `flowc check` does without it

    # the slow part of a first call (importing the runtime, compiling a `.flow`, reading
    # flow.toml, building the catalog) runs on a worker thread: the caller's event loop is never
    # blocked by it (bench/loop_blocking.py measures the longest blocking slice); under
    # `run_sync` (runtime.interrupt.run, imported then) a signal meanwhile stops the run before
    # its first step, as one during a preparation on the loop did. Nothing of the runtime is
    # imported here, on the loop: without runtime.interrupt loaded there is no stop request.
    prepared = asyncio.to_thread(_prepare, target, config, catalog)
    interrupt = sys.modules.get("agentflow.runtime.interrupt")
    got: tuple[Plan, Config, Catalog | None] = await (
        interrupt.while_loading(prepared) if interrupt is not None else prepared
    )
    plan, config, built = got
    from agentflow.runtime.context import RunContext
    from agentflow.runtime.events import JsonlSink
    from agentflow.runtime.executor import run_plan
    from agentflow.runtime.hooks import Hooks
    from agentflow.runtime.tools.build import check_plan_arguments, check_plan_tools

    # what this call opens is closed on every way out, a failure before the run starts included
    # (MCP connections, HTTP pools; sinks only until the run owns them): one exit stack
    async with contextlib.AsyncExitStack() as stack:
        if catalog is None:
            catalog = built
        assert catalog is not None
        stack.push_async_callback(_closed, catalog.aclose)  # MCP connections, before or during
        # tool names and patterns, then literal arguments, before the run (RUNTIME.md §4)
        check_plan_tools(plan, catalog, config)
        await check_plan_arguments(plan, catalog)
        if router is None:
            router = _own_router(config, plan, model=model, replay=replay, record=record)
            stack.push_async_callback(_closed, router.aclose)  # the HTTP connection pools
        with contextlib.ExitStack() as early:  # sinks made here, closed if the run never starts
            all_sinks = list(sinks)
            if on_partial is not None:
                from agentflow.runtime.events import CallbackSink

                partial_sink = CallbackSink(
                    lambda event: on_partial(event.path, event.data.get("value"))
                )
                partial_sink.kinds = frozenset({"partial_output"})  # type: ignore[attr-defined]
                all_sinks.append(partial_sink)
            if telemetry or (telemetry is None and config.telemetry.active):
                from agentflow.runtime.telemetry import OtelSink, settings_from_config

                endpoint = telemetry if isinstance(telemetry, str) else None
                settings = settings_from_config(config, endpoint)
                if durable:
                    from agentflow.runtime.telemetry import durable_settings

                    settings = durable_settings(settings)
                otel = OtelSink(settings)
                early.callback(otel.close)
                all_sinks.append(otel)
            # every successful tool call feeds the shape cache (docs/spec/RUNTIME.md §9)
            if shape_cache is not False:
                from agentflow.runtime.shape_cache import ShapeCache, ShapeRecorder

                all_sinks.append(ShapeRecorder(shape_cache or ShapeCache()))
            if trace is not None:
                try:
                    jsonl = JsonlSink(os.fspath(trace))
                except OSError as e:
                    raise ConfigError(
                        f"{trace}: cannot write trace file: {e.strerror or e}"
                    ) from None
                early.callback(jsonl.close)
                all_sinks.append(jsonl)
            context = RunContext(
                catalog=catalog,
                router=router,
                config=config,
                workspace=Path(workspace) if workspace is not None else Path.cwd(),
                sinks=tuple(all_sinks),
                hooks=hooks or Hooks(),
            )
            early.pop_all()  # the run closes its sinks from here on
        if durable:
            return await _run_durable(
                target, plan, input, context, config,
                run_id=run_id, reuse=reuse, ask_again=ask_again, database=database, fleet=fleet,
                replay=replay, on_start=on_start, model=model,
            )  # fmt: skip
        return await run_plan(plan, input, context)
    raise AssertionError("unreachable")  # pragma: no cover - the stack does not swallow


def _prepare(
    target: str | os.PathLike | Plan, config: Config | str | os.PathLike | None, catalog: Any
) -> tuple[Plan, Config, Catalog | None]:
    """What :func:`run` does before its first await, on a worker thread: the runtime's modules
    imported, ``target`` loaded (a `.flow` compiled), the configuration read and, unless
    ``catalog`` is given, the catalog built (for a catalog built here whose run never starts,
    the MCP servers are not started yet: they connect on first use). Raises as :func:`load`,
    :func:`agentflow.runtime.config.load_config` and :func:`build_catalog` do."""
    # what a run imports on its first steps, imported here, off the event loop: the executor,
    # the agent loop, contract validation, the model layer, tool resolution, what closes the run
    import anyio  # noqa: F401

    import agentflow.ir.resolve  # noqa: F401
    import agentflow.runtime.agent  # noqa: F401
    import agentflow.runtime.executor  # noqa: F401
    import agentflow.runtime.extract  # noqa: F401
    import agentflow.runtime.models.budget  # noqa: F401
    import agentflow.runtime.models.cassette  # noqa: F401
    import agentflow.runtime.models.router  # noqa: F401
    import agentflow.runtime.tools.build  # noqa: F401
    from agentflow.ir.models import Plan
    from agentflow.runtime.config import Config, load_config

    plan = target if isinstance(target, Plan) else load(target)
    if not isinstance(config, Config):
        config = load_config(_fspath(config))
    return plan, config, build_catalog(config, plan=plan) if catalog is None else None


#: The longest a run waits for what it opened to close (an MCP server that will not stop is
#: terminated by the SDK's own client well within it), in seconds.
CLOSE_LIMIT_S = 15.0


async def _closed(close: Callable[[], Any]) -> None:
    """``await close()`` shielded from cancellation, within :data:`CLOSE_LIMIT_S`: a run that
    is cancelled — a task cancelled under an anyio cancel scope, as an MCP server's request
    handler is, is cancelled again at each await — still closes its MCP connections (their
    server processes end) and connection pools."""
    import anyio

    with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_LIMIT_S):
        await close()


def _own_router(config: Config, plan: Plan, *, model: str | None, replay: Any, record: Any) -> Any:
    """The model router :func:`run` makes when it is given none: the test model for ``model``,
    a replay of ``replay``, else the configured models (recording to ``record``). Raises
    :class:`ConfigError` for a bad ``model`` option, or a plan that needs a model when none is
    configured or its key is missing."""
    from agentflow.runtime.config import missing_key_message, no_model_message
    from agentflow.runtime.models.router import ModelRouter

    if model is not None:
        from agentflow.runtime.models.router import test_router
        from agentflow.runtime.models.test_model import parse_model_option

        try:
            seed, call_tools = parse_model_option(model)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return test_router(config, seed, call_tools=call_tools)
    if replay is not None:
        from agentflow.runtime.models.cassette import ReplayRouter

        return ReplayRouter(replay, config)
    if plan_needs_model(plan):
        if not config.has_model():
            raise ConfigError(no_model_message(config))
        missing = missing_key_message(config)
        if missing:
            raise ConfigError(missing)
    if record is not None:
        from agentflow.runtime.models.cassette import recording_router

        return recording_router(config, record)
    return ModelRouter(config)


def plan_text(target: str | os.PathLike | Plan) -> tuple[str, str]:
    """``(plan YAML text, file name)`` of a `.flow` file (compiled), a plan file or a loaded plan:
    the input a durable run records, so editing the file never changes a run in flight."""
    from agentflow.ir.dump import dump_plan
    from agentflow.ir.models import Plan

    if isinstance(target, Plan):
        return dump_plan(target), target.source_file or "<plan>"
    p = Path(target)
    if p.suffix == ".flow":
        return dump_plan(compile_flow(p).plan), str(p)
    return p.read_text(encoding="utf-8"), str(p)


async def _run_durable(
    target: Any, plan: Plan, input: Any, context: Any, config: Config, **kw: Any
) -> RunResult:
    from agentflow.ir.dump import dump_plan
    from agentflow.ir.loader import load_plan_text
    from agentflow.runtime.durable.dbos_engine import launched, shutdown
    from agentflow.runtime.durable.runs import database_for, run_durable

    if isinstance(target, str | os.PathLike) and Path(target).suffix != ".flow":
        # a plan file: its text as read again here, and the plan loaded from that very text
        text, file = plan_text(Path(target))
        recorded = load_plan_text(text, file)  # what a resumed process will load
    else:
        # a `.flow` (compiled once, by `_prepare`) or a loaded plan: its canonical YAML is
        # recorded for a resumed process, and the plan already loaded runs here — loading
        # that text again gives an equal plan (tests/runtime/durable: the round trip)
        text, recorded = dump_plan(plan), plan
        named = isinstance(target, str | os.PathLike)
        file = str(Path(target)) if named else plan.source_file or "<plan>"
    url = database_for(config, kw.pop("database"))
    replay = kw.pop("replay")
    model = kw.pop("model")
    own_engine = not launched()  # the engine is stopped again when this call started it
    try:
        run_id, result = await run_durable(
            recorded,
            text,
            input,
            context,
            url=url,
            plan_file=file,
            config_path=str(config.path) if config.path else None,
            replay=str(Path(replay).resolve()) if replay else None,
            model=model,
            **kw,
        )
    finally:
        if own_engine:
            shutdown()
    result.run_id = run_id
    return result


async def resume_run(
    run_id: str,
    *,
    config: Config | str | os.PathLike | None = None,
    database: str | None = None,
    trace: str | os.PathLike | None = None,
    telemetry: bool | str | None = None,
    sinks: Sequence[Sink] = (),
    on_waiting: Callable[[list[Any]], None] | None = None,
) -> RunResult:
    """Continue durable run ``run_id`` after its process stopped (docs/durable.md): recorded
    steps are replayed, the rest runs here; ``trace``: events are added to this file;
    ``telemetry``: as :func:`run`'s, the spans go into the run's recorded trace; ``sinks``:
    more event sinks (the console of ``flowc resume``); ``on_waiting(questions)``: called once
    with the questions the run already waits on.  What ``flowc resume`` does.  Raises
    :class:`InputError` for an unknown run or one still running."""
    from agentflow.runtime.config import Config, load_config
    from agentflow.runtime.durable.runs import database_for, resume
    from agentflow.runtime.events import JsonlSink
    from agentflow.runtime.telemetry import settings_for

    if not isinstance(config, Config):
        config = load_config(_fspath(config))
    settings = settings_for(config, telemetry)
    all_sinks: list[Any] = list(sinks)
    if trace is not None:
        all_sinks.append(JsonlSink(os.fspath(trace), append=True))
    result = await resume(
        database_for(config, database),
        run_id,
        sinks=all_sinks,
        telemetry=settings,
        on_waiting=on_waiting,
    )
    result.run_id = run_id
    return result


async def answer_run(
    run_id: str,
    step: str,
    value: Any,
    *,
    config: Config | str | os.PathLike | None = None,
    database: str | None = None,
) -> None:
    """Answer the question durable run ``run_id`` waits on at step path ``step`` with ``value``
    (a JSON text is parsed unless the question wants text), from any process.  Raises
    :class:`InputError` when no such question waits or the value breaks its choices/schema."""
    await answer_durable(durable_database(config=config, database=database), run_id, step, value)


def run_sync(
    target: str | os.PathLike | Plan,
    input: Any = None,
    *,
    config: Config | str | os.PathLike | None = None,
    workspace: str | os.PathLike | None = None,
    trace: str | os.PathLike | None = None,
    sinks: Iterable[Sink] = (),
    hooks: Hooks | None = None,
    catalog: Catalog | None = None,
    router: ModelRouter | None = None,
    record: str | os.PathLike | None = None,
    replay: str | os.PathLike | None = None,
    shape_cache: ShapeCache | Literal[False] | None = None,
    on_partial: Callable[[str, Any], Any] | None = None,
    telemetry: bool | str | None = None,
    model: str | None = None,
    durable: bool = False,
    run_id: str | None = None,
    reuse: str | None = None,
    ask_again: bool = False,
    database: str | None = None,
    fleet: bool = False,
    on_start: Callable[[str], Any] | None = None,
) -> RunResult:
    """:func:`run` for synchronous callers, with the same keyword options (each spelled out, so
    a misspelt one is a type error and a ``TypeError`` before anything runs): runs its own
    (stock asyncio) event loop with :func:`agentflow.runtime.interrupt.run`, where
    SIGINT/SIGTERM stop the run gracefully (:class:`agentflow.errors.Interrupted` carries the
    partial result)."""
    from agentflow.runtime.interrupt import run as run_loop

    return run_loop(
        run(
            target, input, config=config, workspace=workspace, trace=trace, sinks=sinks,
            hooks=hooks, catalog=catalog, router=router, record=record, replay=replay,
            shape_cache=shape_cache, on_partial=on_partial, telemetry=telemetry, model=model,
            durable=durable, run_id=run_id, reuse=reuse, ask_again=ask_again,
            database=database, fleet=fleet, on_start=on_start,
        )
    )  # fmt: skip


def gen_python(flow: str | os.PathLike, module: str | os.PathLike) -> str:
    """The text of the typed client module of the `.flow` file ``flow``, to be written at
    ``module`` (the module finds the flow relative to its own directory):
    docs/reference/python-clients.md.  Raises :class:`CompileError` when the program has
    errors, :class:`ContractError` when a type of its input, output or stages has no JSON form
    (an ``extern type``), ``OSError`` when ``flow`` cannot be read."""
    from agentflow.compiler.gen_python import generate_python  # tomllib, hashlib: flowc gen only

    text = read_source(flow)
    result = check_source(text, str(flow))
    if not result.ok:
        raise CompileError(result.errors, {str(flow): text})
    try:
        return generate_python(result, text, str(flow), str(module))
    except ContractError as e:
        raise ContractError(f"{flow}: {e}") from None


def run_tests(
    paths: str | os.PathLike | list[str | os.PathLike],
    pattern: str | None = None,
    fail_fast: bool = False,
    *,
    on_outcome: Callable[[Any], Any] | None = None,
    jobs: int = 1,
    cache: str | os.PathLike | None = None,
) -> TestReport:
    """Run the ``test`` blocks of the `.flow` files under ``paths`` (files or directories,
    searched recursively) hermetically and return a :class:`agentflow.flowtest.TestReport`
    (docs/reference/testing.md).

    Stubbed agents answer their stub, other agents the built-in test model (or the test's
    ``replay`` cassette); stubbed tools return (or fail with) their stub, other builtin file
    tools run in the file's directory, Python tools of ``[tools] modules`` run, and any other
    tool fails the test naming the stub to add; an httpx request to another machine fails the
    test that made it: no request leaves the process.
    ``pattern`` keeps the tests whose name contains it (or matches it as a glob);
    ``fail_fast`` stops after the first failure; ``on_outcome(outcome)`` is called as each test
    ends. A file that does not check is one failed outcome with its diagnostics; this function
    does not raise for mistakes in `.flow` files. Synchronous (it runs its own event loop).
    ``jobs``: tests run at once; ``cache``: a directory remembering passed tests, so an
    unchanged file's tests are reported as cached passes (``flowc test`` uses ``.flowc-cache``).
    """
    from agentflow.flowtest import run_tests as run_all

    return run_all(paths, pattern, fail_fast, on_outcome=on_outcome, jobs=jobs, cache=cache)


# ---------------------------------------------------------------------------------------------
# Durable runs seen from outside: what `flowc runs`, `flowc cancel` and `flowc ui` do


def durable_database(
    *, config: Config | str | os.PathLike | None = None, database: str | None = None
) -> str:
    """The URL of the durable runs database of ``config`` (``database``: a SQLite file or
    PostgreSQL URL given explicitly), as ``flowc runs --database`` resolves it (docs/durable.md).
    Raises :class:`ConfigError` for an unset ``${VAR}`` or an unknown kind of URL."""
    from agentflow.runtime.config import Config, load_config
    from agentflow.runtime.durable.runs import database_for

    if not isinstance(config, Config):
        config = load_config(_fspath(config))
    return database_for(config, database)


def missing_durable_database(url: str) -> Path | None:
    """The SQLite file of database ``url`` when it does not exist (nothing to list, and listing
    creates nothing), else None (``flowc runs``)."""
    from agentflow.runtime.durable.runs import missing_database

    return missing_database(url)


async def list_durable_runs(url: str, *, limit: int = 50) -> list[Any]:
    """The latest ``limit`` durable runs of database ``url`` (:func:`durable_database`), newest
    first: :class:`agentflow.runtime.durable.run_info.RunInfo` each (id, status, plan name, times in
    epoch seconds, waiting questions); none for a SQLite file that does not exist."""
    from agentflow.runtime.durable.runs import list_runs

    return await list_runs(url, limit=limit)


async def show_durable_run(
    url: str,
    run_id: str,
    *,
    values: bool = False,
    internals: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> Any:
    """Durable run ``run_id`` in detail (``flowc runs show``): a
    :class:`~agentflow.runtime.durable.run_info.RunInfo` with its steps in the `.flow`'s terms,
    cost so far, waiting questions (each with its JSON Schema and choices), error; ``values``:
    each step's recorded result too (a model's reply, a tool's result, an answer);
    ``internals``: the engine's own operations listed too (``flowc runs show --all``);
    ``limit``/``offset``: one page of the steps in start order (``steps_total`` counts them
    all; ``flowc runs show --limit/--offset``).  Raises :class:`InputError` for an unknown run
    or a negative count."""
    from agentflow.runtime.durable.runs import show_run

    return await show_run(
        url, run_id, values=values, internals=internals, limit=limit, offset=offset
    )


async def recorded_run(url: str, run_id: str, *, redrive: bool = False) -> dict[str, Any]:
    """What durable run ``run_id`` recorded when it started: ``plan_text``, ``plan_file``,
    ``input``, ``config``, ``workspace`` … (docs/durable.md).  Raises :class:`InputError` for
    an unknown run; ``redrive``: also for one ``flowc redrive`` refuses (it ended ok, or has
    not ended)."""
    from agentflow.runtime.durable.runs import recorded_spec

    return await recorded_spec(url, run_id, redrive=redrive)


async def answer_durable(url: str, run_id: str, step: str, value: Any) -> Any:
    """:func:`answer_run` on database ``url``: answer the question run ``run_id`` waits on at
    step path ``step`` (a text is parsed as JSON unless the question wants text, then checked
    against the question's type and choices, exactly as ``flowc answer``).  Returns the
    :class:`~agentflow.runtime.durable.run_info.Question`; raises :class:`InputError`."""
    from agentflow.runtime.durable.runs import answer

    return await answer(url, run_id, step, clean_json(value))


async def cancel_durable(url: str, run_id: str) -> None:
    """Cancel durable run ``run_id`` of database ``url`` and its units (``flowc cancel``).
    Raises :class:`InputError` for an unknown run or one that has already ended."""
    from agentflow.runtime.durable.runs import cancel

    await cancel(url, run_id)


# ---------------------------------------------------------------------------------- evals


async def evaluate_async(
    flow: str | os.PathLike,
    datasets: list[str | os.PathLike] | None = None,
    *,
    eval_name: str | None = None,
    config: Config | str | os.PathLike | None = None,
    workspace: str | os.PathLike | None = None,
    models: list[str] | None = None,
    model: str | None = None,
    replay: str | os.PathLike | None = None,
    repeat: int = 1,
    concurrency: int = 4,
    timeout: float | None = None,
    cache: str | os.PathLike | None = ".flowc-cache",
    on_run: Callable[[Any], Any] | None = None,
    telemetry: bool | str | None = None,
    tracer_provider: Any = None,
) -> Any:
    """Evaluate ``flow`` on its datasets and return an :class:`agentflow.evals.EvalReport`
    (docs/reference/evals.md).

    - ``datasets``: JSON Lines / YAML / JSON files of cases (default: the eval block's
      ``dataset`` files, relative to the `.flow`); ``eval_name``: the eval block (default: the
      only one);
    - ``config``: ``flow.toml`` (default: the one beside the `.flow`, else found from the current
      directory); ``workspace``: the file tools' root (default: the `.flow`'s directory);
    - ``models``: named models (``[models.named]``) to compare: every model call of the flow is
      answered by each in turn; ``model``: ``"test"`` (the test model, as ``flowc run --model
      test``); ``replay``: answer every request from a cassette;
    - ``repeat``: runs per case (variance, pass^k); ``concurrency``: case runs at once;
      ``timeout``: seconds a case run may take (then its status is ``timeout``);
    - ``cache``: the directory of the answer cache (``eval/`` below it; None: no cache);
    - ``on_run(case_run)``: called as each case run is scored;
    - ``telemetry``: as :func:`run`'s — export one ``eval`` span with a span per case run and,
      under each, the run's spans (docs/observability.md); ``tracer_provider``: a host's
      OpenTelemetry TracerProvider to export with instead (turns telemetry on).

    Never raises for a mistake in the `.flow` or a dataset: the report's ``diagnostics`` hold
    them and nothing runs (no model request is sent). Raises :class:`ConfigError` when the flow
    needs a model and none is configured (or a ``models`` name is unknown).
    """
    from agentflow.evals.report import EvalReport
    from agentflow.evals.runner import ResponseCache, prepare, run_eval
    from agentflow.runtime.config import Config, load_config, no_model_message

    if repeat < 1 or concurrency < 1:
        raise ConfigError("repeat and concurrency are at least 1")
    prepared = prepare(flow, [str(d) for d in datasets or []], eval_name)
    if not prepared.ok:
        return EvalReport(
            flow=str(flow),
            name=prepared.block.node.name if prepared.block is not None else (eval_name or ""),
            diagnostics=prepared.diagnostics,
            sources=prepared.sources,
        )
    here = Path(flow).parent
    if not isinstance(config, Config):
        if config is None and (here / "flow.toml").is_file():
            config = here / "flow.toml"
        config = load_config(_fspath(config))
    if model is None and replay is None:
        from agentflow.ir.loader import load_plan_data
        from agentflow.runtime.config import missing_key_message

        for name in models or []:
            config.resolve(name)  # an unknown name is a ConfigError now, not in every case
        judged = "judge" in prepared.block.kinds.values()
        if judged or plan_needs_model(load_plan_data(prepared.plan, str(flow))):
            if not models and not config.has_model():
                raise ConfigError(no_model_message(config))
            missing = missing_key_message(config)
            if missing:
                raise ConfigError(missing)
    from agentflow.evals.runner import EvalTrace
    from agentflow.runtime.telemetry import TelemetrySettings, settings_for

    settings = settings_for(config, telemetry) if telemetry is not False else None
    if settings is None and tracer_provider is not None:
        settings = TelemetrySettings()
    trace = None
    if settings is not None:
        trace = EvalTrace(settings, tracer_provider, prepared.block.node.name, str(flow))
    report = await run_eval(
        prepared,
        config=config,
        workspace=Path(workspace) if workspace is not None else here,
        models=models,
        model=model,
        replay=replay,
        repeat=repeat,
        concurrency=concurrency,
        timeout_s=timeout,
        cache=ResponseCache(Path(cache) / "eval") if cache is not None else None,
        on_run=on_run,
        trace=trace,
    )
    report.diagnostics = prepared.diagnostics  # warnings
    report.sources = prepared.sources
    return report


def evaluate(flow: str | os.PathLike, datasets: Any = None, **kwargs: Any) -> Any:
    """:func:`evaluate_async` for synchronous callers (``flowc eval``): its own event loop,
    where SIGINT/SIGTERM stop it gracefully."""
    from agentflow.runtime.interrupt import run as run_loop

    return run_loop(evaluate_async(flow, datasets, **kwargs))


def compare_eval(report: Any, baseline: str | os.PathLike) -> Any:
    """Compare an :class:`~agentflow.evals.EvalReport` with the ``--json`` file ``baseline``:
    an :class:`agentflow.evals.Comparison` (the cases whose scores changed, regressions and
    improvements, per-scorer deltas with a note on noise). Raises :class:`ConfigError` when the
    file cannot be read or is not an eval report."""
    from agentflow.evals.report import compare

    try:
        data = json.loads(Path(baseline).read_text(encoding="utf-8"))
        return compare(report, data)
    except OSError as e:
        raise ConfigError(f"{baseline}: cannot read the baseline: {e.strerror or e}") from None
    except ValueError as e:
        raise ConfigError(f"{baseline}: not a baseline: {e}") from None


def eval_page(report: Any, comparison: Any = None) -> str:
    """The HTML page of an eval (one self-contained file, the run report's look): the scorers'
    table, every case run with its scores, and one click from each its run's conversation."""
    from agentflow.evals.html import build_page

    return build_page(report, comparison)


def eval_datasets_check(result: CheckResult, file: str) -> tuple[list[Any], dict[str, str]]:
    """The problems of the datasets the ``eval`` blocks of the checked flow ``result`` (of the
    `.flow` ``file``) name, each at its line and column in the dataset (docs/reference/evals.md
    "Datasets"), and the datasets' texts by file name (for rendering). ``flowc check`` and
    :func:`check` report them; a block naming no dataset adds nothing."""
    from agentflow.evals.runner import dataset_diagnostics

    diagnostics: list[Any] = []
    sources: dict[str, str] = {}
    for block in result.evals:
        if block.node.datasets:
            _, found, texts = dataset_diagnostics(result, file, block, [])
            diagnostics.extend(found)
            sources.update(texts)
    return diagnostics, sources


def cost_warnings(plan: Plan, file: str, module: Any = None) -> list[Diagnostic]:
    """The ``cost-over-budget`` warnings of ``flowc cost`` for ``plan`` (read from ``file``):
    one per way the static worst case of model calls (:func:`agentflow.ir.cost.worst_case`)
    exceeds the plan's own run budget of inferences (:func:`agentflow.ir.cost.over_budget`).
    ``module``: the checked `.flow` AST (``CompiledFlow.check.module``), whose ``budget``
    declaration the warnings point at; else they point at the file.  docs/models.md
    "flowc cost"."""
    from agentflow.ir.cost import over_budget, worst_case

    found = over_budget(worst_case(plan), plan)
    decls = module.of(ast.BudgetDecl) if module is not None else []
    span = decls[0].span if decls else Span.at(file)
    return [Diagnostic(COST_OVER_BUDGET, m, span, hint=h) for m, h in found]


# ---------------------------------------------------------------------------------- flowc's other commands


def list_tools(
    config: Config | str | os.PathLike | None = None, *, connect: bool = True
) -> tuple[list[dict[str, Any]], list[str]]:
    """``(rows, errors)`` of the tool catalog of ``config`` (``flowc tools``;
    docs/reference/tools.md): a row ``{name, source, description, input_schema,
    output_schema, summary, kind}`` for every tool, sorted by name; with ``connect`` the MCP
    servers are started to list theirs (then closed), and a server that cannot be reached is one
    of ``errors``.  Raises ConfigError, CompileError (a broken `.flow` in the plans directory)."""
    from agentflow.runtime.config import Config, load_config
    from agentflow.runtime.interrupt import run as run_loop
    from agentflow.runtime.tools.build import list_catalog

    if not isinstance(config, Config):
        config = load_config(_fspath(config))
    return run_loop(list_catalog(build_catalog(config), connect=connect))


def ask_sync(
    question: str,
    *,
    config: Config | str | os.PathLike | None = None,
    workspace: str | os.PathLike | None = None,
    trace: str | os.PathLike | None = None,
    record: str | os.PathLike | None = None,
    replay: str | os.PathLike | None = None,
    max_iterations: int | None = None,
    on_progress: Callable[[str, str], Any] | None = None,
) -> Any:
    """``flowc ask``: answer ``question`` with the chat model and the configuration's whole tool
    catalog (plans directory compiled with :func:`load`), on its own event loop (SIGINT/SIGTERM
    stop it); docs/reference/python-api.md "Chat and planning".  Returns the ``AskResult``
    (``status``, ``answer``, ``error``, ``tools_called``, ``usage``); ``on_progress(kind,
    text)`` sees each tool call and report.  Raises ConfigError (no model configured)."""
    from agentflow.runtime.chat import ask_with_config
    from agentflow.runtime.interrupt import run as run_loop

    return run_loop(
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
        )
    )
