"""agentflow: a typed language for agent workflows (`.flow`), its compiler and its runtime.

The embedding API (each function documented in :mod:`agentflow.api`)::

    from agentflow import check, compile_flow, load, run, run_sync

    result = check("bug-triage.flow")            # CheckResult with .diagnostics
    plan_yaml = compile_flow("bug-triage.flow").to_yaml()
    outcome = run_sync("bug-triage.flow", {"title": "…", "body": "…"}, workspace="src")
    print(outcome.status, outcome.output)
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

__version__ = "0.1.0"

__all__ = [
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
