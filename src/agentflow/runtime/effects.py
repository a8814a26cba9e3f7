"""The effects of a run, each behind one method: :class:`Effects`.

Everything a run does that is not a pure function of the plan, its input and earlier results goes
through one of these methods, called by the executor with the step path it belongs to
(docs/spec/PLAN_IR.md §7):

==================  ===========================================================================
``call_tool``       one real tool call (after the gate; builtin, MCP, user Python)
``chat``            one model inference (agent rounds and repairs, ``infer`` judges, the solver)
``ask``             one question to the host's interlocutor (``ask`` steps)
``sleep``           a retry's backoff
``timer``           a ``sleep`` step's wake-up time (``sleep_until`` waits for it)
``now``             the clock deadlines are measured on (seconds, monotonic)
``random``          the jitter of a retry's backoff
``unit``            a unit of work with its own step path: a ``map``/``reduce`` item, a
                    ``parallel`` branch, a ``plan__*`` call, one tool call of an agent round that
                    makes several (described by a :class:`UnitSpec`)
==================  ===========================================================================

This class performs them directly.  A loop that takes a router (the agent loop of an ``agent``
step and of ``flowc ask``, the planner of ``plan_and_execute``) gets an :class:`EffectRouter`,
whose clients' ``chat`` is :meth:`Effects.chat` at a given path, so every model call of a run is
one of these effects.  The durable engine (:mod:`agentflow.runtime.durable`)
replaces it with one that records each effect under its step path and replays it on resume, so a
change of engine touches this seam and nothing in the control-step logic.
"""

from __future__ import annotations

import asyncio
import random as _random
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from agentflow.core.text import clean_json
from agentflow.runtime.extract import too_deep_result
from agentflow.runtime.hooks import NO_ANSWER, AskRequest, Interlocutor, maybe_await

if TYPE_CHECKING:
    from agentflow.ir.models import Step
    from agentflow.runtime.executor import Frame
    from agentflow.runtime.models.base import ChatRequest, ChatResponse
    from agentflow.runtime.models.router import ModelRouter, RoutedClient
    from agentflow.runtime.tools.catalog import Tool, ToolContext

__all__ = ["EffectRouter", "Effects", "UnitSpec"]

T = TypeVar("T")


class _Clock:
    """One timeline's virtual time in seconds (a task and the tasks it waits for in turn)."""

    __slots__ = ("t",)

    def __init__(self, t: float = 0.0) -> None:
        self.t = t


#: the virtual time slept so far on this timeline: a ``sleep`` stood in for by the ``sleeper``
#: hook (``flowc test``) adds its length, so later deadline checks (``Effects.now()``) count
#: it (docs/reference/statements.md "sleep"). A mutable clock, so that a step run as its own
#: task advances the clock of the run that waits for it; concurrent tasks get their own
#: (:func:`fork_virtual`, :func:`join_virtual`)
_VIRTUAL: ContextVar[_Clock | None] = ContextVar("agentflow_virtual_time", default=None)


class VirtualBound:
    """A timed step's bound on the virtual clock (``flowc test``'s sleeps, the ``sleeper``
    hook): ``at``, the :meth:`Effects.now` it ends at; ``expired`` is set by a virtual
    ``sleep`` inside the step that would outlast it (having moved its clock to ``at``), and
    the step then ends with ``timeout`` as at a real expiry (dispatch.bounded)."""

    __slots__ = ("at", "expired")

    def __init__(self, at: float) -> None:
        self.at = at
        self.expired = asyncio.Event()


#: the virtual bounds of the timed steps this task runs inside (outermost first)
_BOUNDS: ContextVar[tuple[VirtualBound, ...]] = ContextVar("agentflow_bounds", default=())


def enter_bound(bound: VirtualBound) -> Token[tuple[VirtualBound, ...]]:
    """Make ``bound`` one of the bounds of the tasks started from here on (reset the token
    once the step's task is started: the task keeps a copy of the context)."""
    return _BOUNDS.set((*_BOUNDS.get(), bound))


def leave_bound(token: Token[tuple[VirtualBound, ...]]) -> None:
    """Undo :func:`enter_bound` in this context."""
    _BOUNDS.reset(token)


def nearest_bound() -> VirtualBound | None:
    """The virtual bound that ends first among the timed steps around this task, or None."""
    bounds = _BOUNDS.get()
    return min(bounds, key=lambda b: b.at) if bounds else None


def start_virtual() -> None:
    """Start a run's virtual clock at 0 (called as a run starts, in its task)."""
    _VIRTUAL.set(_Clock())


def virtual_elapsed() -> float:
    """The virtual seconds slept so far on this timeline (0.0 in a run without virtual time)."""
    clock = _VIRTUAL.get()
    return clock.t if clock is not None else 0.0


def advance_virtual(seconds: float) -> None:
    """Add ``seconds`` of virtual time to this timeline (a virtual ``sleep``)."""
    clock = _VIRTUAL.get()
    if clock is None:
        clock = _Clock()
        _VIRTUAL.set(clock)
    clock.t += seconds


def fork_virtual(start: float) -> None:
    """Give the current task (one of several run concurrently) its own timeline from
    ``start`` (the virtual time of the task that started it)."""
    _VIRTUAL.set(_Clock(start))


def join_virtual(ends: list[float]) -> None:
    """Move this timeline to the latest of ``ends`` (the virtual times its concurrent
    children ended at) when that is later: concurrent sleeps overlap."""
    clock = _VIRTUAL.get()
    if ends and clock is not None:
        clock.t = max(clock.t, *ends)


@dataclass(slots=True)
class UnitSpec:
    """What a unit of work is, for an engine that must re-create it in another process.

    ``kind``: ``body`` (run the body step ``body`` at the unit's path in ``scope``), ``plan``
    (call sub-plan ``name`` with ``args``) or ``tool`` (dispatch tool ``name`` with ``args``, an
    agent's call: ``write_scope`` and ``allowed`` as the agent has them).  ``frame``: the plan
    activation the unit runs in.  ``concurrent``: the unit may run alongside sibling units of
    the same step (map items at concurrency > 1, parallel branches, the calls of one agent
    round); ``limit`` is then how many may run at once (None: no limit).  ``finished``: called
    with the unit's value when the unit finished but its parent was stopped before it took the
    value (a durable child unit whose result was on its way as the run was stopped): a map or a
    `parallel` keeps it among what it finished (``RunResult.partial``), as a plain run does.
    """

    kind: Literal["body", "plan", "tool"]
    frame: Frame
    concurrent: bool = False
    limit: int | None = None
    body: Step | None = None
    scope: Mapping[str, Any] | None = None
    name: str | None = None
    args: Any = None
    write_scope: list[Any] | None = None
    allowed: set[str] | None = None
    finished: Callable[[Any], None] | None = None


async def call_tool_cleaned(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Any:
    """``tool.func(args, ctx)``, its result with every string made whole
    (:func:`agentflow.core.text.clean_json`: a lone surrogate becomes U+FFFD) — a tool's result
    enters the run here, and must fit every output (trace, console, report, durable rows). A
    result nested more than :data:`~agentflow.runtime.extract.MAX_JSON_DEPTH` levels deep fails
    the call with ``output_validation``."""
    result = await tool.func(args, ctx)
    too_deep_result(tool.name, result)  # output_validation, before anything recurses into it
    return clean_json(result)


class Effects:
    """Performs a run's effects directly (the default, non-durable engine).

    Each method takes the step path of the effect (``path``) so an engine can key it; this one
    ignores it.  The asynchronous ones return an awaitable (a subclass may define them with
    ``async def``); here they hand back the underlying call's own coroutine, so the seam adds no
    coroutine frame to a map item's path.
    """

    __slots__ = ()

    #: True for an engine that records effects (trace events of replayed work are dropped).
    durable = False

    def call_tool(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Awaitable[Any]:
        """Call ``tool`` with ``args`` (``ctx.step_path`` is the call's path); its result, or
        what the tool raises."""
        return call_tool_cleaned(tool, args, ctx)

    def chat(
        self, client: RoutedClient, request: ChatRequest, path: str
    ) -> Awaitable[ChatResponse]:
        """One inference of ``client`` (a role's routed client: failover, usage); raises
        ModelError."""
        return client.chat(request)

    async def ask(self, interlocutor: Interlocutor | None, request: AskRequest) -> Any:
        """Put ``request`` to the host's interlocutor; returns the answer or ``NO_ANSWER``
        (also when there is none)."""
        if interlocutor is None:
            return NO_ANSWER
        return await maybe_await(interlocutor(request))

    async def known_answer(self, request: AskRequest) -> str | None:
        """Whether the question ``request`` is answered before it is asked: ``reused`` (a
        durable ``--reuse`` takes the earlier run's answer), ``answered`` (answered while its
        durable run was stopped), else None; here always None.  The ask's ``step_started``
        says so (``input.known``), and nobody is told to answer it."""
        return None

    def sleep(self, seconds: float, path: str) -> Awaitable[None]:
        """Wait ``seconds`` (a retry's backoff at ``path``)."""
        return asyncio.sleep(seconds)

    async def timer(self, seconds: float, path: str) -> float:
        """The wake-up time (epoch seconds, the wall clock) of the ``sleep`` step at ``path``
        that waits ``seconds``: here now + ``seconds``; a durable engine records it, so a
        resumed run wakes when the first one would have (docs/durable.md "Sleeping")."""
        return time.time() + seconds

    def sleep_until(self, wakes_at: float, path: str) -> Awaitable[None]:
        """Wait until ``wakes_at`` (from :meth:`timer`; at once when it has passed)."""
        return asyncio.sleep(max(0.0, wakes_at - time.time()))

    def now(self) -> float:
        """The running loop's clock in seconds (monotonic): what deadlines are measured on;
        plus the virtual time slept so far in this task (:func:`advance_virtual`: ``flowc
        test``'s sleeps, which wait no real time but use up the deadline)."""
        return asyncio.get_running_loop().time() + virtual_elapsed()

    def random(self, path: str) -> float:
        """A uniform number in [0, 1) (a retry's jitter at ``path``)."""
        return _random.random()

    def bind(self, executor: Any) -> None:
        """Called by the executor that uses these effects (an engine may keep it); no-op."""

    def deliver(self, publish: Callable[[], None]) -> None:
        """Deliver an event (``publish()`` hands it to the sinks): here at once; a durable
        engine holds it until the records of the work before it are committed."""
        publish()

    async def settle(self) -> None:
        """Return once every event handed to :meth:`deliver` is delivered (before the run's
        sinks close); here at once."""

    def started_at(self) -> float:
        """The reading of :meth:`now` the run's deadline counts from (here: now)."""
        return self.now()

    def run_budgets(self, budgets: list[Any]) -> list[Any]:
        """The run's budgets (:class:`~agentflow.runtime.models.budget.Budget`, from its plan
        and configuration) as its model calls reserve them: here ``budgets`` themselves; a
        Temporal run's are held by a ledger its workers share."""
        return budgets

    def evaluation_clock(self) -> bool:
        """Whether a busy evaluation may end at its step's deadline or timeout by reading the
        clock (:class:`agentflow.runtime.interrupt.EvalWatch`): here, yes; a workflow engine whose
        time stands still in workflow code (Temporal) says no, so a replay never diverges."""
        return True

    async def evaluation(self, path: str, work: Callable[[], Any]) -> Any:
        """``work()``: an evaluation of the step at ``path`` (a ``let``'s value, a tool call's
        arguments, a condition, a map's list, the run's output) — here, at once; a Temporal
        run's long one runs in an operation instead (docs/reference/expressions.md
        "Evaluation ends when the run must")."""
        return work()

    def cancel_probe(self) -> Callable[[], bool] | None:
        """A callable a busy evaluation asks (synchronously, every few tenths of a second)
        whether the run was cancelled from outside (``flowc cancel``), or None when there is
        nothing to ask (here: a plain run; its stops are signals). See
        :class:`agentflow.runtime.interrupt.EvalWatch`."""
        return None

    def cancel_requested(self) -> bool:
        """True when the run was cancelled from outside by its engine (``flowc cancel`` of a
        Temporal run arrives as the cancellation of its workflow's task): the run then ends
        ``cancelled``, not ``aborted``; never here."""
        return False

    def replaying(self) -> bool:
        """True while the engine re-runs work it has recorded (trace events are then left out,
        as they were written when the work first ran); never here."""
        return False

    def end_replayed(self) -> bool:
        """True when the run's end met now (its ``run_finished``) was said by the attempt whose
        work is being replayed, so it is not said again (Temporal: the root's task that said
        it is recorded before the workflow completes, so replaying it means it was said);
        never here (a durable run that ends while it replays — stopped during a resume's
        replay — says its end)."""
        return False

    def replayed(self, path: str) -> bool:
        """True when the latest durable operation made at step ``path`` (in the running unit)
        was replayed from the record, not run: the events that follow it (``tool_finished``,
        ``model_call``, the step's ``step_finished``) were written when it first ran; never
        here."""
        return False

    def reused_at(self, path: str) -> bool:
        """True when the latest durable operation made at step ``path`` (in the running unit)
        took its result from the run ``--reuse``/``redrive`` reuses instead of running: its
        ``tool_finished`` and ``step_finished`` say ``reused: true`` (the console's ``✓ …
        (reused)``); never here."""
        return False

    def event_id(self, kind: str, path: str, error_code: str | None) -> str | None:
        """The identity of a finished event (``kind`` at ``path``, failed with
        ``error_code``) across a durable run's processes, which a trace writes once; None
        here."""
        return None

    def unit(
        self, path: str, work: Callable[[], Awaitable[T]], spec: UnitSpec | None = None
    ) -> Awaitable[T]:
        """Run ``work()``, a unit of work with its own step ``path`` (a map or reduce item, a
        parallel branch, a ``plan__*`` call, one call of a multi-call agent round); its result.
        ``spec`` describes the work for an engine that runs it elsewhere (a child workflow)."""
        return work()

    def map_batch(self, path: str, n: int) -> int | None:
        """How many items of the map at ``path`` (``n`` items) each batch runs, when the engine
        runs a map this wide as batches of child units (Temporal: one workflow history holds a
        bounded number of events); None: the map runs its items itself (always here)."""
        return None

    async def map_slice(
        self, path: str, k: int, items: list[Any], lo: int, spec: UnitSpec, fail_fast: bool
    ) -> list[Any]:
        """Run batch ``k`` of the map at ``path``: its ``items`` (the first is item ``lo``),
        each the body of ``spec`` at ``{path}/do.{i}``, at most ``spec.limit`` at once; each
        item's value or its RunError, in order (``fail_fast``: the first failure is raised).
        Only called when :meth:`map_batch` returned a size."""
        raise NotImplementedError("map batches need a durable engine that runs them")


class EffectRouter:
    """A router whose clients' ``chat`` goes through :meth:`Effects.chat` at ``path``.

    ``client_for(role)`` resolves like ``router.client_for`` (raising ConfigError the same way);
    what the agent loop (:func:`agentflow.runtime.agent.run_agent`) and the planner
    (:mod:`agentflow.runtime.planner`) are given, so their inferences are effects of the run
    (recorded and replayed by a durable engine; cassettes work at the router below).
    """

    __slots__ = ("_effects", "_path", "_router")

    def __init__(self, effects: Effects, router: ModelRouter, path: str):
        self._effects = effects
        self._router = router
        self._path = path

    def client_for(self, role_or_name: str | None = None) -> EffectClient:
        """The router's client for ``role_or_name``, its calls routed through the effects."""
        return EffectClient(self._effects, self._router.client_for(role_or_name), self._path)


class EffectClient:
    """One role's routed client whose ``chat`` is :meth:`Effects.chat` at a path (see
    :class:`EffectRouter`)."""

    __slots__ = ("_client", "_effects", "_path")

    def __init__(self, effects: Effects, client: RoutedClient, path: str):
        self._effects = effects
        self._client = client
        self._path = path

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """One inference through :meth:`Effects.chat`; raises ModelError."""
        return await self._effects.chat(self._client, request, self._path)
