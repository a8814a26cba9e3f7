"""The plan IR: models, templates, loading, validation and canonical dumping (PLAN_IR.md)."""

from agentflow.ir.dump import dump_plan, fmt_plan_text, plan_to_data
from agentflow.ir.loader import load_plan, load_plan_data, load_plan_text
from agentflow.ir.models import (
    CONTROL_STEPS,
    AgentInput,
    Backoff,
    Finish,
    Plan,
    Retry,
    Step,
)
from agentflow.ir.templates import compile_value, duration_ms, template_refs
from agentflow.ir.validate import resolve_tools, validate_plan

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
