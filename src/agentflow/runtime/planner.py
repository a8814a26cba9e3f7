"""``plan_and_execute`` and the solver finish (docs/spec/RUNTIME.md §9; seed 002 "Execution model").

A planner-role call authors a plan (YAML) from the goal, the tool catalog (names, descriptions,
input schemas) and the shape cache; the plan is validated exactly like a plan file
(:func:`agentflow.ir.loader.load_plan_text`, then tool resolution against the catalog under the host
policy); it runs through :func:`agentflow.runtime.executor.run_plan`; one solver-role call writes the
report from the collected results.

Replans.  Load errors (after one repair-role fix-up pass, seed 002 "Structured outputs … get one
automatic repair-role fix-up attempt before erroring into the replan loop") and failing steps loop
back to the planner, at most ``max_replans`` times (``[planner] max_replans``, default 2).  The replan
request shows the planner the previous plan, what went wrong, and the result of every step that
succeeded so far, and asks for the complete corrected plan.  Executed steps are preserved and never
re-run: every successful tool call of an earlier attempt is remembered by (tool name, canonical
rendered input), and a memo gate installed in front of the host's gate answers an identical call
in a later attempt with the recorded result (a ``tool_finished`` event with ``skipped: true``), so a
kept step costs nothing and keeps its id for later templates.  The composed plan is therefore always a
complete, self-contained plan file.

Kept model work is free too: each attempt's run happens under a
:class:`~agentflow.runtime.models.memo.ModelMemo` (the ContextVar
:data:`~agentflow.runtime.models.router.model_memo`, set for the run only and reset after it), so a
model request of the plan's steps (agent rounds and repair passes, ``infer`` judges of
``decide``/``filter``) identical to one answered in an EARLIER attempt of the same call — same routed
role/model and same ``cassette.request_key`` — gets that answer back without a provider call.  Such
an answer costs nothing: it is not added to ``router.usage`` (so neither to the run's nor this call's
``usage``), its ``model_call`` event says ``reused: true`` with 0 tokens, and ``by_step`` skips it.
Requests first seen in the current attempt always reach the model (identical ones too; the n-th
repeat of a request gets the n-th earlier answer).  The planner, repair (plan fix-up) and solver
calls of this module are never memo-answered.  ``PlanAttempt.reused_inferences`` counts them.

What does not replan: a hook abort (hard stop: no replan, no solver), an ``exit``/``ask`` failure with
code ``failed`` (the plan's own decision), a model-provider failure of the planner or solver.
Human-authored plans (``flowc run``, ``plan__*`` tools) never go through this module.

Inference cost (seed 002 cost table): 1 planner call per attempt + 1 solver call (+ 1 repair call per
malformed plan), plus whatever the plan's own steps call (agent steps, ``infer`` gates) — in a replan, only the model
requests that differ from earlier attempts' (the rest are reused, above).

Public API::

    await plan_and_execute(goal, context=None, *, max_replans=None, repair_attempts=None,
                           path="plan_and_execute", stack=None, effects=None,
                           **options) -> PlanExecution
    await solve(goal, results, *, router, emit=None, path="solver", stack=None, prompt=None,
                effects=None) -> str

Every model call here goes through :meth:`agentflow.runtime.effects.Effects.chat` (``effects``;
default: an :class:`~agentflow.runtime.effects.Effects` that performs it directly).

``context`` / ``options``: a :class:`~agentflow.runtime.context.RunContext` and its fields as
keywords (``catalog=``, ``router=``, ``config=``, ``workspace=``, ``sinks=``, ``hooks=``,
``plans=``, ``shape_cache=``).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentflow.core.diagnostics import PLAN_UNKNOWN_TOOL, Diagnostic, did_you_mean
from agentflow.core.spans import Span
from agentflow.core.vocabulary import CONTROL_STEPS, Code
from agentflow.errors import (
    ConfigError,
    ErrorInfo,
    FlowError,
    InputError,
    ModelError,
    PlanLoadError,
    model_error_code,
)
from agentflow.ir.loader import load_plan_text
from agentflow.ir.models import Finish
from agentflow.ir.resolve import resolve_tools
from agentflow.ir.validate import walk_steps
from agentflow.runtime.config import no_model_message
from agentflow.runtime.context import RunContext
from agentflow.runtime.effects import Effects
from agentflow.runtime.events import Event, EventBus
from agentflow.runtime.executor import run_plan
from agentflow.runtime.expressions import to_json_value
from agentflow.runtime.hooks import Decision, GateCall, Hooks, maybe_await
from agentflow.runtime.interrupt import stopping
from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.models.memo import ModelMemo
from agentflow.runtime.models.router import model_memo
from agentflow.runtime.result import (
    elapsed_ms,
    empty_usage,
    model_call_fields,
    usage_delta,
    usage_snapshot,
)
from agentflow.runtime.shape_cache import ShapeCache, ShapeRecorder
from agentflow.runtime.tools.catalog import policy_allows

if TYPE_CHECKING:
    from typing import Unpack

    from agentflow.ir.models import Plan
    from agentflow.runtime.config import Config
    from agentflow.runtime.context import RunOptions
    from agentflow.runtime.tools.catalog import Catalog

__all__ = [
    "DEFAULT_MAX_REPLANS",
    "PLAN_AND_EXECUTE",
    "PLAN_AND_EXECUTE_SCHEMA",
    "PlanAttempt",
    "PlanExecution",
    "extract_plan_text",
    "plan_and_execute",
    "planner_tools",
    "solve",
]

PLAN_AND_EXECUTE = "plan_and_execute"
DEFAULT_MAX_REPLANS = 2
DEFAULT_REPAIR_ATTEMPTS = 1
#: Characters of one step result shown to the planner in a replan request.
RESULT_PREVIEW_CHARS = 3000
#: Characters of all results shown to the planner in a replan request.
RESULTS_PREVIEW_TOTAL = 16000

#: The input schema of the ``plan_and_execute`` tool offered to the chat loop.
PLAN_AND_EXECUTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "goal": {
            "type": "string",
            "description": "What the plan must find out or do, stated completely.",
        }
    },
    "required": ["goal"],
}
PLAN_AND_EXECUTE_DESCRIPTION = (
    "Author a multi-step plan over the available tools for a goal, run it, and return a report "
    "written from the collected results. Use it when the goal needs several dependent tool calls."
)

#: Error codes of a run that end plan_and_execute instead of replanning.
NO_REPLAN_CODES = frozenset(
    {Code.FAILED, Code.ABORTED, Code.DEADLINE_EXCEEDED, Code.BUDGET_EXCEEDED}
)

PLANNER_SYSTEM = """\
You are the planner of a workflow runtime. Write a plan — one YAML document — that achieves the \
goal with the tools listed below. Reply with ONLY the YAML (optionally inside one ```yaml fence).

Plan format:
version: 1
name: goal_plan                      # snake_case
steps:
  - id: E0                           # unique, [A-Za-z_][A-Za-z0-9_]*
    tool_name: some__tool            # a listed tool, or a control step
    input: { limit: 10 }             # must match the tool's input schema
  - id: E1
    tool_name: other__tool
    input: { id: "{{ E0.items[0].id }}" }   # templates reference earlier results by step id

Templates: "{{ expr }}" with paths (E0.items[0].id), [*] projection (E0.items[*].id), .count, \
literals, operators, ?? . A string that is exactly one template keeps the value's type. \
`input.goal` is the goal text. Only earlier steps are in scope.
Control steps (tool_name → input): value {value}; decide {when | infer, then: <step>, else: <step>}; \
filter {over, when | infer} (item, index in scope) → {kept, dropped}; map {over, do: <step>, \
concurrency} → list; reduce {over, initial, do: <step>} (item, index, accumulator); \
exit {when, status: ok|error, message}; agent {prompt, output_schema (type object), tools, \
max_iterations} for judgment that needs a model.
Conditions: {value: "{{ E1.count }}", op: eq|ne|lt|le|gt|ge|in|not_in|contains|exists|empty|\
not_empty|matches, to: 0} or {expr: "E1.count > 0"}.
Do not write `finish` or `input_schema`: a solver writes the final report from every step's \
result. Use the observed result shapes to write correct paths; prefer few, direct steps."""

REPAIR_SYSTEM = """\
You fix workflow plans (YAML) so that they load. Change only what the listed problems require; keep \
every step that is not concerned. Reply with ONLY the corrected YAML."""

SOLVER_SYSTEM = """\
You are the solver of a workflow: write its final answer (a concise report) for the goal from the \
collected step results. Do not invent data that is not in them; say what is missing."""


# ---------------------------------------------------------------------------------------------
# Results


@dataclass
class PlanAttempt:
    """One planning attempt.

    ``number``: 1-based. ``plan``: the YAML text that was validated (after repair, if any), or None
    when the planner's reply held no plan. ``problems``: load/validation problems (``file:line:col:
    message``), empty when the plan loaded. ``repaired``: a repair pass produced the plan.
    ``status``/``error``: the run's outcome (None when the plan did not load). ``reused``: tool calls
    answered from earlier attempts' results. ``reused_inferences``: model requests of the plan's
    steps answered from earlier attempts' responses (no provider call, no usage).
    """

    number: int
    plan: str | None = None
    problems: list[str] = field(default_factory=list)
    repaired: bool = False
    status: str | None = None
    error: ErrorInfo | None = None
    reused: int = 0
    reused_inferences: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return {
            "number": self.number,
            "plan": self.plan,
            "problems": list(self.problems),
            "repaired": self.repaired,
            "status": self.status,
            "error": self.error.to_dict() if self.error is not None else None,
            "reused": self.reused,
            "reused_inferences": self.reused_inferences,
        }


@dataclass
class PlanExecution:
    """What :func:`plan_and_execute` returns.

    - ``status``: ``ok`` (the plan ran, the solver wrote ``output``), ``exited`` (an ``exit`` step
      ended it with status ok; the solver still reports), ``error`` (replans exhausted, a
      non-replannable failure, or a model failure), ``aborted`` (a hook hard stop: no solver).
    - ``output``: the solver's report (text) or None.
    - ``error``: an :class:`~agentflow.errors.ErrorInfo` (``code``, ``message``, ``step_path``…)
      or None.
    - ``results``: step id → result, accumulated over attempts (later attempts win).
    - ``attempts``: every :class:`PlanAttempt`; ``replans`` = ``len(attempts) - 1``.
    - ``plan``: the YAML of the last plan that loaded, or None.
    - ``usage``: inferences and tokens of this call (planner, repair, solver and the plan's own).
    - ``duration_ms``: wall time.
    """

    status: str
    output: Any = None
    error: ErrorInfo | None = None
    results: dict[str, Any] = field(default_factory=dict)
    attempts: list[PlanAttempt] = field(default_factory=list)
    plan: str | None = None
    usage: dict[str, Any] = field(default_factory=empty_usage)
    duration_ms: int = 0

    @property
    def ok(self) -> bool:
        """True for ``ok`` and ``exited``."""
        return self.status in ("ok", "exited")

    @property
    def replans(self) -> int:
        """Planning attempts after the first."""
        return max(0, len(self.attempts) - 1)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (``replans`` included)."""
        return {
            "status": self.status,
            "output": self.output,
            "error": self.error.to_dict() if self.error is not None else None,
            "results": self.results,
            "attempts": [a.to_dict() for a in self.attempts],
            "replans": self.replans,
            "plan": self.plan,
            "usage": self.usage,
            "duration_ms": self.duration_ms,
        }


# ---------------------------------------------------------------------------------------------
# Helpers


class _KeepOpen:
    """Forwards events to ``sink`` but ignores ``close`` (run_plan closes its sinks per run)."""

    def __init__(self, sink: Any):
        self.sink = sink

    def handle(self, event: Event) -> None:
        self.sink.handle(event)

    def close(self) -> None:
        return None


def _dumps(value: Any, indent: int | None = None) -> str:

    return json.dumps(to_json_value(value), ensure_ascii=False, indent=indent, default=str)


def _canonical(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return _dumps(value)


def _preview(value: Any, limit: int) -> str:
    text = _dumps(value)
    if len(text) > limit:
        return text[:limit] + f"… [truncated: {len(text)} characters]"
    return text


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)(?:\n```|```\s*$)", re.S)


def extract_plan_text(reply: str | None) -> str:
    """The plan YAML inside a planner reply: the first fenced block (```yaml, ```yml, ```json or a
    bare fence) when there is one, else the whole reply, stripped."""
    text = (reply or "").strip()
    m = _FENCE.search(text)
    if m and m.group(1).lower() in ("", "yaml", "yml", "json"):
        return m.group(2).strip() + "\n"
    return text + "\n" if text else ""


def planner_tools(
    catalog: Catalog | None, plans: Mapping[str, Plan] | None, config: Config | None = None
) -> list[dict[str, Any]]:
    """The tools a planner may use: catalog tools and ``plan__*`` plans allowed by the host policy
    (docs/spec/RUNTIME.md §4), never ``plan_and_execute``; each ``{name, description,
    input_schema}``."""

    allowed = config.policy.allowed_tools if config is not None else None
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    names = catalog.names() if catalog is not None else []
    for name in names:
        tool = catalog.get(name) if catalog is not None else None
        if tool is None or name == PLAN_AND_EXECUTE or not policy_allows(name, allowed):
            continue
        seen.add(name)
        out.append(
            {
                "name": name,
                "description": tool.description,
                "input_schema": tool.input_schema or {"type": "object"},
            }
        )
    for pname, plan in (plans or {}).items():
        name = f"plan__{pname}"
        if name in seen or not policy_allows(name, allowed):
            continue
        out.append(
            {
                "name": name,
                "description": plan.description or f"Run plan {pname}",
                "input_schema": plan.input_schema or {"type": "object"},
            }
        )
    return out


def _tools_text(tools: list[dict[str, Any]]) -> str:
    lines = []
    for t in tools:
        desc = " ".join(str(t["description"] or "").split())
        lines.append(
            f"- {t['name']}: {desc}\n  input schema: "
            + json.dumps(t["input_schema"], ensure_ascii=False, separators=(",", ":"))
        )
    return "\n".join(lines) or "(no tools)"


class _MemoRecorder:
    """Sink pairing tool_started/tool_finished to remember successful calls by (tool, input)."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[str, Any]] = {}
        self.memo: dict[str, Any] = {}

    def handle(self, event: Event) -> None:
        data = event.data
        if event.kind == "tool_started":
            self.pending[event.path] = (str(data.get("tool_name")), data.get("input"))
        elif event.kind == "tool_finished":
            started = self.pending.pop(event.path, None)
            if started is None or data.get("skipped") or data.get("error") or "result" not in data:
                return
            name, args = started
            self.memo[name + "\x00" + _canonical(args)] = data.get("result")

    def close(self) -> None:
        return None


# ---------------------------------------------------------------------------------------------
# Model calls


async def _infer(
    router: Any,
    role: str,
    system: str,
    user: str,
    *,
    emit: Callable[..., Any] | None,
    path: str,
    stack: list[str],
    effects: Effects | None = None,
) -> str:
    """One ``role`` inference at ``path`` through ``effects``
    (:meth:`~agentflow.runtime.effects.Effects.chat`; default: performed directly); emits
    ``model_call``; raises ModelError / ConfigError.  Never answered by a replan's model memo
    (the planner's own calls always reach the model)."""

    client = router.client_for(role)
    t0 = time.monotonic()
    token = model_memo.set(None)
    try:
        resp = await (effects or Effects()).chat(
            client,
            ChatRequest(
                messages=[
                    Message(role="system", content=system),
                    Message(role="user", content=user),
                ]
            ),
            path,
        )
    finally:
        model_memo.reset(token)
    if emit is not None:
        emit("model_call", path, stack, role=role, **model_call_fields(resp, t0))
    return resp.text or ""


async def solve(
    goal: str,
    results: Mapping[str, Any],
    *,
    router: Any,
    emit: Callable[..., Any] | None = None,
    path: str = "solver",
    stack: list[str] | None = None,
    prompt: str | None = None,
    effects: Effects | None = None,
) -> str:
    """The solver finish: ONE solver-role call that writes the report for ``goal`` from
    ``results`` (step id → result, shown as JSON); ``prompt`` adds instructions; the call goes
    through ``effects`` at ``path`` (default: performed directly).

    ``emit(kind, path, stack, **data)`` receives the ``model_call`` event. Returns the report text.
    Raises ModelError when the provider fails (after retries/failover), ConfigError when no model
    is configured.
    """
    user = (
        f"Goal:\n{goal}\n\n"
        + (f"Instructions:\n{prompt}\n\n" if prompt else "")
        + "Results of every step (JSON):\n"
        + _dumps(dict(results), indent=1)
    )
    return await _infer(
        router,
        "solver",
        SOLVER_SYSTEM,
        user,
        emit=emit,
        path=path,
        stack=list(stack or []),
        effects=effects,
    )


# ---------------------------------------------------------------------------------------------
# plan_and_execute


def _validate(
    text: str, file: str, tools: list[dict[str, Any]], catalog: Catalog | None, config: Any
) -> tuple[Plan | None, list[str]]:
    """Load ``text`` like a plan file, then resolve its tools; (plan or None, problems)."""

    if not text.strip():
        return None, [f"{file}: the reply holds no plan (expected one YAML document)"]
    try:
        plan = load_plan_text(text, file)
    except PlanLoadError as e:
        return None, [str(p) for p in e.errors]
    names = {t["name"] for t in tools}
    prefixes = {n.split("__", 1)[0] for n in names if "__" in n}
    if catalog is not None:
        prefixes |= catalog.configured_prefixes & prefixes
    problems = [str(p) for p in resolve_tools(plan, names, prefixes)]
    problems += _exact_names(plan, names, file, problems)
    if PLAN_AND_EXECUTE in _step_tools(plan):
        problems.append(f"{file}: plan_and_execute cannot be called from a plan")
    return (None if problems else plan), problems


def _exact_names(plan: Any, names: set[str], file: str, reported: list[str]) -> list[str]:
    """The planner saw the exact tool list: a step naming any other tool is a load problem, even
    under a configured server prefix (which :func:`resolve_tools` accepts at the server level)."""

    known = set(names) | {f"plan__{plan.name}"} | {f"plan__{n}" for n in plan.plans}
    smap = getattr(plan, "_source_map", None)
    out: list[str] = []
    for spath, label, step in walk_steps(plan):
        tool = step.tool_name
        if tool in CONTROL_STEPS or tool in known or tool == PLAN_AND_EXECUTE:
            continue
        loc = smap.location((*spath, "tool_name")) if smap is not None else Span.at(file)
        msg = str(
            Diagnostic(
                PLAN_UNKNOWN_TOOL,
                f"step {label}: unknown tool '{tool}'",
                loc,
                hint=did_you_mean(tool, known),
            )
        )
        if not any(f"'{tool}'" in r and label in r for r in reported):
            out.append(msg)
    return out


def _step_tools(plan: Any) -> set[str]:

    return {step.tool_name for _, _, step in walk_steps(plan)}


def _results_text(results: Mapping[str, Any]) -> str:
    if not results:
        return "(no step finished)"
    lines: list[str] = []
    total = 0
    for sid, value in results.items():
        chunk = f"- {sid}: {_preview(value, RESULT_PREVIEW_CHARS)}"
        if total + len(chunk) > RESULTS_PREVIEW_TOTAL:
            lines.append(f"- … {len(results) - len(lines)} more results not shown")
            break
        lines.append(chunk)
        total += len(chunk)
    return "\n".join(lines)


def _planner_request(
    goal: str,
    tools: list[dict[str, Any]],
    shapes: str,
    previous: PlanAttempt | None,
    results: Mapping[str, Any],
) -> str:
    parts = [
        f"Goal:\n{goal}",
        "Available tools:\n" + _tools_text(tools),
        "Observed result shapes of tools (JSON Schema summaries from earlier calls):\n"
        + (shapes or "(none observed yet)"),
    ]
    if previous is not None:
        parts.append("Your previous plan:\n```yaml\n" + (previous.plan or "").rstrip() + "\n```")
        if previous.problems:
            parts.append("It did not load:\n" + "\n".join(f"- {p}" for p in previous.problems))
        elif previous.error:
            e = previous.error
            parts.append(f"It failed at step {e.step_path}: [{e.code}] {e.message}")
        parts.append("Results of the steps that succeeded so far:\n" + _results_text(results))
        parts.append(
            "Write the complete corrected plan. Tool calls that already succeeded are not run "
            "again when you keep them unchanged (same tool and input): their recorded results "
            "are reused, so keep those steps and their ids and fix or replace the rest."
        )
    return "\n\n".join(parts)


async def plan_and_execute(
    goal: str,
    context: RunContext | None = None,
    *,
    max_replans: int | None = None,
    repair_attempts: int | None = None,
    path: str = PLAN_AND_EXECUTE,
    stack: list[str] | None = None,
    effects: Effects | None = None,
    **options: Unpack[RunOptions],
) -> PlanExecution:
    """Author a plan for ``goal`` with the planner role, run it, replan on defects, and write the
    report with the solver role (docs/spec/RUNTIME.md §9; see the module docstring for the replan
    design).

    ``context`` / ``options`` (:class:`~agentflow.runtime.context.RunContext` and its fields):

    - ``catalog`` / ``plans``: the tools (and plans callable as ``plan__NAME``) offered to the
      planner, filtered by ``config.policy``.
    - ``router``: a ModelRouter (roles planner, repair, solver and whatever the plan's steps use).
    - ``sinks``: event sinks; they receive the planner/solver ``model_call`` events, ``warning``
      events announcing replans, and every event of every attempt's run.  They are not closed.
    - ``hooks``: the host's gate / on_tool_error / interlocutor, installed on every attempt behind
      the memo gate.
    - ``shape_cache``: a :class:`~agentflow.runtime.shape_cache.ShapeCache` (default: the user's
      cache), read fresh at each attempt and fed by every successful tool call; ``False`` disables it.

    ``max_replans`` / ``repair_attempts``: defaults from ``config.planner`` (2 and 1).  ``path``
    and ``stack``: where this call sits in the events (``ask/agent.2/plan_and_execute`` in
    ``flowc ask``).  ``effects``: what the planner's, repairs' and solver's model calls go
    through (:meth:`~agentflow.runtime.effects.Effects.chat`, at ``PATH/planner.N``,
    ``PATH/repair.N``, ``PATH/solver``); default: performed directly.

    Never raises for a failing plan or model: the outcome is in the returned :class:`PlanExecution`.
    Raises ConfigError when no model is configured at all (``router`` None).
    """

    ctx = RunContext.of(context, options)
    catalog, router, config = ctx.catalog, ctx.router, ctx.config
    if router is None:
        raise ConfigError(no_model_message(config, "planner"))
    if max_replans is None:
        max_replans = config.planner.max_replans if config is not None else DEFAULT_MAX_REPLANS
    if repair_attempts is None:
        repair_attempts = (
            config.planner.repair_attempts if config is not None else DEFAULT_REPAIR_ATTEMPTS
        )
    cache = (ShapeCache() if ctx.shape_cache is None else ctx.shape_cache) or None
    stack = list(stack or [PLAN_AND_EXECUTE])
    kept = [_KeepOpen(s) for s in ctx.sinks]
    bus = EventBus(kept)
    emit = bus.emit
    before = usage_snapshot(router)
    t0 = time.monotonic()
    plans = ctx.callable_plans
    if catalog is not None:
        try:
            await catalog.prepare(None)  # the MCP servers' tools are listed to the planner too
        except FlowError as exc:
            emit("warning", path, stack, message=f"some MCP tools are unavailable: {exc}")
    tools = planner_tools(catalog, plans, config)
    host = ctx.hooks
    memo: dict[str, Any] = {}
    models = ModelMemo()  # kept model work (see the module docstring)
    results: dict[str, Any] = {}
    attempts: list[PlanAttempt] = []
    last_plan: str | None = None

    def done(status: str, output: Any = None, error: ErrorInfo | None = None) -> PlanExecution:
        return PlanExecution(
            status=status,
            output=output,
            error=error,
            results=dict(results),
            attempts=attempts,
            plan=last_plan,
            usage=usage_delta(router, before),
            duration_ms=elapsed_ms(t0),
        )

    def model_failure(exc: FlowError, what: str) -> PlanExecution:
        if isinstance(exc, ModelError):
            code = model_error_code(exc)
        else:
            code = Code.VALIDATION
        return done("error", error=ErrorInfo(code, f"{what}: {exc}", path))

    reused = {"n": 0}

    async def memo_gate(call: GateCall) -> Decision | None:
        key = call.tool_name + "\x00" + _canonical(_json_input(call.input))
        if key in memo:
            reused["n"] += 1
            return Decision("skip", memo[key])
        if host.gate is not None:
            decision: Decision | None = await maybe_await(host.gate(call))
            return decision
        return None

    previous: PlanAttempt | None = None
    for number in range(1, max_replans + 2):
        attempt = PlanAttempt(number)
        attempts.append(attempt)
        if previous is not None:
            reason = (
                "; ".join(previous.problems[:3])
                if previous.problems
                else (
                    f"[{previous.error.code}] {previous.error.message}"
                    if previous.error is not None
                    else "[None] None"
                )
            )
            emit(
                "warning", path, stack, message=f"replan {number - 1}: {reason}", replan=number - 1
            )
        shapes = cache.describe([t["name"] for t in tools]) if cache is not None else ""
        request = _planner_request(goal, tools, shapes, previous, results)
        file = f"<plan attempt {number}>"
        try:
            reply = await _infer(
                router,
                "planner",
                PLANNER_SYSTEM,
                request,
                emit=emit,
                path=f"{path}/planner.{number}",
                stack=stack,
                effects=effects,
            )
        except (ModelError, ConfigError) as exc:
            return model_failure(exc, "planner model call failed")
        text = extract_plan_text(reply)
        plan, problems = _validate(text, file, tools, catalog, config)
        for _ in range(max(0, repair_attempts) if problems else 0):
            try:
                fixed = await _infer(
                    router,
                    "repair",
                    REPAIR_SYSTEM,
                    "Plan:\n```yaml\n"
                    + text.rstrip()
                    + "\n```\n\nProblems:\n"
                    + "\n".join(f"- {p}" for p in problems)
                    + "\n\nAvailable tools:\n"
                    + _tools_text(tools),
                    emit=emit,
                    path=f"{path}/repair.{number}",
                    stack=stack,
                    effects=effects,
                )
            except (ModelError, ConfigError) as exc:
                emit("warning", path, stack, message=f"plan repair failed: {exc}")
                break
            fixed_text = extract_plan_text(fixed)
            fixed_plan, fixed_problems = _validate(fixed_text, file, tools, catalog, config)
            if not fixed_problems:
                text, plan, problems, attempt.repaired = fixed_text, fixed_plan, [], True
                break
        attempt.plan = text or None
        if problems or plan is None:  # (no problems means a plan)
            attempt.problems = problems
            previous = attempt
            continue
        last_plan = text
        plan.finish = Finish(mode="silent")  # the solver below is the finish
        recorder = _MemoRecorder()
        run_sinks: list[Any] = [*kept, recorder]
        if cache is not None:
            run_sinks.append(ShapeRecorder(cache))
        reused["n"] = 0
        models.start_attempt()
        memo_token = model_memo.set(models)
        try:
            hooks = Hooks(
                gate=memo_gate, on_tool_error=host.on_tool_error, interlocutor=host.interlocutor
            )
            run = await run_plan(
                plan,
                {"goal": goal},
                ctx,
                effects=effects,
                sinks=run_sinks,
                hooks=hooks,
                plans=plans,
            )
        except InputError as exc:
            attempt.problems = [f"{file}: {exc}"]
            previous = attempt
            continue
        finally:
            model_memo.reset(memo_token)
        attempt.reused = reused["n"]
        attempt.reused_inferences = models.reused
        memo.update(recorder.memo)
        results.update(run.results)
        attempt.status, attempt.error = run.status, run.error
        if run.status in ("aborted", "cancelled"):
            return done("aborted", error=run.error)
        if run.status == "error" and (signal_name := stopping()) is not None:
            # the plan failed as the run was asked to stop: interrupted, not replanned
            stopped = ErrorInfo(Code.ABORTED, f"interrupted by {signal_name}", path)
            return done("aborted", error=stopped)
        if run.status == "error":
            if run.error is not None and run.error.code in NO_REPLAN_CODES:
                return done("error", error=run.error)
            previous = attempt
            continue
        try:
            report = await solve(
                goal,
                results,
                router=router,
                emit=emit,
                path=f"{path}/solver",
                stack=stack,
                effects=effects,
            )
        except (ModelError, ConfigError) as exc:
            return model_failure(exc, "solver model call failed")
        return done(run.status, output=report)

    last = attempts[-1]
    if last.problems:
        error = ErrorInfo(
            Code.VALIDATION,
            f"the planner gave no valid plan in {len(attempts)} attempt(s): "
            + "; ".join(last.problems[:5]),
            path,
        )
    else:
        e = last.error or ErrorInfo(Code.TOOL_ERROR, "")
        error = ErrorInfo(
            e.code,
            f"the plan still failed after {len(attempts) - 1} replan(s): {e.message}",
            e.step_path or path,
        )
    return done("error", error=error)


def _json_input(value: Any) -> Any:

    try:
        return to_json_value(value)
    except Exception:  # noqa: BLE001 - keying only
        return repr(value)
