"""Build a run's whole tool catalog from its configuration (docs/spec/RUNTIME.md §4).

``build_catalog(config, plan=None)`` = ``builtin__*`` (the standard library) + ``user__*`` (``[tools]
modules`` and the ``agentflow.tools`` entry points) + ``plan__*`` (the plans directory, sub-plans) +
``SERVER__*`` for every ``[mcp.SERVER]`` (declared at once, connected lazily by
:meth:`Catalog.prepare`; :meth:`Catalog.aclose` closes the connections).

:func:`check_plan_tools` resolves a plan's tool names and patterns against such a catalog without
connecting to any server (the validate-time check of docs/spec/PLAN_IR.md §2).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentflow.core.diagnostics import Diagnostic
from agentflow.core.vocabulary import Code, duration_ms
from agentflow.errors import PlanLoadError, RunError
from agentflow.ir.loader import check_plan_cycles
from agentflow.ir.resolve import check_arguments, resolve_tools, signature_mismatch
from agentflow.ir.validate import CONTROL_STEPS, walk_steps
from agentflow.runtime.config import Config
from agentflow.runtime.config_errors import key_location
from agentflow.runtime.tools.builtin import builtin_tools
from agentflow.runtime.tools.catalog import Catalog
from agentflow.runtime.tools.isolation import ProcessPool
from agentflow.runtime.tools.mcp import McpHub
from agentflow.runtime.tools.plans import (
    callable_plans,
    load_plan_file,
    load_plans_dir,
    plan_tool,
    plans_dir,
)
from agentflow.runtime.tools.user import load_user_tools

if TYPE_CHECKING:
    from agentflow.runtime.tools.plans import PlanLoader


def build_catalog(
    config: Any = None,
    *,
    plan: Any = None,
    entry_points: bool | None = None,
    plans: dict[str, Any] | None = None,
    load_plan: PlanLoader | None = None,
) -> Catalog:
    """The full catalog for ``config`` (a :class:`agentflow.runtime.config.Config`; None = an
    empty configuration: builtins only, plus entry points).

    ``plan``: the plan about to run (its sub-plans are listed as ``plan__*`` tools);
    ``entry_points``: override ``[tools] entry_points``; ``plans``: override the plans directory
    (name → Plan); ``load_plan``: how a file of the plans directory becomes a Plan (default
    :func:`~agentflow.runtime.tools.plans.load_plan_file`: YAML/JSON only — the runtime never
    compiles; :func:`agentflow.api.build_catalog` passes one that compiles `.flow` files).
    ``catalog.plans`` holds every plan callable as ``plan__NAME`` (pass it to the executor).
    Raises ConfigError / PlanLoadError / CompileError for broken tool modules or plans.
    """

    if config is None:
        config = Config()
    catalog = Catalog(builtin_tools())
    tools_cfg = getattr(config, "tools", None)
    use_eps = entry_points if entry_points is not None else getattr(tools_cfg, "entry_points", True)
    pool = None
    if getattr(tools_cfg, "isolation", "thread") == "process":
        pool = ProcessPool()
        catalog.add_closer(pool.aclose)
    for tool in load_user_tools(
        list(getattr(tools_cfg, "modules", []) or []),
        base_dir=config.base_dir(),
        entry_points=use_eps,
        where=_modules_where(config),
        pool=pool,
    ):
        catalog.register(tool)
    if plans is None:
        directory = plans_dir(config)
        loader = load_plan if load_plan is not None else load_plan_file
        plans = load_plans_dir(directory, loader) if directory is not None else {}
    catalog.plans = callable_plans(plans, plan)
    for pname, p in sorted(catalog.plans.items()):
        if f"plan__{pname}" not in catalog:
            catalog.register(plan_tool(p))
    if plan is not None:
        for _name, sub in sorted((plan.plans or {}).items()):
            catalog.register(plan_tool(sub), replace=True)
    servers = getattr(config, "mcp", None) or {}
    if servers:
        hub = McpHub(servers, base_dir=config.base_dir(), env=config.env)
        catalog.mcp = hub  # type: ignore[attr-defined]
        first = True
        for name in hub.names():

            async def load(name: str = name) -> list[Any]:
                return await hub.tools(name)

            catalog.add_lazy(name, load, hub.aclose if first else None)
            first = False
    return catalog


def _retrieve(fut: Any) -> None:
    """Mark a background attempt's outcome as retrieved (its error reaches its step)."""
    if not fut.cancelled():
        fut.exception()


def _modules_where(config: Any) -> str | None:
    """``flow.toml:line:col`` of ``[tools] modules`` for error messages (None without a file)."""
    path = getattr(config, "path", None)
    if path is None:
        return None

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    return key_location(path, text, ("tools", "modules"))


def check_plan_tools(plan: Any, catalog: Catalog, config: Any = None) -> None:
    """Resolve ``plan``'s tool names and ``tools`` patterns against ``catalog`` at the server level
    (no connection is made; docs/spec/RUNTIME.md §4). Raises PlanLoadError listing every problem
    (:func:`plan_tool_problems`)."""
    problems = plan_tool_problems(plan, catalog, config)
    if problems:
        raise PlanLoadError(problems)


def plan_tool_problems(plan: Any, catalog: Catalog, config: Any = None) -> list[Diagnostic]:
    """Every tool-resolution problem of ``plan`` against ``catalog`` (docs/spec/RUNTIME.md §4),
    e.g. ``step E1: `tools` pattern 'linear__*' needs MCP server 'linear', which is not configured
    under [mcp.linear]`` (``plan-unconfigured-server``), ``plan-unknown-tool`` and ``plan-cycle``
    problems across the plans directory.  ``config`` adds where ``user__*`` tools come from to
    the hint of an unknown one.  Works on a plan that had load problems too (its broken steps
    are skipped)."""

    names = set(catalog.names()) | {f"plan__{n}" for n in catalog.plans}
    problems = resolve_tools(plan, names, set(catalog.configured_prefixes))
    if catalog.plans:
        problems += check_plan_cycles(plan, catalog.plans)  # across the plans directory
    if config is not None:
        for problem in problems:
            if problem.hint is None and "unknown tool 'user__" in problem.message:
                problem.hint = _user_tools_hint(config)
    return problems


def _user_tools_hint(config: Any) -> str:
    """Where `user__*` tools come from, for an unknown one: the flow.toml in use, or none."""
    path = getattr(config, "path", None)
    if path is None:
        return (
            "user__* tools come from `[tools] modules` in flow.toml, and no flow.toml was found "
            "in this directory or above (or pass --config FILE)"
        )
    modules = list(getattr(getattr(config, "tools", None), "modules", None) or [])
    listed = ", ".join(modules) if modules else "none"
    return f"user__* tools come from `[tools] modules` in {path} (listed: {listed})"


#: Seconds the pre-run argument check waits for an MCP server to start (at most its
#: ``connect_timeout``, and at most half the shortest ``timeout`` of the steps that name it).
PRECONNECT_LIMIT = 10.0


def plan_argument_problems(plan: Any, catalog: Catalog) -> list[Diagnostic]:
    """Every problem of the plan's literal tool arguments against the input schemas ``catalog``
    knows now (:func:`agentflow.ir.resolve.check_arguments`): builtin and user tools always, an
    MCP server's tools once it is connected (a server not connected is not asked: its tools'
    arguments are checked when they are called)."""
    return check_arguments(plan, _input_schemas(plan, catalog))


def _input_schemas(plan: Any, catalog: Catalog) -> dict[str, dict[str, Any]]:
    """The input schema of each tool the plan's ordinary steps name that ``catalog`` knows now
    (builtin and user tools; an MCP server's once it is connected)."""
    names: set[str] = set()
    for p in [plan, *(getattr(plan, "plans", None) or {}).values()]:
        for _path, _label, step in walk_steps(p):
            if isinstance(step.tool_name, str) and step.tool_name not in CONTROL_STEPS:
                names.add(step.tool_name)
    schemas: dict[str, dict[str, Any]] = {}
    for name in sorted(names):
        tool = catalog.get(name)
        if tool is not None and tool.source in ("mcp", "user", "builtin"):
            schemas[name] = tool.input_schema
    return schemas


def plan_load_problems(plan: Any, catalog: Catalog, config: Any = None) -> list[Diagnostic]:
    """The load-time checks a plan must pass before it runs, the one function ``flowc run``
    (:func:`check_plan_arguments`) and ``flowc plan validate``
    (:func:`agentflow.api.check_plan`) both call: tool names and ``tools`` patterns
    (:func:`plan_tool_problems`) and literal arguments (:func:`plan_argument_problems`), sorted
    by position.  What ``catalog`` cannot know is not checked: the tools of an MCP server not
    connected (validate never connects one), and tools of a flow.toml it was not built from."""
    problems = plan_tool_problems(plan, catalog, config) + plan_argument_problems(plan, catalog)
    return sorted(problems, key=lambda d: d.sort_key())


async def check_plan_arguments(plan: Any, catalog: Catalog, config: Any = None) -> None:
    """Check the plan's literal tool arguments against the tools' input schemas before the run
    (:func:`plan_load_problems`): the MCP servers its ordinary steps name are connected first,
    within :data:`PRECONNECT_LIMIT` (they will be needed; a server that cannot be reached in
    that time is left to its own step, and its arguments to the server).  Raises PlanLoadError
    listing every problem."""

    names: set[str] = set()
    bounds: dict[str, float] = {}  # server → half the shortest step timeout naming it
    for p in [plan, *(plan.plans or {}).values()]:
        for _path, _label, step in walk_steps(p):
            if isinstance(step.tool_name, str) and step.tool_name not in CONTROL_STEPS:
                names.add(step.tool_name)
                if step.timeout and "__" in step.tool_name:
                    server = step.tool_name.split("__", 1)[0]
                    try:
                        seconds = duration_ms(step.timeout) / 1000
                    except ValueError:
                        continue
                    bounds[server] = min(bounds.get(server, seconds / 2), seconds / 2)
    hub = getattr(catalog, "mcp", None)
    for prefix in catalog.pending(sorted(names)):
        # Bounded: a server that is slow to start is left to connect at its step, within the
        # step's own timeout (a hung server must not hold the run before it starts: the wait
        # here is at most half the shortest timeout of the steps that name it).
        conn = hub.connections.get(prefix) if hub is not None else None
        limit = min(PRECONNECT_LIMIT, bounds.get(prefix, PRECONNECT_LIMIT))
        if conn is not None:
            limit = min(limit, conn.server.connect_timeout)
        # Not cancelled when the wait ends: the connection goes on starting, and the step that
        # needs it joins it instead of starting the server a second time.
        attempt = asyncio.ensure_future(catalog.prepare([f"{prefix}__*"]))
        attempt.add_done_callback(_retrieve)
        try:
            await asyncio.wait_for(asyncio.shield(attempt), limit)
        except (RunError, TimeoutError):
            pass
    mismatch = signature_mismatch(plan, _input_schemas(plan, catalog))
    if mismatch is not None:
        # a `.flow` step whose tool was declared with another signature: the run's failure,
        # in the `.flow`'s terms, before any step runs (docs/reference/errors.md)
        path, label, source, message = mismatch
        error = RunError(Code.VALIDATION, message, path, source)
        error.where = {"label": label}
        raise error
    problems = plan_load_problems(plan, catalog, config)
    if problems:
        raise PlanLoadError(problems)


__all__ = [
    "build_catalog",
    "check_plan_arguments",
    "check_plan_tools",
    "list_catalog",
    "plan_argument_problems",
    "plan_load_problems",
    "schema_summary",
]


def schema_summary(schema: dict[str, Any] | None, limit: int = 120) -> str:
    """A one-line summary of an object input schema: ``path: string, limit?: integer`` (``?``
    marks optional properties; enums show as ``a|b``), cut to ``limit`` characters."""
    if not isinstance(schema, dict):
        return ""
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return "no arguments" if schema.get("type") == "object" else str(schema.get("type", ""))
    required = set(schema.get("required") or [])
    parts = []
    for key, prop in props.items():
        prop = prop if isinstance(prop, dict) else {}
        if "enum" in prop:
            kind = "|".join(json.dumps(v) for v in prop["enum"])
        elif isinstance(prop.get("type"), list):
            kind = "|".join(str(t) for t in prop["type"])
        elif "type" in prop:
            kind = str(prop["type"])
            if kind == "array" and isinstance(prop.get("items"), dict) and "type" in prop["items"]:
                kind = f"{prop['items']['type']}[]"
        elif "anyOf" in prop:
            kind = "|".join(str(a.get("type", "?")) for a in prop["anyOf"] if isinstance(a, dict))
        else:
            kind = "any"
        parts.append(f"{key}{'' if key in required else '?'}: {kind}")
    text = ", ".join(parts)
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def list_catalog(
    catalog: Catalog, *, connect: bool = True
) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows ``{name, source, description, input_schema, output_schema, summary}`` for every
    catalog tool (sorted by name) and the errors met. With ``connect``, MCP servers are connected
    to list their tools (then closed), and each connected server adds a ``SERVER__*`` row
    (``kind: server``, also when it has no tools) and rows for its resources and prompts
    (``kind: resource`` / ``prompt``, see :func:`_server_rows`); without, or when a server
    cannot be reached, each server shows as one ``SERVER__*`` row "(not connected)"."""
    errors: list[str] = []
    if connect:
        for prefix in catalog.lazy_prefixes():
            try:
                await catalog.prepare([f"{prefix}__*"])
            except RunError as exc:
                errors.append(exc.message)
    rows: list[dict[str, Any]] = []
    for name in catalog.names():
        tool = catalog.get(name)
        assert tool is not None
        source = tool.source
        if source == "mcp":
            source = f"mcp:{tool.meta.get('server', tool.prefix)}"
        if tool.meta.get("needs_tasks"):
            source += " (task)"
        rows.append(
            {
                "name": name,
                "source": source,
                "description": tool.description,
                "input_schema": tool.input_schema,
                "output_schema": tool.meta.get("output_schema"),
                "summary": schema_summary(tool.input_schema),
            }
        )
    hub = getattr(catalog, "mcp", None)
    for prefix in catalog.lazy_prefixes():
        conn = hub.connections.get(prefix) if hub is not None else None
        if conn is not None and conn.connected:
            rows.extend(_server_rows(conn))
            continue
        rows.append(
            {
                "name": f"{prefix}__*",
                "kind": "server",
                "source": f"mcp:{prefix}",
                "description": "(not connected)",
                "input_schema": None,
                "summary": "",
            }
        )
    rows.sort(key=lambda r: (r["name"], r.get("kind", "tool")))
    if connect:
        await catalog.aclose()
    return rows, errors


def _server_rows(conn: Any) -> list[dict[str, Any]]:
    """Rows for a connected MCP server beyond its tools: one ``SERVER`` row saying it is
    connected (also when it has no tools), then one per resource, resource template and prompt
    (``kind``: ``server`` | ``resource`` | ``prompt``)."""
    source = f"mcp:{conn.name}"
    info = conn.server_info
    what = f"{info.name} {info.version}".strip() if info is not None else "MCP server"
    counts = (
        f"{len(conn._tools or [])} tools, {len(conn.resources) + len(conn.resource_templates)} "
        f"resources, {len(conn.prompts)} prompts"
    )
    rows: list[dict[str, Any]] = [
        {
            "name": f"{conn.name}__*",
            "kind": "server",
            "source": source,
            "description": f"(connected: {what}; {counts})",
            "input_schema": None,
            "summary": "",
        }
    ]
    for r in conn.resources:
        rows.append(
            {
                "name": f"{conn.name}__read_resource({r.uri})",
                "kind": "resource",
                "source": source,
                "description": r.description or r.title or r.name or "",
                "input_schema": None,
                "summary": r.mime_type or "",
                "uri": str(r.uri),
            }
        )
    for t in conn.resource_templates:
        rows.append(
            {
                "name": f"{conn.name}__read_resource({t.uri_template})",
                "kind": "resource",
                "source": source,
                "description": t.description or t.title or t.name or "",
                "input_schema": None,
                "summary": t.mime_type or "",
                "uri_template": t.uri_template,
            }
        )
    for p in conn.prompts:
        args = list(getattr(p, "arguments", None) or [])
        rows.append(
            {
                "name": f"{conn.name}__get_prompt({p.name})",
                "kind": "prompt",
                "source": source,
                "description": p.description or p.title or "",
                "input_schema": None,
                "summary": ", ".join(a.name + ("" if a.required else "?") for a in args),
                "prompt": p.name,
            }
        )
    return rows
