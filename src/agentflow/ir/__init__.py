"""The plan IR: models, templates, loading, validation and canonical dumping
(docs/spec/PLAN_IR.md)."""

from typing import TYPE_CHECKING

from agentflow._lazy import lazy_exports

if TYPE_CHECKING:
    from agentflow.core.vocabulary import CONTROL_STEPS, duration_ms
    from agentflow.ir.dump import dump_plan, fmt_plan_text, plan_to_data
    from agentflow.ir.loader import load_plan, load_plan_data, load_plan_text
    from agentflow.ir.models import (
        AgentInput,
        Backoff,
        Finish,
        Plan,
        Retry,
        Step,
    )
    from agentflow.ir.resolve import resolve_tools
    from agentflow.ir.templates import compile_value, template_refs
    from agentflow.ir.validate import validate_plan

_EXPORTS: dict[str, str] = {
    "dump_plan": "agentflow.ir.dump",
    "fmt_plan_text": "agentflow.ir.dump",
    "plan_to_data": "agentflow.ir.dump",
    "load_plan": "agentflow.ir.loader",
    "load_plan_data": "agentflow.ir.loader",
    "load_plan_text": "agentflow.ir.loader",
    "CONTROL_STEPS": "agentflow.core.vocabulary",
    "AgentInput": "agentflow.ir.models",
    "Backoff": "agentflow.ir.models",
    "Finish": "agentflow.ir.models",
    "Plan": "agentflow.ir.models",
    "Retry": "agentflow.ir.models",
    "Step": "agentflow.ir.models",
    "compile_value": "agentflow.ir.templates",
    "duration_ms": "agentflow.core.vocabulary",
    "template_refs": "agentflow.ir.templates",
    "resolve_tools": "agentflow.ir.resolve",
    "validate_plan": "agentflow.ir.validate",
}

__all__ = [
    "CONTROL_STEPS",
    "AgentInput",
    "Backoff",
    "Finish",
    "Plan",
    "Retry",
    "Step",
    "compile_value",
    "duration_ms",
    "dump_plan",
    "fmt_plan_text",
    "load_plan",
    "load_plan_data",
    "load_plan_text",
    "plan_to_data",
    "resolve_tools",
    "template_refs",
    "validate_plan",
]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
