"""``flowc ask --durable``: a question as a durable run like any other (docs/durable.md "Durable
questions"), so ``flowc runs``, ``runs show``, ``resume`` and ``cancel`` work on it.

The run records the plan :data:`ASK_PLAN_TEXT` (plan ``ask``, one step ``ask``: what ``flowc
runs`` lists and ``runs show`` names), the question and ``max_iterations`` as its input, and in
its spec ``ask``: the catalog's source — the canonical YAML of every plan callable as
``plan__NAME`` as the starting process compiled them (a resumed process offers the same tools
even after the plans directory changed, and needs no compiler).  Its root does not run that
step: :func:`run_ask` answers the question with :func:`agentflow.runtime.chat.ask` (the agent
loop at step path ``ask``) with the run's durable effects, so every model call is operation
``ask/model:chat#N`` and every tool call ``ask/agent.R/TOOL/tool:TOOL#N`` (the planner's of a
``plan_and_execute`` under ``ask/agent.R/plan_and_execute/…``), on either engine.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from agentflow.core.vocabulary import Code
from agentflow.errors import ErrorInfo
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.chat import ASK_PATH, AskResult, ask
from agentflow.runtime.durable.shown import ASK_PLAN_FILE
from agentflow.runtime.result import RunResult, RunStatus, as_usage

if TYPE_CHECKING:
    from agentflow.ir.models import Plan
    from agentflow.runtime.durable.engine import Runtime

__all__ = [
    "ASK_PLAN_FILE",
    "ASK_PLAN_TEXT",
    "ask_plan",
    "ask_result",
    "ask_spec",
    "recorded_plans",
    "run_ask",
]

#: The plan a durable question records (its name is what ``flowc runs`` lists).
ASK_PLAN_TEXT = """\
version: 1
name: ask
description: >-
  flowc ask --durable: the question is answered by the chat model's agent loop at step path
  `ask` (runtime/chat.py) with the run's durable effects; this step is never run as a step
input_schema:
  type: object
  properties:
    question: {type: string}
    max_iterations: {type: [integer, "null"], minimum: 1}
  required: [question]
steps:
  - id: ask
    tool_name: agent
    input:
      prompt: "{{ input.question }}"
      model: chat
      output_schema: {type: object, properties: {answer: {type: string}}, required: [answer]}
"""

#: AskResult status → the run's status.
_STATUS: dict[str, RunStatus] = {
    "ok": "ok",
    "budget": "error",
    "error": "error",
    "aborted": "aborted",
}


@cache
def ask_plan() -> Plan:
    """:data:`ASK_PLAN_TEXT` loaded (once per process)."""
    return load_plan_text(ASK_PLAN_TEXT, ASK_PLAN_FILE)


def ask_spec(plans: dict[str, str]) -> dict[str, Any]:
    """The ``ask`` entry of a durable question's spec: ``plans``, name → canonical YAML of each
    plan callable as ``plan__NAME`` (the catalog's plans directory, compiled)."""
    return {"plans": dict(plans)}


def recorded_plans(spec: dict[str, Any]) -> dict[str, Plan] | None:
    """The callable plans a durable question recorded (name → Plan), or None for a run that is
    not a question."""
    entry = spec.get("ask")
    if not isinstance(entry, dict):
        return None
    plans = entry.get("plans") or {}
    return {name: load_plan_text(text, f"<plan {name}>") for name, text in plans.items()}


async def run_ask(rt: Runtime) -> RunResult:
    """The root of a durable question: :func:`~agentflow.runtime.chat.ask` with the run's
    context and durable effects; its :class:`~agentflow.runtime.chat.AskResult` as the run's
    result — ``output`` the answer, ``results["ask"]`` the rounds, tools called and solver
    reports, status ``ok``, ``error`` (no answer within ``max_iterations``, a model failure,
    a refusal) or ``aborted``."""
    data = rt.spec.get("input") or {}
    out = await ask(
        str(data.get("question") or ""),
        rt.ctx,
        max_iterations=data.get("max_iterations"),
        effects=rt.effects,
    )
    error = out.error
    if out.status != "ok" and error is None:
        error = ErrorInfo(Code.FAILED, f"the question ended {out.status}", ASK_PATH)
    return RunResult(
        status=_STATUS.get(out.status, "error"),
        output=out.answer,
        error=error,
        results={
            "ask": {
                "status": out.status,
                "rounds": out.rounds,
                "tools_called": out.tools_called,
                "reports": out.reports,
            }
        },
        usage=as_usage(out.usage),
        duration_ms=out.duration_ms,
    )


def ask_result(result: RunResult) -> AskResult:
    """The :class:`~agentflow.runtime.chat.AskResult` of a durable question's run result (what
    :func:`run_ask` made of it, read back; ``run_id`` kept)."""
    record = result.results.get("ask") if isinstance(result.results, dict) else None
    record = record if isinstance(record, dict) else {}
    status = record.get("status")
    if status not in ("ok", "budget", "error", "aborted"):
        status = "ok" if result.status == "ok" else result.status
        status = "aborted" if status == "cancelled" else status  # an AskResult's word for it
        status = status if status in ("ok", "error", "aborted") else "error"
    return AskResult(
        status=str(status),
        answer=result.output if isinstance(result.output, str) else None,
        rounds=int(record.get("rounds") or 0),
        tools_called=list(record.get("tools_called") or []),
        reports=[str(r) for r in record.get("reports") or []],
        error=result.error,
        usage=dict(result.usage or {}),
        duration_ms=result.duration_ms,
        run_id=result.run_id,
    )
