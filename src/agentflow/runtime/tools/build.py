"""Build a run's whole tool catalog from its configuration (docs/spec/RUNTIME.md §4).

``build_catalog(config, plan=None)`` = ``builtin__*`` (the standard library) + ``user__*`` (``[tools]
modules`` and the ``agentflow.tools`` entry points) + ``plan__*`` (the plans directory, sub-plans) +
``SERVER__*`` for every ``[mcp.SERVER]`` (declared at once, connected lazily by
:meth:`Catalog.prepare`; :meth:`Catalog.aclose` closes the connections).

:func:`check_plan_tools` resolves a plan's tool names and patterns against such a catalog without
connecting to any server (the validate-time check of docs/spec/PLAN_IR.md §2).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentflow.errors import PlanLoadError, RunError
from agentflow.runtime.tools.catalog import Catalog

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
    from agentflow.runtime.tools.builtin import builtin_tools
    from agentflow.runtime.tools.mcp import McpHub
    from agentflow.runtime.tools.plans import (
        callable_plans,
        load_plan_file,
        load_plans_dir,
        plan_tool,
        plans_dir,
    )
    from agentflow.runtime.tools.user import load_user_tools

    if config is None:
        from agentflow.runtime.config import Config

        config = Config()
    catalog = Catalog(builtin_tools())
    tools_cfg = getattr(config, "tools", None)
    use_eps = entry_points if entry_points is not None else getattr(tools_cfg, "entry_points", True)
    pool = None
    if getattr(tools_cfg, "isolation", "thread") == "process":
        from agentflow.runtime.tools.isolation import ProcessPool

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


def _modules_where(config: Any) -> str | None:
    """``flow.toml:line:col`` of ``[tools] modules`` for error messages (None without a file)."""
    path = getattr(config, "path", None)
    if path is None:
        return None
    from pathlib import Path

    from agentflow.runtime.config import _where

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    return _where(path, text, ("tools", "modules"))


def check_plan_tools(plan: Any, catalog: Catalog, config: Any = None) -> None:
    """Resolve ``plan``'s tool names and ``tools`` patterns against ``catalog`` at the server level
    (no connection is made; docs/spec/RUNTIME.md §4). Raises PlanLoadError listing every problem,
    e.g. ``step E1: `tools` pattern 'linear__*' needs MCP server 'linear', which is not configured
    under [mcp.linear]``, and ``plan_cycle`` problems across the plans directory."""
    from agentflow.ir.validate import resolve_tools

    names = set(catalog.names()) | {f"plan__{n}" for n in catalog.plans}
    problems = resolve_tools(plan, names, set(catalog.configured_prefixes))
    if catalog.plans:
        from agentflow.ir.loader import check_plan_cycles

        problems += check_plan_cycles(plan, catalog.plans)  # across the plans directory
    if config is not None:
        for problem in problems:
            if problem.hint is None and "unknown tool 'user__" in problem.message:
                problem.hint = _user_tools_hint(config)
    if problems:
        raise PlanLoadError(problems)


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


__all__ = ["build_catalog", "check_plan_tools", "list_catalog", "schema_summary"]


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


async def list_catalog(catalog: Catalog, *, connect: bool = True) -> tuple[list[dict], list[str]]:
    """Rows ``{name, source, description, input_schema, summary}`` for every catalog tool (sorted
    by name) and the errors met. With ``connect``, MCP servers are connected to list their tools
    (then closed); without, each server shows as one ``SERVER__*`` row."""
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
        rows.append(
            {
                "name": name,
                "source": source,
                "description": tool.description,
                "input_schema": tool.input_schema,
                "summary": schema_summary(tool.input_schema),
            }
        )
    loaded = {r["name"].split("__", 1)[0] for r in rows}
    for prefix in catalog.lazy_prefixes():
        if prefix not in loaded:
            rows.append(
                {
                    "name": f"{prefix}__*",
                    "source": f"mcp:{prefix}",
                    "description": "(not connected)",
                    "input_schema": None,
                    "summary": "",
                }
            )
    rows.sort(key=lambda r: r["name"])
    if connect:
        await catalog.aclose()
    return rows, errors
