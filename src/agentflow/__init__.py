"""agentflow: a typed language for agent workflows (`.flow`), its compiler and its runtime.

The embedding API (each function documented in :mod:`agentflow.api`)::

    from agentflow import check, compile_flow, load, run, run_sync

    result = check("bug-triage.flow")            # CheckResult with .diagnostics
    plan_yaml = compile_flow("bug-triage.flow").to_yaml()
    outcome = run_sync("bug-triage.flow", {"title": "…", "body": "…"}, workspace="src")
    print(outcome.status, outcome.output)

Hooks and events (RUNTIME.md §7–8)::

    from agentflow import Hooks, CallbackSink, skip, substitute, abort, NO_ANSWER

    hooks = Hooks()
    hooks.install_gate(lambda call: skip({"dry_run": True}) if call.tool_name.endswith("delete")
                       else None)                      # proceed / skip(value) / abort(message)
    hooks.install_on_tool_error(lambda f: substitute([]))  # propagate / substitute / abort
    hooks.install_interlocutor(lambda req: "yes")       # answer an `ask`, or NO_ANSWER
    run_sync("plan.yaml", {}, hooks=hooks, sinks=[CallbackSink(print)])
"""

from agentflow.api import (
    CompiledFlow,
    CompileError,
    check,
    compile_flow,
    compile_source,
    load,
    run,
    run_sync,
)
from agentflow.errors import (
    ConfigError,
    FlowError,
    InputError,
    ModelError,
    PlanLoadError,
    RunError,
    SourceError,
)
from agentflow.runtime.chat import AskResult, ask
from agentflow.runtime.events import CallbackSink, ConsoleSink, Event, JsonlSink
from agentflow.runtime.executor import (
    NO_ANSWER,
    AskRequest,
    Decision,
    GateCall,
    Hooks,
    ToolFailure,
    abort,
    proceed,
    propagate,
    skip,
    substitute,
    terminal_interlocutor,
)
from agentflow.runtime.planner import PlanExecution, plan_and_execute
from agentflow.runtime.result import RunResult
from agentflow.runtime.tools.catalog import Catalog, Tool, ToolContext, build_catalog
from agentflow.runtime.tools.user import tool

__version__ = "0.1.0"

__all__ = [
    "AskResult",
    "PlanExecution",
    "ask",
    "plan_and_execute",
    "NO_ANSWER",
    "AskRequest",
    "CallbackSink",
    "ConsoleSink",
    "Decision",
    "Event",
    "GateCall",
    "Hooks",
    "JsonlSink",
    "RunResult",
    "Catalog",
    "Tool",
    "ToolContext",
    "build_catalog",
    "tool",
    "ToolFailure",
    "abort",
    "proceed",
    "propagate",
    "skip",
    "substitute",
    "terminal_interlocutor",
    "CompileError",
    "CompiledFlow",
    "ConfigError",
    "FlowError",
    "InputError",
    "ModelError",
    "PlanLoadError",
    "RunError",
    "SourceError",
    "check",
    "compile_flow",
    "compile_source",
    "load",
    "run",
    "run_sync",
]
