"""The api functions behind flowc's commands around a run: printing diagnostics, a plan's cost,
formatting, the shape cache, event sinks, the watchdog, the durable worker and the protocol
servers.  :mod:`agentflow.api` re-exports every public name here: ``flowc`` (``cli/``) reaches
the rest of the package only through ``agentflow.api`` (docs/ARCHITECTURE.md "The front door").

Imports of ``agentflow.ir``, ``agentflow.runtime`` and the servers stay inside the functions:
they load Pydantic (and the servers import :mod:`agentflow.api`), which ``flowc check``, the
language server and ``import agentflow.api`` never do (docs/decisions.md "Start-up").  Nothing
here prints; errors in the user's files come back as :class:`agentflow.errors.FlowError`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentflow.compiler import render as _render
from agentflow.compiler import types as T
from agentflow.compiler.checker import CheckResult
from agentflow.compiler.contracts import contract_for, extern_declaration
from agentflow.compiler.fmt import FormatError, format_file
from agentflow.core.diagnostics import Diagnostic
from agentflow.ir.names import expression_position

if TYPE_CHECKING:
    from agentflow.flowexplore import ExploreReport
    from agentflow.ir.models import Plan
    from agentflow.runtime.config import Config
    from agentflow.runtime.events import CallbackSink, ConsoleSink, Event, JsonlSink
    from agentflow.runtime.hooks import Hooks
    from agentflow.runtime.shape_cache import ShapeCache
    from agentflow.runtime.telemetry import TelemetrySettings

__all__ = [
    "FormatError",
    "callback_sink",
    "console_sink",
    "diagnostics_summary",
    "enable_watchdog",
    "explore",
    "expression_position",
    "extern_declaration",
    "format_flow_file",
    "format_plan_file",
    "jsonl_sink",
    "load_config",
    "plan_from_data",
    "plan_from_text",
    "render_diagnostics",
    "serve_mcp",
    "serve_ui",
    "shape_cache",
    "shape_cache_note",
    "shutdown_durable",
    "stale_modules",
    "telemetry_settings",
    "terminal_hooks",
    "type_schema",
    "work",
    "worst_case_cost",
]


# ------------------------------------------------------------------------------ diagnostics


def render_diagnostics(
    diagnostics: Iterable[Diagnostic],
    sources: dict[str, str],
    fmt: str = "text",
    *,
    color: bool | None = None,
) -> str:
    """``diagnostics`` as ``flowc check --format FMT`` prints them (docs/diagnostics.md):
    ``"text"`` (excerpts from ``sources``, file → text; ``color``: ANSI colours, default when
    stderr is a terminal), ``"json"`` (an array of diagnostic objects) or ``"sarif"``
    (SARIF 2.1.0).  Raises ValueError for another format."""
    if fmt == "json":
        return _render.render_json(diagnostics)
    if fmt == "sarif":
        return _render.render_sarif(diagnostics)
    if fmt != "text":
        raise ValueError(f"unknown diagnostics format {fmt!r}")
    shown = sys.stderr.isatty() if color is None else color
    return _render.render_text(diagnostics, sources, color=shown)


def diagnostics_summary(diagnostics: Iterable[Diagnostic]) -> str:
    """The closing line of a report, e.g. ``"2 errors, 1 warning"`` (``"no problems"``)."""
    return _render.summary(diagnostics)


def stale_modules(flow: str | os.PathLike[str], text: str) -> list[Diagnostic]:
    """The ``stale-generated-module`` warnings of the `.flow` file ``flow`` whose text is
    ``text``: the modules the nearest flow.toml lists under ``[gen] python`` generated from
    another version of it (docs/reference/python-clients.md)."""
    # imported here: it reads TOML and digests (tomllib, hashlib), which `flowc --version`,
    # `flowc run` of a plan and the durable commands never need
    from agentflow.compiler.gen_python import gen_modules, stale_diagnostics

    modules = gen_modules(flow)
    return stale_diagnostics(str(flow), text, modules) if modules else []


def type_schema(result: CheckResult, type_name: str | None) -> dict[str, Any]:
    """The JSON Schema (2020-12) contract of type ``type_name`` declared in the checked program
    ``result`` (``flowc schema``; docs/reference/types.md), or with None the schema its input is
    validated against.  Raises :class:`agentflow.errors.ContractError` for a type with no JSON
    form (an ``extern type``, or a program with errors); the caller checks that the name is
    declared (``result.env.names()``)."""
    target: T.Type = result.input_type if type_name is None else T.NamedRef(type_name)
    return contract_for(target, result.env)


# ------------------------------------------------------------------------------------ plans


def plan_from_data(data: dict[str, Any], file: str) -> Plan:
    """A runnable plan from plan data (a :class:`~agentflow.api.CompiledFlow`'s ``plan``);
    ``file`` names it in messages.  Raises :class:`agentflow.errors.PlanLoadError`."""
    from agentflow.ir.loader import load_plan_data

    return load_plan_data(data, file)


def plan_from_text(text: str, file: str = "<plan>") -> Plan:
    """A runnable plan from plan text (YAML or JSON; e.g. what a durable run recorded).  Raises
    :class:`agentflow.errors.PlanLoadError` with every problem."""
    from agentflow.ir.loader import load_plan_text

    return load_plan_text(text, file)


def worst_case_cost(plan: Plan) -> dict[str, Any]:
    """The most model calls one run of ``plan`` can make (``flowc cost``; docs/models.md
    "flowc cost"): ``{"roles": {role: text}, "total": text, "loops": [...], "unbounded":
    [...], "budgets": [...]}``, figures in the sizes of the run's input."""
    from agentflow.ir.cost import worst_case

    return worst_case(plan).to_dict()


def format_plan_file(path: str | os.PathLike[str]) -> tuple[str, str]:
    """``(text, canonical text)`` of the plan file at ``path`` (``flowc plan fmt``;
    docs/spec/PLAN_IR.md §1): comments kept.  Raises :class:`agentflow.errors.PlanLoadError`
    for an unreadable file or a plan that does not parse."""
    from agentflow.ir.dump import fmt_plan_text
    from agentflow.ir.loader import read_plan_text

    text = read_plan_text(Path(path))
    return text, fmt_plan_text(text, str(path))


def format_flow_file(path: str | os.PathLike[str], *, check: bool = False) -> bool:
    """Rewrite the `.flow` file at ``path`` in canonical layout (``flowc fmt``;
    docs/reference/cli.md), or with ``check`` only compare.  True when it is (was) not canonical.  Raises
    :class:`FormatError` for a file that does not parse, ``OSError`` when unreadable."""
    return format_file(Path(path), check=check)


# ----------------------------------------------------------------------- configuration, cache


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """The configuration of ``path`` (a flow.toml), or of the nearest flow.toml from the current
    directory upward, or the defaults (docs/reference/configuration.md).  Raises
    :class:`agentflow.errors.ConfigError`."""
    from agentflow.runtime.config import load_config as load

    return load(None if path is None else os.fspath(path))


def telemetry_settings(config: Config, telemetry: bool | str | None) -> TelemetrySettings | None:
    """The OpenTelemetry export settings of a run under ``config`` for ``flowc run --otel``'s
    choice ``telemetry`` (an endpoint URL, True, False, or None: as ``[telemetry]`` says);
    None: no export (docs/observability.md).  Raises ConfigError."""
    from agentflow.runtime.telemetry import settings_for

    return settings_for(config, telemetry)


def shape_cache() -> ShapeCache:
    """The shape cache of this user (``flowc cache``; ``AGENTFLOW_CACHE_DIR`` or the default
    directory): its ``all(tools)``, ``clear(tool)`` and ``path``."""
    from agentflow.runtime.shape_cache import ShapeCache

    return ShapeCache()


def shape_cache_note() -> str | None:
    """A note when ``AGENTFLOW_CACHE_DIR`` is set but empty (it counts as unset), else None."""
    from agentflow.runtime.shape_cache import CACHE_ENV

    if os.environ.get(CACHE_ENV) == "":
        return f"{CACHE_ENV} is empty, so it is ignored (the default cache directory is used)"
    return None


# ------------------------------------------------------------------------ hosting a run


def console_sink() -> ConsoleSink:
    """The terminal's progress view of a run on stderr (live on a TTY; one line an event
    otherwise), in the `.flow`'s terms (docs/reference/events.md)."""
    from agentflow.runtime.events import ConsoleSink

    return ConsoleSink()


def jsonl_sink(path: str | os.PathLike[str], *, append: bool = False) -> JsonlSink:
    """A sink writing every event as one JSON line to ``path`` (``--trace``; ``append``: add to
    its end, as a resumed run or a worker does)."""
    from agentflow.runtime.events import JsonlSink

    return JsonlSink(os.fspath(path), append=append)


def callback_sink(fn: Callable[[Event], Any], kinds: Iterable[str] | None = None) -> CallbackSink:
    """A sink calling ``fn(event)`` for every event (of the ``kinds`` given, when given)."""
    from agentflow.runtime.events import CallbackSink

    sink = CallbackSink(fn)
    if kinds is not None:
        sink.kinds = frozenset(kinds)  # type: ignore[attr-defined]
    return sink


def terminal_hooks(console: ConsoleSink | None = None) -> Hooks:
    """Hooks whose `ask` steps a person at the terminal answers when stdin is one (the
    ``console``'s live view paused while asking), else each ask's ``when_unanswered``."""
    from agentflow.runtime.hooks import Hooks, default_interlocutor

    pause = console.paused if console is not None else None
    return Hooks(interlocutor=default_interlocutor(pause=pause))


def enable_watchdog(on: bool = True) -> None:
    """Let the runs this process drives on its main thread be ended even when a tool holds the
    GIL (runtime/watchdog.py); the CLI turns it on for a command and off after it."""
    from agentflow.runtime.interrupt import enable_watchdog as enable

    enable(on)


def shutdown_durable() -> None:
    """Stop the durable engine in this process if it runs (idempotent)."""
    from agentflow.runtime.durable.dbos_engine import shutdown

    shutdown()


async def work(
    url: str,
    name: str,
    *,
    trace: str | os.PathLike[str] | None = None,
    telemetry: TelemetrySettings | None = None,
) -> None:
    """Be worker ``name`` of the fleet on durable database ``url`` until cancelled (``flowc
    worker``; docs/durable.md "Fleet"): take map items, runs and rate-limited model calls from
    its queues; ``trace``: events added to this JSON Lines file.  Raises ConfigError."""
    from agentflow.runtime.durable.runs import work as run_worker

    sinks: list[Any] = [jsonl_sink(trace, append=True)] if trace else []
    await run_worker(url, name, sinks=sinks, telemetry=telemetry)


def explore(path: str | os.PathLike[str], runs: int) -> ExploreReport:
    """``flowc test --explore``: run the flow at ``path`` ``runs`` times with generated answers
    and report the outcomes (docs/reference/testing.md "Exploring").  Never raises for a
    mistake in the file."""
    from agentflow.flowexplore import explore as run_explore

    return run_explore(path, runs)


def serve_mcp(directory: str | os.PathLike[str], **options: Any) -> None:
    """Serve every program in ``directory`` as an MCP tool (``flowc serve --mcp``;
    docs/mcp.md); ``options`` as :func:`agentflow.serve.serve`'s.  Raises
    ConfigError."""
    from agentflow.serve import serve

    serve(Path(directory), **options)


def serve_ui(url: str, **options: Any) -> None:
    """Serve the web console of durable database ``url`` until interrupted (``flowc ui``;
    docs/reference/ui.md); ``options`` as :func:`agentflow.ui.app.serve`'s."""
    from agentflow.ui.app import serve

    serve(url, **options)
