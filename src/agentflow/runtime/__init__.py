"""The runtime: executes plans (docs/spec/RUNTIME.md).

Re-exports the executor entry points, the run context, hooks, result and event types.  Heavy
submodules (the agent loop, model clients, tools) are imported lazily by the executor.
"""

from agentflow.runtime.context import RunContext, RunOptions
from agentflow.runtime.events import (
    CallbackSink,
    ConsoleSink,
    Event,
    EventBus,
    JsonlSink,
)
from agentflow.runtime.executor import run_plan, run_plan_sync
from agentflow.runtime.expressions import (
    BadPath,
    evaluate,
    evaluate_condition,
    render,
    render_value,
)
from agentflow.runtime.hooks import (
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
)
from agentflow.runtime.result import RunResult

__all__ = [
    "NO_ANSWER",
    "AskRequest",
    "BadPath",
    "CallbackSink",
    "ConsoleSink",
    "Decision",
    "Event",
    "EventBus",
    "GateCall",
    "Hooks",
    "JsonlSink",
    "RunContext",
    "RunOptions",
    "RunResult",
    "ToolFailure",
    "abort",
    "evaluate",
    "evaluate_condition",
    "proceed",
    "propagate",
    "render",
    "render_value",
    "run_plan",
    "run_plan_sync",
    "skip",
    "substitute",
]
