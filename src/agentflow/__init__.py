"""agentflow: a typed language for agent workflows (`.flow`), its compiler and its runtime.

The embedding API (each function documented in :mod:`agentflow.api`)::

    from agentflow import check, compile_flow, graph, load, report, run, run_sync

    result = check("bug-triage.flow")            # CheckResult with .diagnostics
    plan_yaml = compile_flow("bug-triage.flow").to_yaml()
    mermaid = graph("bug-triage.flow")            # or format="dot"; run="trace.jsonl" colours it
    outcome = run_sync("bug-triage.flow", {"title": "…", "body": "…"}, workspace="src")
    print(outcome.status, outcome.output)
    report = run_tests(["examples/"])              # the `test` blocks; report.summary()
    # in async code: await run(…) (run_sync runs its own loop), await run_tests_async([…])

Hooks and events (docs/spec/RUNTIME.md §7–8)::

    from agentflow import Hooks, CallbackSink, skip, substitute, abort, NO_ANSWER

    hooks = Hooks()
    hooks.install_gate(lambda call: skip({"dry_run": True}) if call.tool_name.endswith("delete")
                       else None)                      # proceed / skip(value) / abort(message)
    hooks.install_on_tool_error(lambda f: substitute([]))  # propagate / substitute / abort
    hooks.install_interlocutor(lambda req: "yes")       # answer an `ask`, or NO_ANSWER
    run_sync("plan.yaml", {}, hooks=hooks, sinks=[CallbackSink(print)])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentflow._lazy import lazy_exports
from agentflow.core.version import __version__ as __version__

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name loads on first use
    from agentflow.api import (
        CompiledFlow,
        CompileError,
        PlanCheck,
        answer_run,
        answer_run_sync,
        build_catalog,
        check,
        check_plan,
        compile_flow,
        compile_source,
        evaluate,
        graph,
        load,
        report,
        resume_run,
        run,
        run_sync,
        run_tests,
        run_tests_async,
    )
    from agentflow.errors import (
        ConfigError,
        ErrorInfo,
        FlowError,
        InputError,
        ModelError,
        PlanLoadError,
        RunError,
        SourceError,
    )
    from agentflow.evals.report import EvalReport
    from agentflow.flowtest import TestOutcome, TestReport
    from agentflow.runtime.chat import AskResult, ask
    from agentflow.runtime.context import RunContext
    from agentflow.runtime.events import CallbackSink, ConsoleSink, Event, JsonlSink
    from agentflow.runtime.hooks import (
        NO_ANSWER,
        AskRequest,
        Decision,
        GateCall,
        Hooks,
        SleepRequest,
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
    from agentflow.runtime.tools.catalog import Catalog, Tool, ToolContext
    from agentflow.runtime.tools.user import tool

#: Public name → the module that defines it.  Loading is lazy (PEP 562) so that `flowc check`
#: and `import agentflow.compiler` do not pay for the runtime, pydantic, jsonschema or httpx.
_EXPORTS: dict[str, str] = {
    "CompiledFlow": "agentflow.api",
    "CompileError": "agentflow.api",
    "PlanCheck": "agentflow.api",
    "check_plan": "agentflow.api",
    "check": "agentflow.api",
    "compile_flow": "agentflow.api",
    "compile_source": "agentflow.api",
    "graph": "agentflow.api",
    "report": "agentflow.api",
    "load": "agentflow.api",
    "run": "agentflow.api",
    "run_sync": "agentflow.api",
    "resume_run": "agentflow.api",
    "answer_run": "agentflow.api",
    "answer_run_sync": "agentflow.api",
    "run_tests": "agentflow.api",
    "run_tests_async": "agentflow.api",
    "evaluate": "agentflow.api",
    "EvalReport": "agentflow.evals.report",
    "TestOutcome": "agentflow.flowtest",
    "TestReport": "agentflow.flowtest",
    "ConfigError": "agentflow.errors",
    "ErrorInfo": "agentflow.errors",
    "FlowError": "agentflow.errors",
    "InputError": "agentflow.errors",
    "ModelError": "agentflow.errors",
    "PlanLoadError": "agentflow.errors",
    "RunError": "agentflow.errors",
    "SourceError": "agentflow.errors",
    "AskResult": "agentflow.runtime.chat",
    "ask": "agentflow.runtime.chat",
    "CallbackSink": "agentflow.runtime.events",
    "ConsoleSink": "agentflow.runtime.events",
    "Event": "agentflow.runtime.events",
    "JsonlSink": "agentflow.runtime.events",
    "NO_ANSWER": "agentflow.runtime.hooks",
    "AskRequest": "agentflow.runtime.hooks",
    "Decision": "agentflow.runtime.hooks",
    "GateCall": "agentflow.runtime.hooks",
    "Hooks": "agentflow.runtime.hooks",
    "SleepRequest": "agentflow.runtime.hooks",
    "ToolFailure": "agentflow.runtime.hooks",
    "abort": "agentflow.runtime.hooks",
    "proceed": "agentflow.runtime.hooks",
    "propagate": "agentflow.runtime.hooks",
    "skip": "agentflow.runtime.hooks",
    "substitute": "agentflow.runtime.hooks",
    "terminal_interlocutor": "agentflow.runtime.hooks",
    "RunContext": "agentflow.runtime.context",
    "PlanExecution": "agentflow.runtime.planner",
    "plan_and_execute": "agentflow.runtime.planner",
    "RunResult": "agentflow.runtime.result",
    "Catalog": "agentflow.runtime.tools.catalog",
    "Tool": "agentflow.runtime.tools.catalog",
    "ToolContext": "agentflow.runtime.tools.catalog",
    "build_catalog": "agentflow.api",
    "tool": "agentflow.runtime.tools.user",
}


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
    "SleepRequest",
    "RunContext",
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
    "PlanCheck",
    "check_plan",
    "ConfigError",
    "ErrorInfo",
    "FlowError",
    "InputError",
    "ModelError",
    "PlanLoadError",
    "RunError",
    "SourceError",
    "check",
    "compile_flow",
    "compile_source",
    "graph",
    "report",
    "load",
    "run",
    "run_sync",
    "resume_run",
    "answer_run",
    "answer_run_sync",
    "run_tests",
    "run_tests_async",
    "TestOutcome",
    "TestReport",
    "evaluate",
    "EvalReport",
]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
