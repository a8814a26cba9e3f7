"""The runtime: executes plans (docs/spec/RUNTIME.md).

Re-exports the executor entry points, the run context, hooks, result and event types, each
loaded on first use (PEP 562, :mod:`agentflow._lazy`): importing a submodule such as
:mod:`agentflow.runtime.config` (``flowc runs show``) loads this package first, and it must not
pay for the executor, the agent loop, the model clients or the tools.
"""

from typing import TYPE_CHECKING

from agentflow._lazy import lazy_exports

if TYPE_CHECKING:
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

_EXPORTS: dict[str, str] = {
    "RunContext": "agentflow.runtime.context",
    "RunOptions": "agentflow.runtime.context",
    "CallbackSink": "agentflow.runtime.events",
    "ConsoleSink": "agentflow.runtime.events",
    "Event": "agentflow.runtime.events",
    "EventBus": "agentflow.runtime.events",
    "JsonlSink": "agentflow.runtime.events",
    "run_plan": "agentflow.runtime.executor",
    "run_plan_sync": "agentflow.runtime.executor",
    "BadPath": "agentflow.runtime.expressions",
    "evaluate": "agentflow.runtime.expressions",
    "evaluate_condition": "agentflow.runtime.expressions",
    "render": "agentflow.runtime.expressions",
    "render_value": "agentflow.runtime.expressions",
    "NO_ANSWER": "agentflow.runtime.hooks",
    "AskRequest": "agentflow.runtime.hooks",
    "Decision": "agentflow.runtime.hooks",
    "GateCall": "agentflow.runtime.hooks",
    "Hooks": "agentflow.runtime.hooks",
    "ToolFailure": "agentflow.runtime.hooks",
    "abort": "agentflow.runtime.hooks",
    "proceed": "agentflow.runtime.hooks",
    "propagate": "agentflow.runtime.hooks",
    "skip": "agentflow.runtime.hooks",
    "substitute": "agentflow.runtime.hooks",
    "RunResult": "agentflow.runtime.result",
}

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

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
