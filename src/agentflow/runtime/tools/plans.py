"""``plan__*`` tools (docs/spec/RUNTIME.md §4, docs/spec/PLAN_IR.md §1): every plan of the plans
directory and every sub-plan, each with its ``input_schema`` as the tool's input and its
``description``.

The plans directory is ``[plans] dir`` of ``flow.toml`` (relative to it), or ``plans/`` beside
``flow.toml`` when that exists. Every ``*.yaml``, ``*.yml``, ``*.json`` and ``*.flow`` file in it
(not recursive) is loaded by the caller's plan loader (the runtime never calls the compiler:
:func:`agentflow.api.build_catalog` passes one that compiles `.flow` files; without one, YAML and
JSON plans load and a `.flow` file is a ConfigError); the plan's ``name`` is the tool name. A sub-plan becomes a tool too when
its name is unambiguous (no other plan or sub-plan has it); an ambiguous sub-plan stays callable
inside its own plan. The executor runs ``plan__*`` calls itself (nested step paths, cycle check):
the catalog entries carry the schema and description and refuse direct calls.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentflow.core.vocabulary import Code
from agentflow.errors import ConfigError, RunError
from agentflow.ir.loader import load_plan
from agentflow.runtime.tools.catalog import Tool, ToolContext

PLAN_SUFFIXES = (".yaml", ".yml", ".json", ".flow")

#: A plan file's path → its loaded :class:`agentflow.ir.models.Plan` (raises PlanLoadError, or
#: CompileError for a `.flow` file).
PlanLoader = Callable[[Path], Any]


def plans_dir(config: Any) -> Path | None:
    """The plans directory of ``config`` (``[plans] dir`` or ``plans/`` beside ``flow.toml``), or
    None when there is none. Raises ConfigError when ``[plans] dir`` names no directory."""
    base = config.base_dir() if hasattr(config, "base_dir") else Path.cwd()
    configured = getattr(getattr(config, "plans", None), "dir", None)
    if configured:
        path = Path(configured)
        path = path if path.is_absolute() else base / path
        if not path.is_dir():
            raise ConfigError(f"{config.where()}: [plans] dir = '{configured}' is not a directory")
        return path
    default = base / "plans"
    if getattr(config, "path", None) is not None and default.is_dir():
        return default
    return None


def load_plan_file(path: Path) -> Any:
    """The default :data:`PlanLoader`: a YAML/JSON plan file as a Plan (PlanLoadError naming
    file:line:col when broken).  A `.flow` file needs the compiler, which the runtime does not
    call: ConfigError saying how to load it."""
    if path.suffix == ".flow":
        raise ConfigError(
            f"{path}: a .flow plan must be compiled first: build the catalog with "
            "agentflow.build_catalog (it compiles .flow plans), or pass load_plan=agentflow.load"
        )

    return load_plan(path)


def load_plans_dir(directory: Path, load_plan: PlanLoader = load_plan_file) -> dict[str, Any]:
    """name → :class:`agentflow.ir.models.Plan` for every plan file in ``directory``, each loaded
    by ``load_plan``.

    Raises what ``load_plan`` raises for a broken file (PlanLoadError / CompileError naming
    file:line:col) and ConfigError when two files define the same plan name. A file
    ``load_plan`` returns None for is not a plan (a `.flow` library of types: left out)."""
    out: dict[str, Any] = {}
    files: dict[str, Path] = {}
    for file in sorted(directory.iterdir()):
        if not file.is_file() or file.suffix not in PLAN_SUFFIXES:
            continue
        plan = load_plan(file)
        if plan is None:
            continue
        if plan.name in out:
            raise ConfigError(
                f"{file}: plan '{plan.name}' is already defined by {files[plan.name]} "
                f"(both would be plan__{plan.name})"
            )
        out[plan.name] = plan
        files[plan.name] = file
    return out


def callable_plans(plans: dict[str, Any], current: Any = None) -> dict[str, Any]:
    """The plans callable as ``plan__NAME``: ``plans`` plus the unambiguous sub-plans of them and
    of ``current`` (the plan being run, whose own sub-plans always win inside it)."""
    out = dict(plans)
    counts: dict[str, int] = {}
    subs: dict[str, Any] = {}
    parents = list(plans.values()) + ([current] if current is not None else [])
    for parent in parents:
        for name, sub in (getattr(parent, "plans", None) or {}).items():
            counts[name] = counts.get(name, 0) + 1
            subs[name] = sub
    for name, sub in subs.items():
        if counts[name] == 1 and name not in out:
            out[name] = sub
    return out


def plan_tool(plan: Any) -> Tool:
    """The catalog entry of ``plan``: ``plan__NAME`` with its input schema and description."""
    name = f"plan__{plan.name}"

    async def direct(args: dict[str, Any], ctx: ToolContext) -> Any:
        raise RunError(
            Code.TOOL_ERROR, f"{name} runs through the executor, not as a plain function"
        )

    schema = plan.input_schema or {"type": "object"}
    return Tool(
        name=name,
        description=plan.description or f"Run the plan '{plan.name}'",
        input_schema=schema,
        func=direct,
        source="plan",
        meta={"file": plan.source_file} if getattr(plan, "source_file", None) else {},
    )


__all__ = [
    "PLAN_SUFFIXES",
    "PlanLoader",
    "callable_plans",
    "load_plan_file",
    "load_plans_dir",
    "plan_tool",
    "plans_dir",
]
