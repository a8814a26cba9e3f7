"""The plan executor core (docs/spec/RUNTIME.md §1, §2, §7, §8; docs/spec/PLAN_IR.md §2–8).

``validate input → run steps sequentially → finish``.  The executor is asyncio-based: ``map`` with
``concurrency > 1`` and ``parallel`` run bodies concurrently; everything else is sequential.
Control steps (docs/spec/PLAN_IR.md §5) are intercepted and run by their handlers
(:mod:`agentflow.runtime.control`, :mod:`agentflow.runtime.agent_step`); ordinary steps go
through the catalog, behind the execution gate (docs/spec/RUNTIME.md §7,
:mod:`agentflow.runtime.hooks`), bounded by their timeout and the deadline
(:mod:`agentflow.runtime.dispatch`). Every effect (tool call, model call, question, backoff sleep,
clock, jitter, unit of concurrent work) goes through one method of
:class:`~agentflow.runtime.effects.Effects`.

Public API::

    await run_plan(plan, input=None, context=None, **options) -> RunResult
    run_plan_sync(plan, input=None, context=None, **options) -> RunResult  # from sync code

``context`` is a :class:`~agentflow.runtime.context.RunContext`; ``options`` are its fields as
keywords (``catalog=``, ``router=``, ``config=``, ``workspace=``, ``sinks=``, ``hooks=``,
``plans=``), overriding the context's.

Step paths follow docs/spec/PLAN_IR.md §7: ``E3``, ``E3/then``, ``E3/do.2`` (map/reduce item 2,
0-based like ``index``), ``E3/<branch>`` (parallel), ``E3/do.2/E10`` (a step of a called plan),
``E1/agent.2/linear__list_issues`` (built by the agent loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentflow.core.vocabulary import Code, duration_ms
from agentflow.errors import (
    Cancelled,
    ErrorInfo,
    FlowError,
    InputError,
    InputMismatch,
    ModelError,
    RunError,
)
from agentflow.ir.mismatch import mismatch_lines
from agentflow.ir.schemas import whole_numbers
from agentflow.runtime import dispatch
from agentflow.runtime.agent import message_fields
from agentflow.runtime.agent_step import is_outlined, run_agent_step
from agentflow.runtime.context import RunContext
from agentflow.runtime.control import (
    HANDLERS,
    Announce,
    ControlHandler,
    ExitError,
    ExitOk,
    cancelled_message,
)
from agentflow.runtime.effects import Effects, start_virtual
from agentflow.runtime.events import Event, EventBus
from agentflow.runtime.expressions import (
    event_value,
    refuse_too_deep,
    render_value,
    to_json_value,
    to_text,
)
from agentflow.runtime.extract import json_number_problem, json_value_problem

# The host-hook API, re-exported: ``from agentflow.runtime.executor import Hooks, skip, …`` keeps
# working (its home is agentflow.runtime.hooks).
from agentflow.runtime.hooks import (
    NO_ANSWER,
    AskRequest,
    Decision,
    GateCall,
    Hooks,
    RunAborted,
    ToolFailure,
    abort,
    default_interlocutor,
    proceed,
    propagate,
    skip,
    substitute,
    terminal_interlocutor,
)
from agentflow.runtime.interrupt import (
    EvalWatch,
    end_offload_watch,
    end_watch,
    offload_watch,
    outermost_run,
    outside_cancel,
    run,
    run_ended,
    stop_request,
    until_stopped,
    use_offload_watch,
    use_watch,
    watching,
)
from agentflow.runtime.models.base import JUDGE_SYSTEM_PROMPT, ChatRequest, Message
from agentflow.runtime.models.budget import budget_from, pop_budget, push_budget
from agentflow.runtime.models.router import forward_model_events
from agentflow.runtime.result import (
    RunResult,
    RunStatus,
    StepUsage,
    as_usage,
    elapsed_ms,
    model_call_fields,
    running_step_usage,
    usage_delta,
    usage_snapshot,
)
from agentflow.runtime.tools.catalog import RunServices, current_run
from agentflow.runtime.where import (
    SEP,
    Place,
    in_source_terms,
    let_of,
    lets_by_name,
    quote_written,
    quotes_expressions,
    written_place,
    written_steps,
)

if TYPE_CHECKING:
    from typing import Unpack

    from agentflow.ir.models import Plan, Step
    from agentflow.runtime.config import Config
    from agentflow.runtime.context import RunOptions
    from agentflow.runtime.models.budget import Budget

__all__ = [
    "CONTROL",
    "NO_ANSWER",
    "AskRequest",
    "Decision",
    "Executor",
    "ExitError",
    "Frame",
    "GateCall",
    "Hooks",
    "RunAborted",
    "RunContext",
    "ToolFailure",
    "abort",
    "default_interlocutor",
    "proceed",
    "propagate",
    "run_plan",
    "run_plan_sync",
    "skip",
    "substitute",
    "terminal_interlocutor",
    "validate_input",
]

#: Control-step name → handler (docs/spec/PLAN_IR.md §5).
CONTROL: dict[str, ControlHandler] = {**HANDLERS, "agent": run_agent_step}

#: a durable step's ``step_finished`` data key: fill in its ``usage`` when the event goes out
_USAGE_WHEN_SENT = "_usage_when_sent"
#: Events that name their step themselves (``Executor.run_step``).
_STEP_EVENTS = frozenset({"step_started", "step_finished", "run_started", "run_finished"})


# ---------------------------------------------------------------------------------------------
# Small helpers


_DURATIONS: dict[str, float] = {}


def _duration_s(value: Any) -> float | None:
    """A duration text (``30s``) or a number of seconds → seconds; None stays None."""
    if value is None:
        return None
    if type(value) is str:
        cached = _DURATIONS.get(value)
        if cached is not None:
            return cached
    if isinstance(value, bool):
        raise RunError(Code.VALIDATION, f"invalid duration {value!r}")
    if isinstance(value, int | float):
        return float(value)

    try:
        secs = duration_ms(str(value)) / 1000.0
        if type(value) is str:
            _DURATIONS[value] = secs
        return secs
    except ValueError as exc:
        raise RunError(Code.VALIDATION, str(exc)) from None


@dataclass(slots=True)
class _StepInfo:
    """What the executor derives once per step and run (hot-path cache)."""

    step: Step
    tool: str
    handler: ControlHandler | None
    compiled: Any
    select: Any
    timeout_s: float | None
    attempts: int
    on: frozenset[str]
    initial: float
    factor: float
    cap: float
    source: str | None
    id: str | None
    stage: str | None = None  # meta.stage: the `.flow` stage the step belongs to


_NO_CODES: frozenset[str] = frozenset()


def _not_loaded(what: str, path: str | None) -> RunError:
    """The error for a plan that did not go through the loader (its templates are not parsed)."""
    return RunError(
        Code.VALIDATION,
        f"{what} has no compiled templates: run plans made by agentflow.load(), "
        "agentflow.ir.loader.load_plan() or load_plan_data()",
        path,
    )


_YES = re.compile(r"^\W*(yes|true)\b", re.I)
_NO = re.compile(r"^\W*(no|false)\b", re.I)


def _parse_yes_no(text: str | None) -> bool | None:
    if not text:
        return None
    t = text.strip()
    try:
        data = json.loads(t)
        if isinstance(data, bool):
            return data
        if isinstance(data, dict):
            for key in ("answer", "verdict", "result", "passed"):
                v = data.get(key)
                if isinstance(v, bool):
                    return v
                if isinstance(v, str):
                    return _parse_yes_no(v)
    except ValueError:
        pass
    if _YES.match(t):
        return True
    if _NO.match(t):
        return False
    return None


# ---------------------------------------------------------------------------------------------
# Run state


@dataclass(slots=True)
class Frame:
    """One plan activation: the plan, its call stack and path prefix, its deadline."""

    plan: Plan
    stack: list[str]
    prefix: str  # "" at top level, "E3/do.2" inside a called plan
    deadline_at: float | None  # an Effects.now() reading, or None
    root_plans: dict[str, Plan]
    #: the deadline ``deadline_at`` comes from, as written: the plan's own, or a caller's that
    #: ends sooner (a called plan without one runs under its caller's)
    deadline_written: str | None = None

    def path(self, step_id: str) -> str:
        """The step path of step ``step_id`` of this plan."""
        return f"{self.prefix}/{step_id}" if self.prefix else step_id

    @property
    def deadline_text(self) -> str:
        """The ``deadline`` that ends this activation, as written (for messages)."""
        return str(self.deadline_written or self.plan.deadline or "deadline")


@dataclass(slots=True)
class _Call:
    """The tool call of a step's latest attempt, for ``on_tool_error`` after a timeout."""

    name: str | None = None
    args: Any = None
    retried: frozenset[str] = frozenset()


#: Events written right after a durable operation at their path (left out when it was replayed).
AFTER_OPERATION = frozenset({"tool_finished", "model_call", "step_finished"})


class Executor:
    """Runs the steps of one run.  Made by :func:`run_plan`, one per run.

    ``ctx``: the run's context.  ``bus``: where events go.  ``effects``: the run's effects
    (:class:`~agentflow.runtime.effects.Effects`).  ``plans``: the plans callable as
    ``plan__NAME`` besides the plan's own sub-plans.  ``step_usage``: per-step model usage.
    """

    def __init__(
        self,
        ctx: RunContext,
        bus: EventBus,
        *,
        effects: Effects | None = None,
        step_usage: StepUsage | None = None,
    ):
        self.ctx = ctx
        self.bus = bus
        self.effects = effects if effects is not None else Effects()
        self.effects.bind(self)
        self.plans: dict[str, Plan] = ctx.callable_plans
        self.step_usage = step_usage
        self.ask_lock = asyncio.Lock()
        self._info: dict[int, _StepInfo] = {}
        #: the running steps by path: where each runs in the user's terms (runtime/where.py)
        self.places: dict[str, Place] = {}
        #: the `.flow` names of each plan's steps, by ``id(plan)`` (error messages, runtime/where.py)
        self._names: dict[int, Any] = {}
        #: the running maps, loops, reduces and parallels that finished something, by path:
        #: ``{of, items: {index: result}, stage?, label?, source?}`` for a map, ``{kind, of, …}``
        #: for the others (a stopped run's ``RunResult.partial``; runtime/control.py)
        self.partial: dict[str, dict[str, Any]] = {}

    # ----------------------------------------------------------------- events

    def emit(self, kind: str, path: str, stack: list[str], **data: Any) -> Event | None:
        """Emit one event (docs/spec/RUNTIME.md §8); a no-op when no sink listens, and while a
        durable engine replays recorded work — except a durable run's finished events
        (``tool_finished``, ``model_call``, ``step_finished``), which carry their identity
        across processes (``durable_id``) and, met again in replayed work, go only to sinks that
        write each identity once (a continued trace: docs/durable.md "Events"), and the run's
        ``run_finished``, which no process wrote before (the run ends once).  An event below a
        running step (a tool call, a model call, a warning …) carries that place's names
        (``stage``, ``item``, ``agent``, ``label``; runtime/where.py)."""
        if not self.bus.listens(kind):
            return None
        replayed = False
        if kind in AFTER_OPERATION and self.effects.durable:
            # a durable run's finished event: named the same in every process of the run, and
            # met again while its unit replays (a trace that is continued writes it when the
            # process that ran the work died before it did; docs/durable.md "Events")
            error = data.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            if kind != "model_call" and self.effects.reused_at(path):  # (model_call says it)
                data.setdefault("reused", True)  # taken from the run --reuse/redrive reuses
            data["durable_id"] = self.effects.event_id(kind, path, code)
            replayed = self.effects.replaying() or self.effects.replayed(path)
        elif self.effects.replaying() and (kind != "run_finished" or self.effects.end_replayed()):
            # (the run's end is never replayed work: a run stopped while its resumed root
            # still replays — a signal in `flowc resume`'s start-up — ends here, its trace too;
            # but a Temporal root's end met in a replay was said by the task replayed)
            return None
        if path and kind not in _STEP_EVENTS:
            place = self.place_of(path)
            if place is not None:
                for key, value in place.event_fields(path).items():
                    data.setdefault(key, value)
        if not self.effects.durable:
            return self.bus.emit(kind, path, stack, **data)
        # a durable run's events wait for the records of the work before them (Effects.deliver)
        later = bool(data.pop(_USAGE_WHEN_SENT, False))
        event = Event(kind=kind, path=path, stack=list(stack), data=data, replayed=replayed)
        bus, counted = self.bus, self.step_usage

        def publish() -> None:
            if later and counted is not None:  # its model calls went out before it: counted
                usage = counted.total(path)
                if usage:
                    data["usage"] = usage
            bus.publish(event)

        self.effects.deliver(publish)
        return None if replayed else event

    def place_of(self, path: str) -> Place | None:
        """The running step at ``path`` or nearest above it, or None."""
        places = self.places
        while True:
            place = places.get(path)
            if place is not None or "/" not in path:
                return place
            path = path.rpartition("/")[0]

    def _enter(self, info: _StepInfo, path: str, frame: Frame) -> Place:
        """Register the step starting at ``path`` as a running place."""
        parent = self.place_of(path.rpartition("/")[0]) if "/" in path else None
        tool = info.tool
        outlined = False
        if tool.startswith("plan__"):
            sub = self.find_plan(tool, frame)
            outlined = sub is not None and is_outlined(sub)
        place = Place(path, info.step, tool, parent, outlined)
        self.places[path] = place
        return place

    def warn(self, path: str, stack: list[str], message: str) -> None:
        """Emit a ``warning`` event."""
        self.emit("warning", path, stack, message=message)

    # ----------------------------------------------------------------- plan level

    async def run_steps(self, frame: Frame, scope: dict[str, Any], results: dict[str, Any]) -> Any:
        """Run a plan's steps in order; returns the last step's result."""
        last: Any = None
        for i, step in enumerate(frame.plan.steps):
            sid = step.id or f"steps[{i}]"
            last = await self.run_step(step, scope, frame.path(sid), frame)
            if step.id:
                scope[step.id] = last
                results[step.id] = last
        return last

    async def finish(self, frame: Frame, scope: dict[str, Any], last: Any) -> Any:
        """The plan's ``finish`` (docs/spec/PLAN_IR.md §1): the rendered output, the solver's
        answer, None (silent), or the last step's result when there is no finish."""
        fin = frame.plan.finish
        if fin is None:
            return last
        if fin.mode == "silent":
            return None
        if fin.mode == "solver":
            prompt_c = fin.compiled_prompt
            if prompt_c is None and fin.prompt is not None:
                raise _not_loaded("the finish prompt", frame.path("finish"))
            prompt = ""
            if prompt_c is not None:
                prompt = to_text(
                    render_value(
                        prompt_c,
                        scope,
                        lenient=True,
                        on_warning=lambda m: self.warn(frame.prefix, frame.stack, m),
                    )
                )
            results = {k: v for k, v in scope.items() if k != "input"}
            user = (
                f"{prompt or 'Write the final answer of this workflow.'}\n\n"
                f"Workflow input:\n{to_text(scope.get('input'))}\n\n"
                f"Results of every step (JSON):\n"
                f"{json.dumps(to_json_value(results), ensure_ascii=False, indent=1)}"
            )
            return await self.infer(
                "solver",
                user,
                system="You are the solver of a workflow: write its final answer from the "
                "collected step results. Do not invent data that is not in them.",
                path=frame.path("finish"),
                stack=frame.stack,
            )
        out_c = fin.compiled_output
        if out_c is None:
            if fin.output is not None:
                raise _not_loaded("the finish output", frame.path("finish"))
            return last
        watched = offloaded = None
        if frame.deadline_at is not None:
            # a busy output ends at the deadline as a step does (Temporal: one evaluated in
            # an operation, interrupt.offload_watch)
            left = frame.deadline_at - self.effects.now()
            message = f"the workflow deadline ({frame.deadline_text}) expired computing the output"
            if self.effects.evaluation_clock():
                bound = watching() or EvalWatch()
                watched = use_watch(bound.bounded(left, Code.DEADLINE_EXCEEDED, message))
            else:
                bound = offload_watch() or EvalWatch()
                offloaded = use_offload_watch(bound.bounded(left, Code.DEADLINE_EXCEEDED, message))
        try:
            output = await self.effects.evaluation(
                frame.path("finish"), lambda: render_value(out_c, scope)
            )
            refuse_too_deep(output, out_c)
            return output
        except RunError as e:
            if e.step_path is None:
                e.step_path = frame.path("finish")
            # a stage's last value after a step: placed where the `.flow` wrote it (its meta),
            # or at the inlined `let` the failing sub-expression came from
            written, stage = fin.meta.get("source"), fin.meta.get("stage")
            let = let_of(e, fin.meta) if fin.meta.get("lets") else None
            if let:
                written = let["source"]
            elif not getattr(e, "named_at", None):  # the sub-expression as the `.flow` wrote it
                lets_by_name(e, fin.meta)
            if not e.where and stage and e.step_path == frame.path("finish"):
                # its `let`, its `return`, or (a last expression: no `return` written) the
                # stage alone
                what = let["name"] if let else "" if fin.meta.get("implicit") else "return"
                label = f"{stage} › {what}" if what else str(stage)
                e.where = {"stage": str(stage), "label": label}
            if quotes_expressions(e) and not getattr(e, "named_at", None):
                e.named_at = e.step_path  # type: ignore[attr-defined]
                caller = self.places.get(frame.prefix) if frame.prefix else None
                e.message = in_source_terms(
                    e.message, None, frame.plan, self._names, parent=caller, stage=stage
                )
                e.args = (e.message,)
                quote_written(e, let)
                if let is None:  # the caret at the failing sub-expression, where it is found
                    written = written_place(e, fin.meta) or written
            if e.source is None and written:
                e.source = str(written)
            raise
        finally:
            if watched is not None:
                end_watch(watched)
            if offloaded is not None:
                end_offload_watch(offloaded)

    # ----------------------------------------------------------------- one step

    def _step_info(self, step: Step, path: str) -> _StepInfo:
        """Per-step data derived once per run (the hot path reads only this)."""
        info = self._info.get(id(step))
        if info is not None and info.step is step:
            return info
        tool = step.tool_name
        compiled = step.compiled
        if compiled is None:
            if step.input is not None:
                raise _not_loaded(f"step `{step.id or path}`", path)
            compiled = {}  # `input: null`: a call without arguments
        select = None
        if step.select is not None:
            select = step.compiled_select
            if select is None:
                raise _not_loaded(f"the `select` of step `{step.id or path}`", path)
        retry = step.retry
        meta = step.meta
        source = meta.get("source")
        stage = meta.get("stage")
        timeout = step.timeout
        if retry is None:
            info = _StepInfo(
                step, tool, CONTROL.get(tool), compiled, select,
                None if timeout is None else _duration_s(timeout),
                1, _NO_CODES, 0.5, 2.0, 30.0,
                str(source) if source else None, step.id,
                str(stage) if stage else None,
            )  # fmt: skip
        else:
            backoff = retry.backoff
            info = _StepInfo(
                step=step,
                tool=tool,
                handler=CONTROL.get(tool),
                compiled=compiled,
                select=select,
                timeout_s=_duration_s(timeout),
                attempts=1 + int(retry.attempts or 0),
                on=frozenset(retry.on or [Code.TRANSIENT]),
                initial=_duration_s((backoff.initial if backoff else None) or "500ms") or 0.5,
                factor=float((backoff.factor if backoff else None) or 2.0),
                cap=_duration_s((backoff.max if backoff else None) or "30s") or 30.0,
                source=str(source) if source else None,
                id=step.id,
                stage=str(stage) if stage else None,
            )
        self._info[id(step)] = info
        return info

    def _backoff_delay(self, info: _StepInfo, attempt: int, path: str) -> float:
        """Exponential backoff with jitter (docs/spec/RUNTIME.md §2): ``min(cap,
        initial·factor^(n-1))`` scaled by a uniform factor in [0.5, 1) — "equal jitter", so retries
        never synchronise."""
        try:
            delay = min(info.cap, info.initial * (info.factor ** (attempt - 1)))
        except OverflowError:  # a huge factor in a plan that skipped validation
            delay = info.cap
        return delay * (0.5 + self.effects.random(path) / 2)

    async def run_step(self, step: Step, scope: Mapping[str, Any], path: str, frame: Frame) -> Any:
        """Run one step (or body): events, timeout/deadline bound, retry, ``select``; the step
        is a running place (:attr:`places`) meanwhile."""
        info = self._step_info(step, path)
        place = self._enter(info, path, frame)
        try:
            return await self._run_step(info, place, scope, path, frame)
        finally:
            del self.places[path]

    async def _run_step(
        self, info: _StepInfo, place: Place, scope: Mapping[str, Any], path: str, frame: Frame
    ) -> Any:
        tool = info.tool
        quiet = not self.bus.listens("step_finished")
        started = time.monotonic()
        announced = [quiet]

        def announce(rendered: Any) -> None:
            if not announced[0]:
                announced[0] = True
                data: dict[str, Any] = {"tool_name": tool}
                if info.handler is not None:  # a control step's value: whole, or a preview
                    data["input"], cut = event_value(rendered)
                    if cut:
                        data["input_preview"] = True
                    over = rendered.get("over") if isinstance(rendered, dict) else None
                    if isinstance(over, list | tuple):  # the real count: a preview keeps 10
                        data["items"] = len(over)
                else:
                    data["input"] = to_json_value(rendered)
                if info.id:
                    data["id"] = info.id
                if info.source:
                    data["source"] = info.source
                if info.stage:
                    data["stage"] = info.stage
                if tool == "agent":
                    place.resolve_agent(rendered)  # the profile or team member it runs as
                data.update(place.step_fields())  # the user's names (runtime/where.py)
                self.emit("step_started", path, frame.stack, **data)

        try:
            attempt = 0
            call = _Call()
            while True:
                attempt += 1
                # codes the next attempt will absorb are not offered to on_tool_error: the hook
                # sees a tool's failure once, after the step's retries (docs/spec/RUNTIME.md §2, §7)
                call.retried = info.on if attempt < info.attempts else _NO_CODES
                try:
                    raw = await self._bounded(info, scope, path, frame, announce, call)
                    break
                except RunError as e:
                    if (
                        isinstance(e, ExitError)
                        or attempt >= info.attempts
                        or e.code not in info.on
                    ):
                        if e.details.get("bound") == "timeout" and call.name is not None:
                            raw = await self._timed_out(e, call, path, frame)
                            break
                        raise
                    delay = self._backoff_delay(info, attempt, path)
                    if frame.deadline_at is not None:
                        remaining = frame.deadline_at - self.effects.now()
                        delay = max(0.0, min(delay, remaining))
                    self.emit(
                        "retry",
                        path,
                        frame.stack,
                        attempt=attempt,
                        code=e.code,
                        message=e.message,
                        delay_ms=int(delay * 1000),
                    )
                    await self.effects.sleep(delay, path)
            result = raw
            if info.step.result_schema is not None and info.handler is None:
                result = raw = dispatch.check_tool_result(tool, raw, info.step.result_schema)
            if info.select is not None:
                sel_scope = dict(scope)
                sel_scope["result"] = raw
                result = render_value(info.select, sel_scope)
        except RunError as e:
            let = None
            if not getattr(e, "named_at", None):  # the innermost step names its expressions
                let = let_of(e, info.step.meta) if info.step.meta.get("lets") else None
                e.named_at = path  # type: ignore[attr-defined]
                compiled = place.names().label is not None
                if compiled and quotes_expressions(e):
                    if let is None:  # the sub-expression as the `.flow` wrote it
                        lets_by_name(e, info.step.meta)
                    e.message = in_source_terms(e.message, place, frame.plan, self._names)
                    quote_written(e, let)
                    if let is None and e.source is None:
                        e.source = written_place(e, info.step.meta)
                elif e.code == Code.BAD_PATH and not e.details.get("step_named"):
                    e.details["step_named"] = True  # a hand-written plan: its step ids
                    e.message = f"step `{info.id or path}`: {e.message}"
                e.args = (e.message,)
            if e.step_path is None:
                e.step_path = path
            if e.source is None:
                e.source = let["source"] if let else info.source
            if not e.where:  # the innermost step names where it failed
                at = e.step_path
                e.where = (place.names() if at == path else place.names_below(at)).fields()
                if let and at == path and "label" in e.where:  # in the `let`, by its name
                    e.where["label"] = SEP.join([*place.names().context, let["name"]])
            if not quiet:
                self._step_finished(
                    path,
                    frame,
                    announce,
                    tool_name=tool,
                    error=e.to_dict(),
                    elapsed_ms=elapsed_ms(started),
                )
            raise
        except (RunAborted, ExitOk) as e:
            if not quiet:
                data: dict[str, Any] = {"tool_name": tool}
                if isinstance(e, RunAborted):
                    data["aborted"] = e.message
                    if e.error:
                        data["error"] = e.error.to_dict()
                else:
                    data["exit"] = True
                    data["result"] = to_json_value(e.output)
                self._step_finished(path, frame, announce, elapsed_ms=elapsed_ms(started), **data)
            raise
        except asyncio.CancelledError as e:
            if not quiet:
                self._step_finished(
                    path,
                    frame,
                    announce,
                    tool_name=tool,
                    error=ErrorInfo(Code.ABORTED, cancelled_message(e), path).to_dict(),
                    elapsed_ms=elapsed_ms(started),
                )
            raise
        if not quiet:
            # a durable run's events wait for their records (Effects.deliver), the model calls
            # of this step too: its usage is read when its `step_finished` goes out (emit)
            durable = self.effects.durable
            usage = (
                self.step_usage.total(path) if self.step_usage is not None and not durable else None
            )
            shown: dict[str, Any] = {}
            if info.handler is not None:  # a control step's value: whole, or a preview
                shown["result"], cut = event_value(result)
                if cut:
                    shown["result_preview"] = True
            else:
                shown["result"] = to_json_value(result)
            shown["elapsed_ms"] = elapsed_ms(started)
            if usage:
                shown["usage"] = usage  # per-step model usage (issue #5)
            elif durable and self.step_usage is not None:
                shown[_USAGE_WHEN_SENT] = True
            self._step_finished(path, frame, announce, tool_name=tool, **shown)
        return result

    def _step_finished(self, path: str, frame: Frame, announce: Announce, **data: Any) -> None:
        """Close a step: ``announce(None)`` (its ``step_started`` if still due), then the
        ``step_finished`` event with ``data`` (docs/spec/RUNTIME.md §8)."""
        announce(None)
        place = self.places.get(path)
        if place is not None:
            data.update(place.step_fields())
            if place.source is not None:
                data.setdefault("source", place.source)
        self.emit("step_finished", path, frame.stack, **data)

    # ----------------------------------------------------------------- tool dispatch
    # The invocation of an ordinary step and the gated tool call live in
    # agentflow.runtime.dispatch; they are methods here (no extra call per step).

    _bounded = dispatch.bounded
    _timed_out = dispatch.timed_out
    dispatch_tool = dispatch.dispatch_tool

    # ----------------------------------------------------------------- sub-plans

    def find_plan(self, name: str, frame: Frame) -> Plan | None:
        """The plan ``plan__NAME`` calls from ``frame``: a sub-plan of the frame's plan, of the
        root plan, or one of the run's callable plans; None when there is none."""
        pname = name.removeprefix("plan__")
        for source in (frame.plan.plans, frame.root_plans, self.plans):
            if source and pname in source:
                return source[pname]
        return None

    async def call_plan(self, name: str, args: Any, path: str, frame: Frame) -> Any:
        """Run sub-plan ``plan__NAME`` with ``args`` as input; returns its finish output."""
        sub = self.find_plan(name, frame)
        assert sub is not None
        pname = sub.name
        if pname in frame.stack:
            chain = " → ".join([*frame.stack, pname])
            raise RunError(Code.PLAN_CYCLE, f"plan cycle: {chain}", path)
        args = validate_input(sub, args, code=Code.TOOL_ERROR)
        deadline_at = frame.deadline_at
        written = frame.deadline_written or (
            str(frame.plan.deadline) if frame.plan.deadline else None
        )
        sub_deadline = _duration_s(sub.deadline)
        if sub_deadline is not None:
            mine = self.effects.now() + sub_deadline
            if deadline_at is None or mine < deadline_at:
                deadline_at, written = mine, str(sub.deadline)
        child = Frame(
            plan=sub,
            stack=[*frame.stack, pname],
            prefix=path,
            deadline_at=deadline_at,
            root_plans=frame.root_plans,
            deadline_written=written,
        )
        scope: dict[str, Any] = {"input": args}
        try:
            last = await self.run_steps(child, scope, {})
        except ExitOk as e:
            return e.output
        return await self.finish(child, scope, last)

    # ----------------------------------------------------------------- models, questions

    async def infer(
        self, role: str, prompt: str, *, system: str | None, path: str, stack: list[str]
    ) -> str:
        """One model call of ``role`` (judge, solver); emits ``model_call``; returns the text."""

        router = self.ctx.router
        if router is None:
            raise RunError(
                Code.VALIDATION,
                f"this step needs a model ({role} role) but no model is configured "
                "(set [models] in flow.toml, or OPENAI_BASE_URL/OPENAI_API_KEY)",
                path,
            )
        try:
            client = router.client_for(role)
        except FlowError as exc:
            raise RunError(Code.VALIDATION, str(exc), path) from None
        messages = []
        if system:
            messages.append(Message(role="system", content=system))
        messages.append(Message(role="user", content=prompt))
        t0 = time.monotonic()
        try:
            resp = await self.effects.chat(client, ChatRequest(messages=messages), path)
        except ModelError as exc:
            raise dispatch.as_error(exc, f"{role} model") from None
        told = {"history": 0, "messages": [message_fields(m) for m in messages]}
        self.emit("model_call", path, stack, role=role, **model_call_fields(resp, t0), **told)
        return resp.text or ""

    async def judge(self, question: str, *, path: str, stack: list[str]) -> bool:
        """A yes/no judge-role call (one inference). Raises ``output_validation`` when the reply
        is neither yes nor no."""

        text = await self.infer(
            "judge",
            question,
            system=JUDGE_SYSTEM_PROMPT,
            path=path,
            stack=stack,
        )
        verdict = _parse_yes_no(text)
        if verdict is None:
            raise RunError(
                Code.OUTPUT_VALIDATION, f"the judge did not answer yes or no: {text[:200]!r}", path
            )
        return verdict

    async def ask(self, request: AskRequest) -> Any:
        """Put an ``ask`` step's question to the host's interlocutor (one at a time, even under
        concurrent map items); :data:`NO_ANSWER` when there is none or it gave no answer."""
        interlocutor = self.ctx.hooks.interlocutor
        if self.effects.durable:  # a durable question waits for its answer as a message
            return await self.effects.ask(interlocutor, request)
        if interlocutor is None:
            return NO_ANSWER
        async with self.ask_lock:
            return await self.effects.ask(interlocutor, request)


class _Named:
    """The bus as the model layer's event forwarding sees it: its events go through
    :meth:`Executor.emit`, so they carry the names of the step they happen in."""

    def __init__(self, ex: Executor):
        self._ex = ex

    def emit(self, kind: str, path: str = "", stack: list[str] | None = None, **data: Any) -> None:
        self._ex.emit(kind, path, list(stack or ()), **data)


# ---------------------------------------------------------------------------------------------
# Entry points


def run_budgets(plan: Plan, config: Config | None) -> list[Budget]:
    """The run-level model budgets of ``plan``: its ``budget`` and flow.toml's ``[budget]``
    (both apply when both are set; docs/models.md "Budgets")."""

    found = [
        budget_from(plan.budget, name="run", source="the plan's `budget`"),
        budget_from(
            config.budget if config is not None else None, name="run", source="flow.toml [budget]"
        ),
    ]
    return [b for b in found if b is not None]


def validate_input(plan: Plan, data: Any, *, code: str | None = None) -> Any:
    """Check ``data`` against ``plan.input_schema`` (JSON Schema) and return it with every
    integral float the schema types ``integer`` made an ``int`` (``3.0`` → ``3``:
    :func:`~agentflow.ir.schemas.whole_numbers`).  Raises :class:`InputMismatch` (or RunError
    ``code`` when given: a ``plan__*`` call's input) naming up to five problems in the `.flow`'s
    terms, one line each (:func:`~agentflow.ir.mismatch.mismatch_lines`; docs/reference/cli.md
    "Input"), or :class:`InputError` for a number `--input` would refuse in text."""
    # NaN, Infinity, an int past 64 bits: refused as `--input` refuses them in text (whoever
    # parsed the value: an MCP client's arguments, a dict given to `agentflow.run`)
    # a Python value no JSON holds (bytes, a set) too, from the front door (code None)
    number = json_number_problem(data) if code is not None else json_value_problem(data)
    if number is not None:
        raise RunError(code, number) if code is not None else InputError(number)
    schema = plan.input_schema
    if not schema:
        return data

    what = "the flow's input type" if code is None else f"the input type of plan `{plan.name}`"
    try:  # one front door: a dataset's cases are checked by the same (agentflow.ir.mismatch)
        lines = mismatch_lines(schema, data, what=what)  # never fetches a reference
    except ValueError as exc:
        message = f"input_schema of plan '{plan.name}': {exc}"
        raise (RunError(code, message) if code is not None else InputError(message)) from None
    if not lines:
        return whole_numbers(schema, data)
    message = (
        lines[0] if len(lines) == 1 else "\n  ".join([f"the input does not fit {what}:", *lines])
    )
    if code is not None:
        raise RunError(code, message)
    raise InputMismatch(message)


async def run_plan(
    plan: Plan,
    input: Any = None,
    context: RunContext | None = None,
    *,
    effects: Effects | None = None,
    prefix: str = "",
    ending: Callable[[], Awaitable[bool]] | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """Run ``plan`` (a loaded :class:`agentflow.ir.models.Plan`) with ``input`` (default ``{}``).

    ``context`` (:class:`~agentflow.runtime.context.RunContext`) and ``options`` (its fields as
    keywords, overriding it) give the catalog, model router, configuration, workspace, event
    sinks (closed at the end), hooks and the plans callable as ``plan__NAME`` (default: the
    catalog's).  A plan must come from the loader (``agentflow.load``,
    ``agentflow.ir.loader``): its templates are parsed there.  ``effects``: how effects are
    performed (default: directly; the durable engine passes its own,
    :mod:`agentflow.runtime.durable`).  ``prefix``: the step path the plan's steps are under
    (default: none; ``flowc ask`` runs each tool call at ``ask/agent.N``, so its effects and
    events are named where the question made them).  ``ending``: a durable run's root, asked
    once its end is known and before ``run_finished`` whether it may end so (False: a ``flowc
    cancel`` took the run's end first, and the run ends ``cancelled`` with no output; not asked
    when it ends ``cancelled`` already, or is cancelled from outside).

    Raises :class:`InputError` when ``input`` does not match ``plan.input_schema`` (before any
    step).  Every run-time failure comes back as ``RunResult(status="error", error=ErrorInfo(code,
    message, step_path, source))``; hook aborts as ``status="aborted"``.  Cancelled from
    outside, the run still closes its trace (``run_finished``), then the cancellation goes on.
    """

    ctx = RunContext.of(context, options)
    if input is None:
        input = {}
    input = validate_input(plan, input)
    start_virtual()  # flowc test's sleeps use up the deadline (docs/reference/statements.md)
    step_usage = StepUsage()
    usage_token = running_step_usage.set(step_usage)  # a durable run's child units add to it
    bus = EventBus([step_usage, *ctx.sinks])
    ex = Executor(ctx, bus, effects=effects, step_usage=step_usage)
    router = ctx.router
    deadline_s = _duration_s(plan.deadline)
    frame = Frame(
        plan=plan,
        stack=[plan.name],
        prefix=prefix,
        deadline_at=ex.effects.started_at() + deadline_s if deadline_s is not None else None,
        root_plans=dict(plan.plans),
    )
    before = usage_snapshot(router)
    forwarding = router is not None and router.on_event is None
    if forwarding:  # retries / failovers of the model layer become trace events
        assert router is not None
        router.on_event = forward_model_events(_Named(ex))
    t0 = time.monotonic()
    scope: dict[str, Any] = {"input": input}
    results: dict[str, Any] = {}
    status: RunStatus = "ok"
    output: Any = None
    error: ErrorInfo | None = None

    budget_tokens = [push_budget(b) for b in ex.effects.run_budgets(run_budgets(plan, ctx.config))]
    started: dict[str, Any] = {"plan": plan.name, "input": to_json_value(input)}
    if plan.source_file and not plan.source_file.startswith("<"):
        started["file"] = plan.source_file  # the `.flow` or plan file, as given (for reports)
    ex.emit("run_started", "", frame.stack, **started)
    # None in a run inside a run: a tool call's (under a prefix), a planner's
    outermost = outermost_run() if not prefix else None
    cancelled: BaseException | None = None
    stop = stop_request()
    watchdog = stop.watchdog if stop is not None and deadline_s is not None else None
    if watchdog is not None:  # `flowc run`: a run frozen past its deadline is ended from outside
        assert deadline_s is not None
        watchdog.push_deadline(time.monotonic() + deadline_s)

    async def body() -> Any:
        last = await ex.run_steps(frame, scope, results)
        return await ex.finish(frame, scope, last)

    services = _run_services(ex, frame.stack)
    # a busy evaluation sees a stop signal or `flowc cancel` (interrupt.EvalWatch); each timed
    # step narrows it to its bound (dispatch.bounded)
    probe = ex.effects.cancel_probe()
    outside = outside_cancel()  # the host of a run off its loop cancelled it (interrupt.off_loop)
    watched = use_watch(
        EvalWatch(stop=stop, cancelled=probe, outside=outside) if stop or probe or outside else None
    )
    try:
        try:
            output = await until_stopped(_with_services(services, body()))
        except ExitOk as e:
            status, output = "exited", e.output
    except RunAborted as e:
        # a durable run cancelled (flowc cancel) ends `cancelled`, every other stop `aborted`;
        # the error code of both is `aborted` (docs/durable.md "Starting, resuming, inspecting")
        status = "cancelled" if isinstance(e, Cancelled) else "aborted"
        error = e.error or ErrorInfo(Code.ABORTED, e.message, e.step_path)
    except RunError as e:
        status, error = "error", e.info()
    except asyncio.CancelledError as e:
        # cancelled from outside (a second Ctrl-C, the host's own timeout): the trace still
        # gets its run_finished and the sinks are closed, then the cancellation goes on
        cancelled = e
        status = "aborted"
        error = ErrorInfo(Code.ABORTED, "the run was cancelled")
        with contextlib.suppress(Exception):
            if ex.effects.cancel_requested():  # `flowc cancel` of a Temporal run
                status, error = "cancelled", ErrorInfo(Code.ABORTED, Cancelled().message)
    end_watch(watched)
    if ending is not None and cancelled is None and status != "cancelled":
        if not await ending():  # a cancel that came late: it wins, everywhere alike
            status, output = "cancelled", None
            error = ErrorInfo(Code.ABORTED, Cancelled().message)
    for token in reversed(budget_tokens):
        pop_budget(token)
    result = RunResult(
        status=status,
        output=output,
        error=error,
        results=results,
        steps=written_steps(plan, results),
        partial=_partial(ex) if status in ("aborted", "cancelled") else {},
        usage=as_usage(
            {
                **usage_delta(router, before),
                "by_step": step_usage.by_step,
                "by_stage": step_usage.by_stage,
            }
        ),
        duration_ms=elapsed_ms(t0),
    )
    ex.emit(
        "run_finished",
        "",
        frame.stack,
        status=status,
        error=error.to_dict() if error is not None else None,
        output=to_json_value(output),
        duration_ms=result.duration_ms,
        usage=result.usage,
    )
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await ex.effects.settle()  # a durable run's held events, before the sinks close
    if forwarding:
        assert router is not None
        router.on_event = None
    run_ended(outermost)  # a Ctrl-C from now on cuts the span export short, the result stands
    bus.close()
    running_step_usage.reset(usage_token)
    if watchdog is not None:
        watchdog.pop_deadline()
    if cancelled is not None:
        raise cancelled
    return result


def _partial(ex: Executor) -> dict[str, Any]:
    """A stopped run's maps, loops, reduces and parallels that had finished something
    (``RunResult.partial``): a map's items by index (an entry without ``kind``), a loop's
    ``rounds``, a reduce's ``folded``, a parallel's ``branches``."""
    out: dict[str, Any] = {}
    for path, entry in sorted(ex.partial.items()):
        if "items" in entry and entry["items"]:
            out[path] = {**entry, "items": dict(sorted(entry["items"].items()))}
        elif entry.get("rounds") or entry.get("folded") or entry.get("branches"):
            out[path] = dict(entry)
    return out


def _run_services(ex: Executor, stack: list[str]) -> Any:
    """The run's :class:`~agentflow.runtime.tools.catalog.RunServices` (MCP elicitation,
    sampling and notifications reach the trace and the interlocutor through them)."""

    def emit(kind: str, path: str, data: dict[str, Any]) -> None:
        ex.emit(kind, path, stack, **data)

    return RunServices(
        emit=emit,
        interlocutor=ex.ctx.hooks.interlocutor,
        ask_lock=ex.ask_lock,
        router=ex.ctx.router,
    )


async def _with_services(services: Any, work: Awaitable[Any]) -> Any:
    """Await ``work`` with ``current_run`` set to ``services`` (tasks it starts inherit it)."""

    token = current_run.set(services)
    try:
        return await work
    finally:
        # a run abandoned by a second signal is closed from another context: nothing to undo
        with contextlib.suppress(ValueError):
            current_run.reset(token)


def run_plan_sync(
    plan: Plan,
    input: Any = None,
    context: RunContext | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """:func:`run_plan` from synchronous code: runs its own event loop
    (:func:`agentflow.runtime.interrupt.run`: SIGINT/SIGTERM stop the run gracefully)."""

    return run(run_plan(plan, input, context, **options))
