"""Tool-name resolution and argument checks against a catalog (docs/spec/RUNTIME.md §4,
docs/spec/PLAN_IR.md §3): the checks of a plan that need the configuration, after
:func:`agentflow.ir.validate.validate_plan`'s structural ones.

- :func:`resolve_tools` checks tool names and ``tools`` patterns against a catalog;
- :func:`check_arguments` checks each ordinary step's literal arguments against its tool's input
  schema.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agentflow.core.diagnostics import (
    PLAN_INVALID_VALUE,
    PLAN_MISSING_FIELD,
    PLAN_UNCONFIGURED_SERVER,
    PLAN_UNKNOWN_FIELD,
    PLAN_UNKNOWN_TOOL,
    Diagnostic,
    did_you_mean,
)
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    CONTROL_STEPS,
)
from agentflow.ir.models import Plan, Step
from agentflow.ir.names import step_label
from agentflow.ir.schemas import fast_valid, plainly_valid_schema
from agentflow.ir.templates import Path as DataPath
from agentflow.ir.validate import (
    EXACT_SERVERS,
    walk_steps,
)


def _pattern_re(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(p) for p in pattern.split("*")))


def _server(name: str) -> str | None:
    head, sep, _ = name.partition("__")
    if not sep or "*" in head:
        return None
    return head


def _meta_location(step: Any) -> Span | None:
    """``meta.source`` (``file:line:col``, set by the compiler) of ``step`` as a point."""
    meta = getattr(step, "meta", None)
    return Span.parse(meta.get("source")) if isinstance(meta, dict) else None


def resolve_tools(
    plan: Plan, catalog_names: set[str], configured_prefixes: set[str]
) -> list[Diagnostic]:
    """Resolve step tool names and agent ``tools`` entries against a catalog
    (docs/spec/RUNTIME.md §4).

    ``catalog_names``: every tool name known to the run (``builtin__read_file``, ``user__x``,
    ``plan__y``, MCP names the caller already knows); ``configured_prefixes``: MCP servers
    configured under ``[mcp.SERVER]`` (``"linear"`` or ``"linear__"``), plus any prefix the Python
    API registered tools under.

    ``builtin__*``, ``user__*`` and ``plan__*`` names resolve exactly (``plan__X`` also exists when
    ``X`` is this plan or one of its sub-plans); other ``server__tool`` names and patterns resolve at
    the server level.  Control steps are never catalog tools.  Returns every problem found.
    """
    smap = getattr(plan, "_source_map", None)
    file = plan.source_file or "<plan>"
    plan_tools = {f"plan__{plan.name}"} | {f"plan__{n}" for n in plan.plans}
    known = set(catalog_names) | plan_tools
    servers = {p[:-2] if p.endswith("__") else p for p in configured_prefixes}
    servers |= {s for n in catalog_names if (s := _server(n)) and s not in EXACT_SERVERS}
    problems: list[Diagnostic] = []
    current: list[Any] = [None]  # the step being resolved

    def report(path: DataPath, code: str, message: str, hint: str | None = None) -> None:
        if smap is not None:
            loc = smap.location(path)
        else:  # a plan compiled in memory: the step's `.flow` source position, when it has one
            loc = _meta_location(current[0]) or Span.at(file)
            if loc.file != file and Path(file).name == loc.file:  # the compiler keeps base names
                loc = Span.at(file, loc.line, loc.column)
        problems.append(Diagnostic(code, message, loc, hint=hint))

    def not_configured(server: str) -> str:
        return f"needs MCP server '{server}', which is not configured under [mcp.{server}]"

    # an agent is never offered the plan it runs in (that would be a plan_cycle)
    offerable = known - {f"plan__{plan.name}"}

    def check_name(name: str, path: DataPath, label: str, what: str) -> None:
        if name in (known if what == "tool" else offerable):
            return
        server = _server(name)
        if server is not None and server not in EXACT_SERVERS:
            if server not in servers:
                report(
                    path,
                    PLAN_UNCONFIGURED_SERVER,
                    f"step {label}: {what} '{name}' {not_configured(server)}",
                )
            return
        report(
            path,
            PLAN_UNKNOWN_TOOL,
            f"step {label}: unknown tool '{name}'",
            # a step's tool may also be a control step (`valu` → `value`); an agent's may not
            did_you_mean(name, known | set(CONTROL_STEPS) if what == "tool" else offerable),
        )

    def check_pattern(pattern: str, path: DataPath, label: str) -> None:
        server = _server(pattern)
        if server is None:
            return  # crosses servers (`*`, `*__search`): resolved at run time
        if server in EXACT_SERVERS:
            rx = _pattern_re(pattern)
            if not any(rx.fullmatch(n) for n in offerable):
                report(
                    path,
                    PLAN_UNKNOWN_TOOL,
                    f"step {label}: `tools` pattern '{pattern}' matches no tool",
                )
        elif server not in servers:
            report(
                path,
                PLAN_UNCONFIGURED_SERVER,
                f"step {label}: `tools` pattern '{pattern}' {not_configured(server)}",
            )

    all_plans: list[tuple[Plan, DataPath, str | None]] = [(plan, plan._path or (), None)]
    all_plans += [(sub, (*all_plans[0][1], "plans", n), n) for n, sub in plan.plans.items()]
    for p, ppath, pname in all_plans:
        for spath, label, step in walk_steps(p, ppath):
            label = _shown_step(label, step, pname)
            tool = step.tool_name
            if not isinstance(tool, str) or not tool:
                continue
            current[0] = step
            if tool not in CONTROL_STEPS:
                check_name(tool, (*spath, "tool_name"), label, "tool")
                continue
            if tool != "agent" or not isinstance(step.input, dict):
                continue
            tools = step.input.get("tools")
            if not isinstance(tools, list):
                continue
            for i, entry in enumerate(tools):
                if not isinstance(entry, str):
                    continue
                epath = (*spath, "input", "tools", i)
                if "*" in entry:
                    check_pattern(entry, epath, label)
                else:
                    check_name(entry, epath, label, "`tools` entry")
    return problems


def _shown_step(path: str, step: Step, plan_name: str | None) -> str:
    """A step as a problem names it: a compiled `.flow`'s step in the `.flow`'s terms (``s ›
    a = list_issues(…)``: its stage, its ``let``, its construct; the problem's position is its
    line), never its step path or the name of a sub-plan the compiler outlined; a hand-written
    plan's by its step path (``E0``, with ``(plan NAME)`` in a sub-plan)."""
    meta = step.meta if isinstance(step.meta, dict) else {}
    stage = meta.get("stage")
    if isinstance(stage, str) and stage:
        name = meta.get("name")
        own = f"{name} = {step_label(step)}" if isinstance(name, str) and name else step_label(step)
        return f"{stage} › {own}"
    return f"{path} (plan {plan_name})" if plan_name is not None else path


def check_arguments(plan: Plan, schemas: dict[str, dict[str, Any]]) -> list[Diagnostic]:
    """Check the literal arguments of ordinary steps against their tools' input schemas.

    ``schemas``: tool name → JSON Schema of its input (the catalog's, MCP tools included once
    their servers are connected).  For a step whose ``input`` is a mapping: an argument the
    schema does not name (when it names its ``properties`` and does not admit others) is a
    problem with the nearest name as a hint, a required argument left out is one, and an
    argument with no template in it that breaks its property's schema is one.  Templated
    values are checked when the tool is called.  Returns every problem found.
    """
    smap = getattr(plan, "_source_map", None)
    file = plan.source_file or "<plan>"
    problems: list[Diagnostic] = []

    def report(
        step: Step,
        path: DataPath,
        message: str,
        hint: str | None = None,
        code: str = PLAN_INVALID_VALUE,
    ) -> None:
        if smap is not None:
            loc = smap.location(path)
        else:
            loc = _meta_location(step) or Span.at(file)
            if loc.file != file and Path(file).name == loc.file:
                loc = Span.at(file, loc.line, loc.column)
        problems.append(Diagnostic(code, message, loc, hint=hint))

    root: DataPath = plan._path or ()
    all_plans: list[tuple[Plan, DataPath, str | None]] = [(plan, root, None)]
    all_plans += [(sub, (*root, "plans", n), n) for n, sub in plan.plans.items()]
    for p, ppath, pname in all_plans:
        for spath, label, step in walk_steps(p, ppath):
            tool = step.tool_name
            schema = schemas.get(tool) if isinstance(tool, str) else None
            if tool in CONTROL_STEPS or not isinstance(schema, dict):
                continue
            label = _shown_step(label, step, pname)
            inp = step.input
            if not isinstance(inp, dict):
                continue
            props = schema.get("properties")
            props = props if isinstance(props, dict) else None
            extra = schema.get("additionalProperties", None)
            closed = props is not None and (extra is None or extra is False)
            for key, value in inp.items():
                kpath = (*spath, "input", key)
                if props is not None and key not in props:
                    if closed:
                        report(
                            step,
                            kpath,
                            f"step {label}: `{tool}` has no parameter `{key}`"
                            + (f" (parameters: {', '.join(props)})" if props else ""),
                            did_you_mean(str(key), [k for k in props if k not in inp]),
                            PLAN_UNKNOWN_FIELD,
                        )
                    continue
                sub = props.get(key) if props is not None else None
                if isinstance(sub, dict) and not _has_template(value):
                    if fast_valid(sub, value) and plainly_valid_schema(sub):
                        continue  # jsonschema (its messages) only for a wrong argument
                    import jsonschema

                    try:
                        jsonschema.validate(value, sub)
                    except jsonschema.ValidationError as e:
                        report(
                            step, kpath, f"step {label}: argument `{key}` of `{tool}`: {e.message}"
                        )
                    except jsonschema.SchemaError:
                        pass
            required = schema.get("required")
            for key in required if isinstance(required, list) else []:
                if isinstance(key, str) and key not in inp:
                    report(
                        step,
                        (*spath, "input"),
                        f"step {label}: `{tool}` needs argument `{key}`",
                        code=PLAN_MISSING_FIELD,
                    )
    return problems


def signature_mismatch(
    plan: Plan, schemas: dict[str, dict[str, Any]]
) -> tuple[str, str, str | None, str] | None:
    """The first step compiled from a `.flow` (its ``meta.stage`` set) whose argument names
    cannot match its tool's input schema — a required argument left out, or an argument the
    schema does not name: the `.flow` declared the tool (``extern tool``) with another
    signature than the tool has. ``(step path, the step in the .flow's terms, its meta.source,
    message)``, the message naming the tool and the arguments as the `.flow` writes them; None
    when every step's names fit (values are :func:`check_arguments`' concern).
    docs/reference/errors.md "A tool declared with another signature"."""
    for p in [plan, *plan.plans.values()]:
        for _spath, path, step in walk_steps(p):
            tool = step.tool_name
            schema = schemas.get(tool) if isinstance(tool, str) else None
            meta = step.meta if isinstance(step.meta, dict) else {}
            inp = step.input
            if tool in CONTROL_STEPS or not isinstance(schema, dict) or not meta.get("stage"):
                continue
            if not isinstance(inp, dict):
                continue
            props = schema.get("properties")
            props = props if isinstance(props, dict) else None
            extra = schema.get("additionalProperties", None)
            closed = props is not None and (extra is None or extra is False)
            required = schema.get("required")
            missing = [k for k in (required if isinstance(required, list) else []) if k not in inp]
            unknown = [k for k in inp if closed and props is not None and k not in props]
            if not missing and not unknown:
                continue
            parts = []
            if missing:
                parts.append(f"needs the {_names('argument', missing)}")
            if unknown:
                parts.append(f"has no {_names('parameter', unknown)}")
            params = ", ".join(f"`{k}`" for k in props) if props else "none"
            message = (
                f"`{tool}` {' and '.join(parts)} (its parameters: {params}): the `.flow` "
                f"declares it with another signature than the tool has, so no call of it can "
                f"pass; make its `extern tool {tool}(…)` match the tool"
            )
            source = meta.get("source")
            return (
                path,
                _shown_step(path, step, None),
                source if isinstance(source, str) else None,
                message,
            )
    return None


def _names(what: str, names: list[str]) -> str:
    """``argument `a```, ``arguments `a`, `b```."""
    listed = ", ".join(f"`{n}`" for n in names)
    return f"{what}{'s' if len(names) > 1 else ''} {listed}"


def _has_template(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value
    if isinstance(value, dict):
        return any(_has_template(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_template(v) for v in value)
    return False
