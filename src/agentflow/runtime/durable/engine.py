"""The engine-neutral half of durable runs: the :class:`Engine` protocol a backend implements,
and :class:`DurableEffects`, the run's :class:`~agentflow.runtime.effects.Effects` that sends
every effect through it.

One interpreter: the executor, the control steps, the agent loop and the tools run the same code
with or without durability; only the ``Effects`` differ.  :class:`DurableEffects` turns each
effect into an engine operation with a stable, persisted name that includes its step path
(``E3/do.4/E1/tool:builtin__grep#1``, ``E5/model:chat#2``), so a replay that reaches a different
operation than the one recorded at that position fails loudly (``durable_replay_mismatch``)
instead of handing one call's result to another.

=================  ===========================================================================
tool call          one engine step (a non-idempotent tool gets a "begin" marker step first:
                   a call found begun but not finished on resume is reported, ``outcome_unknown``);
                   an idempotent one is an item record when the engine has them (ItemEngine)
model call         one engine step per inference (each agent round, repair, judge, solver); an
                   item record when the engine has them and no fleet queue sends it
ask                the question is published, the answer awaited as a message (durable timeout),
                   then recorded as a step (what ``--reuse`` and ``redrive`` take)
backoff sleep      a durable sleep
clock / jitter     the wall clock (deadlines count from the run's recorded start); jitter is a
                   hash of the workflow, path and call count (the same on replay)
concurrent unit    a child workflow whose id is the parent's id + the unit's path, started in
                   index order; it receives only the scope values its body references
limited model      when the engine has ``model_slot(client, ticket)`` (Temporal), a request of a
                   model with a fleet-wide ``rate_limit``/``concurrency`` is sent holding its
                   slot, waited for first by ``take_model_slot(client, name)`` (the ticket)
wide map           when the engine has ``map_batch(n)`` (Temporal; DBOS on a fleet): batch
                   child units ``{parent id}/{map path}/batch.K`` of that many items each,
                   their items units of the batch (:meth:`DurableEffects.map_slice`; a
                   one-call item an item record of the batch, even on a fleet)
=================  ===========================================================================

Every recorded step result carries the digest of its rendered input, which is what ``--reuse``
and ``redrive`` compare (a step of an earlier run whose name and digest match is taken, not run).

A backend is "callable" (DBOS: any function runs as a step) or would be "registered" (Temporal:
activities by name): :meth:`Engine.step` takes the operation name and a zero-argument coroutine
function, and a registered backend can dispatch on the name's kind (``tool:``, ``model:``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import dataclasses
import hashlib
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agentflow.core.vocabulary import Code
from agentflow.errors import RunError, Stopped
from agentflow.ir.models import Step as StepModel
from agentflow.ir.templates import template_refs
from agentflow.runtime.control import run_pool
from agentflow.runtime.durable.records import digest, lost_secret, question_digest
from agentflow.runtime.effects import Effects, UnitSpec, call_tool_cleaned
from agentflow.runtime.events import EventBus
from agentflow.runtime.executor import CONTROL, Executor, Frame
from agentflow.runtime.hooks import NO_ANSWER, AskRequest, Interlocutor
from agentflow.runtime.interrupt import stopping
from agentflow.runtime.models.cassette import request_key

if TYPE_CHECKING:
    from agentflow.ir.models import Plan, Step
    from agentflow.runtime.context import RunContext
    from agentflow.runtime.models.base import ChatRequest, ChatResponse
    from agentflow.runtime.models.router import RoutedClient
    from agentflow.runtime.tools.catalog import Tool, ToolContext

__all__ = [
    "NO_MESSAGE",
    "DurableEffects",
    "Engine",
    "ItemEngine",
    "PlanIndex",
    "Runtime",
    "body_refs",
    "digest",
    "tool_idempotent",
]

T = TypeVar("T")

#: What :meth:`Engine.receive` returns when its timeout passed without a message.
NO_MESSAGE: Any = object()


class Engine(Protocol):
    """What a durable-execution backend provides (DBOS: runtime/durable/dbos_engine.py).

    Every method is called from inside a running durable unit (the run's root workflow or a
    child); names are unique within the unit and stable across replays.
    """

    def workflow_id(self) -> str:
        """The id of the durable unit running now."""
        ...

    def now(self) -> float:
        """The clock of the running unit (epoch seconds): the wall clock (DBOS), or the
        workflow's recorded time (Temporal, the same on replay)."""
        ...

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        """Run ``fn()`` once as the operation ``name`` and record its result (or exception);
        on replay return the recorded one.  Returns ``(value, ran)``: ``ran`` is False when
        the value was replayed.  A recorded operation of another name at this position raises
        ``RunError("durable_replay_mismatch")``."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Sleep durably (a resumed unit sleeps only what is left)."""
        ...

    async def publish(self, key: str, value: Any) -> None:
        """Record ``value`` under ``key`` on this unit, readable from any process."""
        ...

    async def receive(self, topic: str, timeout: float | None) -> Any:
        """The next message sent to this unit on ``topic``, or :data:`NO_MESSAGE` after
        ``timeout`` seconds (None: wait indefinitely); the timeout is durable."""
        ...

    async def close_unanswered(self, key: str) -> bool:
        """Close question ``key`` of this unit as unanswered (its wait timed out), atomically
        against an answer being accepted at the same moment: True when it closed it, False
        when an answer was accepted first (its message is then waiting: receive it).  The
        same on replay (the claim is kept)."""
        ...

    async def start_child(self, child_id: str, spec: dict[str, Any], queue: str | None) -> Any:
        """Start the child unit ``child_id`` running ``spec`` (on ``queue``, shared by the
        fleet's workers, or here when None); returns a handle for :meth:`collect`.  Children
        are started in index order; a replay that starts another child id at this position
        raises ``durable_replay_mismatch``."""
        ...

    async def collect(self, handle: Any) -> Any:
        """The child's result (or its exception raised here)."""
        ...

    async def cancel_child(self, handle: Any, message: str | None = None) -> None:
        """Cancel a child that is no longer awaited (``message``: why, as the awaiting task
        was cancelled: ``control.SIBLING_FAILED``)."""
        ...

    def replaying(self) -> bool:
        """True while the running unit re-executes operations it has recorded."""
        ...


class ItemEngine(Engine, Protocol):
    """An :class:`Engine` that records operations by name, in batches (DBOS:
    runtime/durable/items.py: rows of ``agentflow_items``, group commit).

    Optional: :class:`DurableEffects` uses these methods when its engine has them (it looks for
    ``item_step``), and records every operation with :meth:`Engine.step` otherwise (Temporal).
    Two kinds of operation are recorded this way, both idempotent and named by step path:

    - the call of a **one-call unit** — a map item, ``parallel`` branch, ``reduce`` or ``loop``
      body that is one idempotent tool call (:meth:`DurableEffects.one_call`): units that run
      concurrently, replayed by name (``ordered=False``);
    - an **ordered** operation of the running unit — an idempotent tool call, a model call not
      sent through a fleet queue (an agent's rounds): one after another in the unit, so while
      the unit has such records not yet replayed it is replaying (``ordered=True``).

    Questions, sleeps, child units, non-idempotent calls (and their "begin" markers) stay
    engine steps (:meth:`Engine.step`).
    """

    async def recorded_item(self, path: str) -> bool:
        """True when the running unit recorded the one-call unit at step ``path`` (it is then
        replayed: its events are not emitted again)."""
        ...

    async def item_step(
        self, name: str, fn: Callable[[], Awaitable[T]], *, ordered: bool = False
    ) -> tuple[T, bool]:
        """:meth:`Engine.step` for an operation recorded by name: the same contract (run
        once, the result or exception recorded before this returns, the recorded one on
        replay; ``(value, ran)``), but by name rather than by position."""
        ...

    def replaying_items(self) -> bool:
        """True while the running unit has ordered records it has not replayed yet."""
        ...


#: The one-call unit running in this task: (its step path, whether it is replayed), or None.
_ITEM: contextvars.ContextVar[tuple[str, bool] | None] = contextvars.ContextVar(
    "agentflow_durable_item", default=None
)
#: The map batch unit (its workflow id) whose items this task runs (:func:`_run_batch`): its
#: one-call items are item records of the batch even in a fleet (:meth:`DurableEffects.one_call`)
_BATCH_UNIT: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "agentflow_durable_batch", default=None
)


# ---------------------------------------------------------------------------------------------
# Digests, idempotency, scope


def tool_idempotent(tool: Tool) -> bool:
    """Whether running ``tool`` twice with the same arguments is harmless (at-least-once is
    then fine when a crash leaves a call's outcome unknown): ``tool.meta["idempotent"]`` when
    set (user tools: ``@tool(idempotent=False)``; MCP: the ``idempotentHint``/``readOnlyHint``
    annotations; builtins: every tool but ``edit_file``), else True for user tools and plans,
    False for MCP tools (the MCP default)."""
    flag = tool.meta.get("idempotent") if isinstance(tool.meta, dict) else None
    if isinstance(flag, bool):
        return flag
    return tool.source != "mcp"


def body_refs(step: Step) -> set[str]:
    """The root names (``input``, step ids, ``item``, ``index``, …) a body step and everything
    nested in it reference: the scope values a child unit must be given."""

    names: set[str] = set()
    seen: set[int] = set()

    def walk_step(s: Any) -> None:
        if id(s) in seen:
            return
        seen.add(id(s))
        names.update(template_refs(s.compiled))
        if s.select is not None:
            names.update(template_refs(s.compiled_select))
        walk_value(s.compiled)

    def walk_value(value: Any) -> None:
        if isinstance(value, StepModel):
            walk_step(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk_value(v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk_value(v)

    walk_step(step)
    return names


class PlanIndex:
    """Every step object of a run's plans, by a stable locator (``plan-chain:steps[2]/do``), so
    a child unit in another process finds the body it runs."""

    def __init__(self, plan: Plan, callable_plans: Mapping[str, Plan]):
        self.root = plan
        self.callable = dict(callable_plans)
        self._by_id: dict[int, str] = {}
        self._by_key: dict[str, Step] = {}
        self._indexed: set[int] = set()

    def _index(self, plan: Plan, name: str) -> None:
        if id(plan) in self._indexed:
            return
        self._indexed.add(id(plan))

        def walk(value: Any, key: str) -> None:
            if isinstance(value, StepModel):
                self._by_id.setdefault(id(value), key)
                self._by_key.setdefault(key, value)
                walk(value.compiled, key)
            elif isinstance(value, dict):
                for k, v in value.items():
                    walk(v, f"{key}/{k}")
            elif isinstance(value, list | tuple):
                for i, v in enumerate(value):
                    walk(v, f"{key}/{i}")

        for i, step in enumerate(plan.steps):
            walk(step, f"{name}:{i}")
        for sub_name, sub in (plan.plans or {}).items():
            self._index(sub, f"{name}.{sub_name}")

    def _all(self) -> None:
        self._index(self.root, "")
        for name, plan in self.callable.items():
            self._index(plan, f"@{name}")

    def has(self, step: Step) -> bool:
        """True when ``step`` is a step of one of the run's plans (a plan that
        ``plan_and_execute`` wrote during the run is not)."""
        if id(step) not in self._by_id:
            self._all()
        return id(step) in self._by_id

    def locator(self, step: Step) -> str:
        """The locator of ``step`` (a step of one of the run's plans)."""
        key = self._by_id.get(id(step))
        if key is None:
            self._all()
            key = self._by_id.get(id(step))
        if key is None:
            raise RunError(Code.VALIDATION, "a unit's body is not a step of the run's plans")
        return key

    def step(self, key: str) -> Step:
        """The step at locator ``key``."""
        found = self._by_key.get(key)
        if found is None:
            self._all()
            found = self._by_key.get(key)
        if found is None:
            raise RunError(Code.DURABLE_REPLAY_MISMATCH, f"no step at {key!r} in the run's plans")
        return found

    def plan_for(self, stack: list[str]) -> Plan:
        """The plan of a frame whose call stack is ``stack`` (outermost plan name first)."""
        plan = self.root
        for name in stack[1:]:
            found = (plan.plans or {}).get(name) or (self.root.plans or {}).get(name)
            if found is None:
                found = next(
                    (p for p in (*(self.root.plans or {}).values(), *self.callable.values())
                     if p.name == name),
                    None,
                )  # fmt: skip
            if found is None:
                raise RunError(Code.DURABLE_REPLAY_MISMATCH, f"no plan {name!r} in the run")
            plan = found
        return plan


# ---------------------------------------------------------------------------------------------
# The effects of a durable run


class _Interrupted(BaseException):
    """An operation that failed after the run was asked to stop (SIGINT/SIGTERM): a
    BaseException, so the engine records nothing for it (a DBOS step and an item record
    store an ``Exception``); :meth:`DurableEffects._step` raises ``Stopped`` for it."""


async def _made(fn: Callable[[], Awaitable[Any]]) -> Any:
    """``await fn()``, an operation's effect; one that fails as the run is asked to stop (a
    Ctrl-C kills a tool's child process too) is interrupted, not recorded
    (:class:`_Interrupted`), so a resume makes it again."""
    try:
        return await fn()
    except Exception:
        if stopping() is not None:
            raise _Interrupted from None
        raise


class DurableEffects(Effects):
    """The :class:`~agentflow.runtime.effects.Effects` of a durable run: every effect becomes an
    operation of ``engine`` named by its step path (see the module doc).

    ``run_id``: the run (the root unit's id).  ``index``: the run's plans, to describe child
    units.  ``reuse``: ``{operation name: (digest, value)}`` of an earlier run whose results
    may be taken (``--reuse``, ``redrive``).  ``started``: the run's start (epoch seconds; its
    deadline counts from there).  ``ask_timeout``: how long a question waits by default
    (seconds; None: until answered).  ``queues``: how concurrent units and rate-limited model
    calls are spread over a fleet (None: all here).
    """

    __slots__ = (
        "engine",
        "run_id",
        "index",
        "reuse",
        "started",
        "ask_timeout",
        "queues",
        "executor",
        "_counts",
        "_replayed",
        "_items",
        "_held",
        "_inline",
        "reused",
        "_reused_at",
    )

    durable = True

    def __init__(
        self,
        engine: Engine,
        run_id: str,
        index: PlanIndex,
        *,
        reuse: Mapping[str, tuple[str, Any]] | None = None,
        started: float | None = None,
        ask_timeout: float | None = None,
        queues: Any = None,
    ):
        self.engine = engine
        self.run_id = run_id
        self.index = index
        self.reuse = dict(reuse or {})
        self.started = started if started is not None else time.time()
        self.ask_timeout = ask_timeout
        self.queues = queues
        self.executor: Executor | None = None
        self._counts: dict[tuple[str, str], int] = {}
        #: (unit, step path) → whether the latest operation made there was replayed
        self._replayed: dict[tuple[str, str], bool] = {}
        #: names of operations whose result was taken from ``reuse`` (for tests and reports)
        self.reused: list[str] = []
        #: (unit, step path) → whether the latest operation made there was taken from ``reuse``
        self._reused_at: dict[tuple[str, str], bool] = {}
        #: the engine records idempotent operations by name, in batches (:class:`ItemEngine`)
        self._items = hasattr(engine, "item_step")
        #: unit → its events held until the records before them are committed (:meth:`deliver`)
        self._held: dict[str, collections.deque[tuple[Any, Callable[[], None]]]] = {}
        #: group of sibling units → the lock that runs them one after another here (units of
        #: a plan no other process can rebuild: :meth:`unit`)
        self._inline: dict[str, asyncio.Lock] = {}

    # ----------------------------------------------------------------- plumbing

    def bind(self, executor: Executor) -> None:
        """Remember the executor of the run's root (child units in this process use it)."""
        if self.executor is None:
            self.executor = executor

    def deliver(self, publish: Callable[[], None]) -> None:
        """Deliver an event of the running unit once every record it queued before it is
        committed (the engine writes an ordered operation's record behind: items.py), so no
        finished event goes out for a call a crash would run again; events of one unit keep
        their order."""
        pending = getattr(self.engine, "pending_record", None)
        last = pending() if pending is not None else None
        unit = self.engine.workflow_id()
        held = self._held.get(unit)
        if held is None:
            if last is None or last.done():
                publish()
                return
            held = self._held[unit] = collections.deque()
        held.append((last, publish))
        if len(held) == 1:
            self._release(unit)

    def _release(self, unit: str) -> None:
        held = self._held.get(unit)
        while held:
            record, publish = held[0]
            if record is not None and not record.done():
                record.add_done_callback(lambda _: self._release(unit))
                return
            held.popleft()
            publish()  # a write that failed fails the unit at its next operation
        self._held.pop(unit, None)

    async def ending(self) -> bool:
        """The run's root is about to end (with any status but ``cancelled``): True when it
        takes the run's end, False when ``flowc cancel`` took it first — the run then ends
        ``cancelled``, in its trace, its console, its result and its record alike
        (docs/durable.md "A cancel that comes late"; DBOS: a row of the answers table,
        Temporal: the cancel request seen in workflow code, else a claim in the memo).  An
        engine without ``claim_end`` always lets it end."""
        claim_end = getattr(self.engine, "claim_end", None)
        if claim_end is None:
            return True
        with contextlib.suppress(Exception):  # a database gone: the outcome's write reports it
            return bool(await claim_end())
        return True

    async def settle(self) -> None:
        """Wait for the running unit's records, then deliver its held events — delivered also
        when the wait is cancelled (a run `flowc cancel` ended: its task's pending cancellation
        lands in the wait), so the run's last events, its ``run_finished`` among them, still
        reach the console and the trace."""
        flush = getattr(self.engine, "flush", None)
        unit = self.engine.workflow_id()
        try:
            if flush is not None:
                with contextlib.suppress(Exception):  # the unit's next operation raises it
                    await flush()
        finally:
            held = self._held.get(unit)
            while held:
                held.popleft()[1]()
            self._held.pop(unit, None)

    def forget(self, workflow_id: str) -> None:
        """Drop the call counts of a unit that (re)starts: it counts from 1 again."""
        for key in [k for k in self._counts if k[0] == workflow_id]:
            del self._counts[key]

    def _peek_name(self, base: str) -> str:
        """The name :meth:`_name` gives ``base`` next, without taking it."""
        return f"{base}#{self._counts.get((self.engine.workflow_id(), base), 0) + 1}"

    def _name(self, base: str) -> str:
        """``base#n``: the n-th operation of that base name in the running unit (operations of
        one name in one unit run one after another, so n is the same on replay)."""
        key = (self.engine.workflow_id(), base)
        n = self._counts.get(key, 0) + 1
        self._counts[key] = n
        return f"{base}#{n}"

    async def _step(
        self,
        name: str,
        key: str,
        fn: Callable[[], Awaitable[T]],
        *,
        idempotent: bool = True,
        path: str | None = None,
        item: bool | None = None,
    ) -> T:
        """Run ``fn`` as operation ``name`` (made at step ``path``) whose rendered input has
        digest ``key``; a result recorded under the same name and digest by the run reused is
        taken instead.  ``item``: record it by name (:class:`ItemEngine`): True for the call
        of a one-call unit, False for an ordered operation, None as an engine step."""
        if not idempotent:
            _, began_now = await self.engine.step(f"{name}/begin", _true)
        else:
            began_now = True

        async def perform() -> dict[str, Any]:
            hit = self.reuse.get(name)
            if hit is not None and hit[0] == key:
                self.reused.append(name)
                return {"d": key, "v": hit[1], "reused": True}
            if not began_now:
                raise RunError(
                    Code.OUTCOME_UNKNOWN,
                    f"`{name.split('/tool:')[-1].split('#')[0]}` was running when the run "
                    "stopped and is not idempotent, so it is not run again: check its effect, "
                    "then `flowc redrive` the run",
                )
            return {"d": key, "v": await _made(fn)}

        try:
            if item is not None and idempotent and self._items:
                engine: Any = self.engine
                record, ran = await engine.item_step(name, perform, ordered=not item)
            else:
                record, ran = await self.engine.step(name, perform)
            if not ran and lost_secret(record):
                record, ran = await self._again(name, fn, record, idempotent=idempotent), True
        except _Interrupted:
            raise Stopped(f"interrupted by {stopping() or 'SIGINT'}", path) from None
        if path is not None:
            self._replayed[(self.engine.workflow_id(), path)] = not ran
            self._reused_at[(self.engine.workflow_id(), path)] = bool(record.get("reused"))
        value: T = record["v"]
        return value

    async def _again(
        self,
        name: str,
        fn: Callable[[], Awaitable[Any]],
        record: dict[str, Any],
        *,
        idempotent: bool,
    ) -> dict[str, Any]:
        """The record of operation ``name`` made again, not recorded: its recorded result held
        a secret, which was redacted before it was written (records.py :data:`REDACTED`), so
        the recorded value is not the one the run saw and is never fed forward.  An
        idempotent operation runs again here (each resume runs it again: its place is
        recorded); a non-idempotent one, or one on an engine that can run nothing outside its
        history (Temporal: ``reruns_unrecorded`` False), is a ``durable_replay_mismatch``
        naming it (docs/decisions.md "A record that held a secret is not replayed")."""
        shown = name.rsplit("/", 1)[-1].split("#")[0].removeprefix("tool:")
        run_id = self.engine.workflow_id().split("/", 1)[0]
        why = None
        if not idempotent:
            why = f"`{shown}` is not idempotent, so it is not run again: check its effect"
        elif not getattr(self.engine, "reruns_unrecorded", False):
            why = "this engine replays its history and runs nothing outside it"
        if why is not None:
            raise RunError(
                Code.DURABLE_REPLAY_MISMATCH,
                f"run {run_id} cannot be resumed: the recorded result of `{shown}` held a "
                f"secret, which is never stored, so it cannot be replayed; {why}, then "
                "`flowc redrive` the run (it runs the operation again)",
            )
        return {"d": record["d"], "v": await _made(fn)}

    # ----------------------------------------------------------------- effects

    async def call_tool(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Any:
        """One tool call as one durable operation ``{path}/tool:{name}#n``."""
        name = self._name(f"{ctx.step_path}/tool:{tool.name}")
        unit = _ITEM.get()
        # a file tool's (and a Python tool's: it is given the workspace) call is another
        # operation in another workspace: `--reuse`/`redrive --workspace` run it again there
        where = [str(ctx.workspace.resolve())] if tool.source in ("builtin", "user") else []
        return await self._step(
            name,
            digest(tool.name, args, *where),
            lambda: call_tool_cleaned(tool, args, ctx),
            idempotent=tool_idempotent(tool),
            path=ctx.step_path,
            item=unit is not None and unit[0] == ctx.step_path,
        )

    async def chat(self, client: RoutedClient, request: ChatRequest, path: str) -> ChatResponse:
        """One inference as one durable operation ``{path}/model:{role}#n`` (through the model's
        fleet-wide queue when ``[models.X]`` sets a rate limit or concurrency)."""

        role = getattr(client, "role", "chat")
        name = self._name(f"{path}/model:{role}")
        # the model(s) the role resolves to (`openai:gpt-4o`, its failover list) decide the
        # answer too: `--reuse` after `[models]` changed asks the new model
        models = getattr(client, "models", None)
        key = digest(role, request_key(request), *([models] if isinstance(models, list) else []))
        queue = self.queues.model_queue(client) if self.queues is not None else None
        hit = self.reuse.get(name)
        if queue is not None and (hit is None or hit[0] != key):
            # a child unit on the model's queue (a step cannot start one), then its answer
            # recorded as this operation's result like any other model call's
            answered = await chat_on_queue(self, name, role, request, path, queue)

            async def fn() -> ChatResponse:
                return answered

        else:
            # a backend that holds a model's fleet-wide limits per request (Temporal's
            # limiter workflow): the request is sent while it holds the model's slot, which
            # is waited for in workflow code first (``take_model_slot``), outside any
            # operation: the unit's workflow task completes while it waits, and what ran
            # before (a tool's result) is recorded then, not run again by another worker
            slot = getattr(self.engine, "model_slot", None)
            take = getattr(self.engine, "take_model_slot", None)
            ticket = (
                await take(client, name)
                if take is not None and (hit is None or hit[0] != key)
                else None
            )

            async def fn() -> ChatResponse:
                held = slot(client, ticket) if slot is not None else None
                if held is None:
                    return await client.chat(request)
                async with held:
                    return await client.chat(request)

        response = await self._step(name, key, fn, path=path, item=False if queue is None else None)
        if name in self.reused:
            response = dataclasses.replace(response)
            response.reused = True  # free: model_call says so
        elif self._replayed.get((self.engine.workflow_id(), path)):
            # taken from this run's record (a resume replaying a call made before the process
            # stopped): one run, one budget — its recorded usage counts in the run's usage and
            # against its budgets, with no request made (docs/models.md "Budgets")
            count = getattr(client, "count_recorded", None)
            if count is not None:
                count(response, request)
        return response

    async def known_answer(self, request: AskRequest) -> str | None:
        """``reused`` when the reused run answered this question unchanged (``--reuse``),
        ``answered`` when an answer was accepted for it already (``flowc answer`` while the run
        was stopped: the engine's claim), else None (the question is published and waits)."""
        name = self._peek_name(f"{request.step_path}/ask")
        key = question_digest(request.question, request.choices, request.schema)
        hit = self.reuse.get(name)
        if hit is not None and hit[0] == key:
            return "reused"
        claimed = getattr(self.engine, "answer_claimed", None)
        if claimed is not None and await claimed(name):
            return "answered"
        return None

    async def ask(self, interlocutor: Interlocutor | None, request: AskRequest) -> Any:
        """Publish the question (``flowc runs`` lists it; ``flowc answer`` answers it from any
        process) and wait for the answer as a message; :data:`NO_ANSWER` after the question's
        timeout (the ask step's ``timeout``, else ``[durable] ask_timeout``).

        An answer is recorded as operation ``{path}/ask#n`` whose digest is the question's
        text, choices and schema, so ``--reuse`` / ``redrive`` take a question the earlier run
        had answered, unchanged, without asking it again (an unanswered one is asked)."""
        path = request.step_path
        timeout = request.timeout if request.timeout is not None else self.ask_timeout
        name = self._name(f"{path}/ask")
        key = question_digest(request.question, request.choices, request.schema)
        hit = self.reuse.get(name)
        if hit is not None and hit[0] == key:
            return await self._step(name, key, _no_answer, path=path)
        question = {
            "question": request.question,
            "schema": request.schema,
            "choices": request.choices,
            "path": path,
            "operation": name,  # the question's key: exactly one answer is accepted for it
            "timeout": timeout,
            "asked_at": self.engine.now(),
        }
        if request.label:
            question["label"] = request.label  # `flowc runs` names the step as the `.flow` does
        await self.engine.publish(f"question:{path}", question)
        message = await self.engine.receive(f"answer:{path}", timeout)
        if message is NO_MESSAGE and not await self.engine.close_unanswered(name):
            # an answer was accepted as the wait timed out: it is delivered, take it
            message = await self.engine.receive(f"answer:{path}", None)
        await self.engine.publish(
            f"question:{path}", {**question, "answered": message is not NO_MESSAGE}
        )
        if message is NO_MESSAGE or not isinstance(message, dict):
            return NO_ANSWER
        answer = message.get("answer")

        async def given() -> Any:
            return answer

        return await self._step(name, key, given, path=path)

    async def sleep(self, seconds: float, path: str) -> None:
        """A retry's backoff as a durable sleep."""
        await self.engine.sleep(seconds)

    async def timer(self, seconds: float, path: str) -> float:
        """A ``sleep`` step's wake-up time recorded as operation ``{path}/sleep#n`` (epoch
        seconds; the unit's clock, ``Engine.now``, when it was first reached): a resumed run
        replays it and so wakes when the first process would have (``runs show`` reads it
        while the run sleeps)."""
        name = self._name(f"{path}/sleep")
        now = self.engine.now()

        async def wakes() -> float:
            return now + seconds

        return float(await self._step(name, digest("sleep", seconds), wakes, path=path))

    async def sleep_until(self, wakes_at: float, path: str) -> None:
        """The engine's durable timer for what is left until ``wakes_at`` (DBOS: a recorded
        sleep; Temporal: a server timer); 1 ms when it has passed."""
        # a timer also when the time has passed (1 ms): the engine's record of the sleep is
        # positional (DBOS's sleep row, Temporal's timer), and a resume that reaches it after
        # the wake-up time must meet it where the first process made it, not the next operation
        await self.engine.sleep(max(wakes_at - self.engine.now(), 0.001))
        # the step's end was never told before the wait ended (its record is the wake-up
        # time, made before the wait): a resume's console and trace say it
        self._replayed[(self.engine.workflow_id(), path)] = False

    def now(self) -> float:
        """The engine's clock (epoch seconds): deadlines hold across processes and restarts."""
        return self.engine.now()

    def started_at(self) -> float:
        """When the run started (recorded with it): its deadline counts from there."""
        return self.started

    def random(self, path: str) -> float:
        """A number in [0, 1) from the unit, the path and the call count: the same on replay."""
        name = self._name(f"{path}/random")
        value = int(hashlib.sha256(f"{self.run_id}|{name}".encode()).hexdigest()[:13], 16)
        return value / float(1 << 52)

    def event_id(self, kind: str, path: str, error_code: str | None) -> str:
        """``UNIT|PATH/event:KIND#n[!CODE]``: the n-th ``kind`` event at ``path`` in the
        running unit, the same in every process that runs or replays the unit (its work
        runs in the same order), so a continued trace writes it once.  A failure's code is
        part of it: a step stopped by a graceful stop (``aborted``) that runs again to the
        end finished twice, differently."""
        name = self._name(f"{path}/event:{kind}")
        return f"{self.engine.workflow_id()}|{name}" + (f"!{error_code}" if error_code else "")

    def run_budgets(self, budgets: list[Any]) -> list[Any]:
        """The run's budgets as the engine holds them (Temporal: one ledger every worker of
        the run reserves in, temporal_budget.py); else ``budgets`` themselves."""
        held = getattr(self.engine, "run_budgets", None)
        return held(budgets, self.run_id) if held is not None else budgets

    def evaluation_clock(self) -> bool:
        """False on an engine whose workflow time stands still in workflow code (Temporal:
        ``evaluation_clock = False``): a busy evaluation then ends at a deadline between steps."""
        return bool(getattr(self.engine, "evaluation_clock", True))

    async def evaluation(self, path: str, work: Callable[[], Any]) -> Any:
        """``work()``, an evaluation at step ``path``: on an engine that evaluates long ones
        elsewhere (Temporal ``evaluate``: past a work budget, in the operation
        ``{path}/eval#n``), through it; else once the engine says the unit's start is on disk
        (DBOS: a root's insert, synced beside it — its id and first events go out before an
        evaluation that holds the event loop)."""
        evaluate = getattr(self.engine, "evaluate", None)
        if evaluate is None:
            started = getattr(self.engine, "started", None)
            if started is not None:  # a long evaluation holds the loop: the run's start first
                await started()
            return work()
        return await evaluate(lambda: self._name(f"{path}/eval"), work)

    def cancel_probe(self) -> Callable[[], bool] | None:
        """The engine's synchronous "was the running unit cancelled?" (DBOS: a read of its
        database), which a busy evaluation asks now and then; None when it has none."""
        return getattr(self.engine, "cancelled_now", None)

    def cancel_requested(self) -> bool:
        """True when the engine says the running unit's cancellation was requested (Temporal:
        ``flowc cancel`` cancels the workflow's task); an engine without the question: False."""
        asked = getattr(self.engine, "cancel_requested", None)
        return bool(asked()) if asked is not None else False

    def replaying(self) -> bool:
        """True while the running unit replays recorded operations (or a recorded one-call
        unit: :class:`ItemEngine`)."""
        unit = _ITEM.get()
        if unit is not None and unit[1]:
            return True
        if self.engine.replaying():
            return True
        return self._items and self.engine.replaying_items()  # type: ignore[attr-defined]

    def end_replayed(self) -> bool:
        """True while the running unit replays and its engine records the task that says the
        run's end before the run completes (``end_recorded``: Temporal), so the end met in a
        replay was said (see :meth:`Effects.end_replayed`)."""
        return bool(getattr(self.engine, "end_recorded", False)) and self.replaying()

    def replayed(self, path: str) -> bool:
        """True when the latest tool or model operation at ``path`` in the running unit was
        replayed (see :meth:`Effects.replayed`)."""
        return self._replayed.get((self.engine.workflow_id(), path), False)

    def reused_at(self, path: str) -> bool:
        """True when the latest operation at ``path`` in the running unit was taken from the
        reused run (see :meth:`Effects.reused_at`)."""
        return self._reused_at.get((self.engine.workflow_id(), path), False)

    async def unit(
        self, path: str, work: Callable[[], Awaitable[T]], spec: UnitSpec | None = None
    ) -> T:
        """A concurrent unit runs as a child unit ``{parent id}/{path}``; any other runs here
        (its operations are recorded in the running unit, one after another; a one-call unit's
        in batches when the engine can: :class:`ItemEngine`)."""
        if spec is not None and self.one_call(spec):
            if not self._items:
                return await work()
            replayed = await self.engine.recorded_item(path)  # type: ignore[attr-defined]
            token = _ITEM.set((path, replayed))
            try:
                return await work()
            finally:
                _ITEM.reset(token)
        if spec is None or not spec.concurrent:
            return await work()
        if spec.kind == "body" and spec.body is not None and not self.index.has(spec.body):
            # a unit of a plan written during the run (`plan_and_execute` in `flowc ask`):
            # no other process could rebuild its body, so it runs here, one sibling after
            # another in the order they start (each one's operations keep their place)
            group = f"{self.engine.workflow_id()}|{path.rsplit('/', 1)[0]}"
            lock = self._inline.setdefault(group, asyncio.Lock())
            async with lock:
                return await work()
        child: T = await self._child(path, self.describe(path, spec), spec)
        return child

    async def _child(self, path: str, child_spec: dict[str, Any], spec: UnitSpec) -> Any:
        """Run ``child_spec`` as the child unit ``{parent id}/{path}``; its result."""
        parent = self.engine.workflow_id()
        base = path
        prefix = child_spec.get("parent_path") or ""
        if prefix and path.startswith(prefix + "/"):
            base = path[len(prefix) + 1 :]
        n = self._name(f"unit:{path}").rsplit("#", 1)[1]
        child_id = f"{parent}/{base}" + (f"#{n}" if n != "1" else "")
        queue = self.queues.unit_queue(spec) if self.queues is not None else None
        if queue is not None:
            child_spec["queue_key"] = f"{self.run_id}/{child_spec['group']}"
            if child_spec["kind"] == "batch":
                # a map's batch: the map's pool bounds the batches at once
                queue = self.queues.batch_queue
            elif _BATCH_UNIT.get() == parent:
                # an item of a batch that is not one call: the batch's pool bounds its items
                queue, child_spec["queue_key"] = self.queues.batch_item_queue, parent
        handle = await self.engine.start_child(child_id, child_spec, queue)
        try:
            return await self.engine.collect(handle)
        except asyncio.CancelledError as why:
            # a child that finished here as the run was stopped (its result on its way to this
            # parent, or its body returning while the cancel was sent): what it finished is
            # kept (spec.finished), as a plain run keeps it
            done = getattr(self.engine, "finished_child", None)
            found = done(handle) if done is not None and spec.finished is not None else None
            await asyncio.shield(
                self.engine.cancel_child(handle, why.args[0] if why.args else None)
            )
            if found is None and done is not None and spec.finished is not None:
                found = done(handle)
            if found is not None and spec.finished is not None:
                spec.finished(found[0])
            raise

    def map_batch(self, path: str, n: int) -> int | None:
        """The engine's batch size for a map of ``n`` items (its ``map_batch``), or None when
        the engine has none or the map fits one unit."""
        sized = getattr(self.engine, "map_batch", None)
        return sized(n) if sized is not None else None

    async def map_slice(
        self, path: str, k: int, items: list[Any], lo: int, spec: UnitSpec, fail_fast: bool
    ) -> list[Any]:
        """Batch ``k`` of the map at ``path`` as the child unit ``{parent id}/{path}/batch.K``
        (the same id on every replay and resume); each item's value or RunError, in order."""
        child = self.describe(f"{path}/batch.{k}", spec)
        child.update(kind="batch", map_path=path, items=items, lo=lo, fail_fast=fail_fast)
        return list(await self._child(child["unit"], child, spec))

    def one_call(self, spec: UnitSpec) -> bool:
        """True for a unit that makes exactly one durable call, reached without waiting on
        anything: a body that is one plain, idempotent tool call without ``retry``, when the
        run's gate (if any) is synchronous.  Such units run in the parent like any other call:
        started in index order, each claims its position in the parent's record before yielding,
        and its name holds its path (the issue's rule: only units making more than one durable
        call need a child workflow).  On a fleet a unit goes to a worker instead, except an item
        of a map batch running here (``_BATCH_UNIT``): it is an item record of the batch."""
        body = spec.body
        ex = self.executor
        if spec.kind != "body" or body is None or ex is None:
            return False
        if self.queues is not None and _BATCH_UNIT.get() != self.engine.workflow_id():
            return False  # a fleet's unit goes to a worker; a batch's item runs in the batch

        name = body.tool_name
        if name in CONTROL or name.startswith("plan__") or body.retry is not None:
            return False
        catalog = ex.ctx.catalog
        tool = catalog.get(name) if catalog is not None else None
        if tool is None or not tool_idempotent(tool):
            return False
        gate = ex.ctx.hooks.gate
        return gate is None or not asyncio.iscoroutinefunction(gate)

    def describe(self, path: str, spec: UnitSpec) -> dict[str, Any]:
        """The input of a child unit: everything it needs to run in another process (the plan
        frame by name, the body by locator, only the scope values the body references)."""
        frame = spec.frame
        group = path.rsplit("/", 1)[0] if "/" in path else path
        out: dict[str, Any] = {
            "run": self.run_id,
            "kind": spec.kind,
            "path": path.split("#", 1)[0] if spec.kind == "tool" else path,
            "unit": path,
            "stack": list(frame.stack),
            "prefix": frame.prefix,
            "deadline_at": frame.deadline_at,
            "limit": spec.limit,
            "group": group,
            "parent_path": _unit_path_of(self.engine.workflow_id(), self.run_id),
        }
        if spec.kind == "body":
            assert spec.body is not None
            out["body"] = self.index.locator(spec.body)
            wanted = body_refs(spec.body)
            scope = spec.scope or {}
            out["scope"] = {k: scope[k] for k in wanted if k in scope}
        else:
            out["name"] = spec.name
            out["args"] = spec.args
            if spec.kind == "tool":
                out["write_scope"] = (
                    [str(p) for p in spec.write_scope] if spec.write_scope is not None else None
                )
                out["allowed"] = sorted(spec.allowed) if spec.allowed is not None else None
        return out


async def _true() -> bool:
    return True


async def _no_answer() -> Any:  # never called: a reused answer is taken before it
    return NO_ANSWER


def _unit_path_of(workflow_id: str, run_id: str) -> str:
    """The step path a child unit's id stands for ("" for the run's root unit)."""
    if workflow_id == run_id or not workflow_id.startswith(run_id + "/"):
        return ""
    # a map's batch stands for the map (its items are {batch id}/do.I): not a step path's part
    return _BATCH.sub("", workflow_id[len(run_id) + 1 :].split("#", 1)[0])


#: a map batch's segment of a unit's id (``E2/batch.3``, ``E2/batch.3/do.3001``)
_BATCH = re.compile(r"/batch\.\d+(?=/|$)")


async def chat_on_queue(
    effects: DurableEffects, name: str, role: str, request: ChatRequest, path: str, queue: str
) -> ChatResponse:
    """The model call ``name`` as a child unit on the model's fleet-wide ``queue`` (its rate
    limit and concurrency hold across every worker); its answer."""
    spec = {
        "run": effects.run_id,
        "kind": "model",
        "role": role,
        "path": path,
        "request": dataclasses.replace(request, on_delta=None),
        "model": queue.removeprefix("agentflow.model."),  # its rate limit: ratelimit.py
    }
    child_id = f"{effects.engine.workflow_id()}/{name}"
    handle = await effects.engine.start_child(child_id, spec, queue)
    response: ChatResponse = await effects.engine.collect(handle)
    return response


async def run_unit(ex: Executor, index: PlanIndex, spec: dict[str, Any]) -> Any:
    """Run the child unit described by ``spec`` (:meth:`DurableEffects.describe`) with ``ex``."""

    kind = spec["kind"]
    if kind == "model":
        router = ex.ctx.router
        if router is None:
            raise RunError(Code.VALIDATION, "a model call reached a worker without a model")
        return await router.client_for(spec["role"]).chat(spec["request"])
    plan = index.plan_for(spec["stack"])
    frame = Frame(
        plan=plan,
        stack=list(spec["stack"]),
        prefix=spec["prefix"],
        deadline_at=spec["deadline_at"],
        root_plans=dict(index.root.plans or {}),
    )
    if kind == "body":
        body = index.step(spec["body"])
        return await ex.run_step(body, dict(spec["scope"]), spec["path"], frame)
    if kind == "batch":
        return await _run_batch(ex, index.step(spec["body"]), spec, frame)
    if kind == "plan":
        return await ex.call_plan(spec["name"], spec["args"], spec["path"], frame)
    if kind == "tool":
        write = spec.get("write_scope")
        allowed = spec.get("allowed")
        return await ex.dispatch_tool(
            spec["name"],
            spec["args"],
            scope={},
            path=spec["path"],
            frame=frame,
            write_scope=[Path(p) for p in write] if write is not None else None,
            allowed=set(allowed) if allowed is not None else None,
        )
    raise RunError(Code.DURABLE_REPLAY_MISMATCH, f"unknown unit kind {kind!r}")


@dataclass
class Runtime:
    """One run as this process sees it: its plan, context, durable effects and executor."""

    run_id: str
    spec: dict[str, Any]
    plan: Plan
    ctx: RunContext
    effects: DurableEffects
    owned: bool = False  # built here from the recorded input: close its catalog and router
    _unit_ex: Executor | None = None
    _limits: dict[str, asyncio.Semaphore] = field(default_factory=dict)

    def unit_executor(self) -> Executor:
        """The executor units run with: the root's when it runs in this process."""
        if self.effects.executor is not None:
            return self.effects.executor
        if self._unit_ex is None:
            self._unit_ex = Executor(self.ctx, EventBus(self.ctx.sinks), effects=self.effects)
        return self._unit_ex

    def limit(self, group: str, limit: int | None) -> Any:
        """The in-process bound of a group of sibling units (a map's ``limit``): also holds
        for units recovered after a crash, which no pool starts."""
        if not limit:
            return contextlib.nullcontext()
        sem = self._limits.get(group)
        if sem is None:
            sem = self._limits[group] = asyncio.Semaphore(limit)
        return sem


async def _run_batch(ex: Executor, body: Step, spec: dict[str, Any], frame: Frame) -> list[Any]:
    """A batch of a wide map (:meth:`DurableEffects.map_slice`): each item's body at
    ``{map path}/do.{i}`` as a unit of this batch (a one-call item in the batch's own record,
    any other a child unit of it), at most ``limit`` at once; each value or RunError, in order
    (``fail_fast``: the first failure is raised)."""

    items: list[Any] = spec["items"]
    lo: int = spec["lo"]
    limit = max(1, int(spec.get("limit") or 1))
    out: list[Any] = [None] * len(items)

    async def one(j: int) -> None:
        i = lo + j
        p = f"{spec['map_path']}/do.{i}"
        scope = {**spec["scope"], "item": items[j], "index": i}
        unit = UnitSpec("body", frame, True, limit, body=body, scope=scope)
        try:
            out[j] = await ex.effects.unit(p, partial(ex.run_step, body, scope, p, frame), unit)
        except RunError as e:
            if spec.get("fail_fast"):
                raise
            out[j] = e

    engine = getattr(ex.effects, "engine", None)
    token = _BATCH_UNIT.set(engine.workflow_id() if engine is not None else None)
    try:  # the items' tasks are made in this context: they see the batch
        await run_pool(len(items), limit, one)
    finally:
        _BATCH_UNIT.reset(token)
    return out
