"""A model's fleet-wide rate limit and concurrency on Temporal (``[models.named.X] rate_limit`` /
``concurrency``; docs/durable.md "Temporal"): the same per-request *slots* as the DBOS
backend's table (ratelimit.py), held by one Temporal workflow per model and task queue,
``agentflow.rate/TASK_QUEUE@VERSION/MODEL`` (workflow type ``agentflow.rate``), which every
worker of the task queue may run.

A request of a limited model (inside its operation's local activity, just before it is sent:
``temporal_engine.fleet_slot``) asks that workflow for a slot with a **signal** (``ask``, sent
with signal-with-start: the first request starts the workflow) and then looks whether it was
granted with a **query** (``slot``: no history event; it sleeps as long as the answer says,
0.1–0.5 s).  The workflow grants slots first come, first served, at its own clock (the
server's time of its workflow task), while fewer than ``limit`` slots of the model are in
flight or ended within the last ``period`` seconds (``rate_window``), and fewer than
``concurrency`` are in flight.  A request waited for in workflow code
(temporal_engine.TemporalEngine.take_model_slot) that was not granted at once signals
``notify`` and is told of its grant by a signal, so its unit's workflow task is not held open
while it waits.  The request is sent after the grant, and its slot ends (a
signal, ``release``) after the response arrived.  A slot's end is recorded when the workflow
sees the signal — never before the response arrived — and its grant before the request is
sent, both on the server's one clock: so of any ``limit + 1`` requests one ended at least
``period`` before the last was sent, and no window of ``period`` seconds holds more than
``limit`` requests, across every worker.  (Not an update that waits for the grant: the server
holds at most 10 updates in flight per workflow and refused the rest, ``ResourceExhausted``.
Not Temporal's own task-queue rate limit, ``max_task_queue_activities_per_second``: a token
bucket on *dispatch* with a second of burst, which let 9–12 requests into one second against a
limit of 5 in bench/temporal_queue_rate.py; docs/decisions.md.)

A slot whose worker died counts as in flight for :data:`STALE_S` seconds.  The workflow
continues as new past :data:`ROLL_EVENTS` events (its slots and waiting requests carried over)
and ends after :data:`IDLE_S` seconds with nothing to hold.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow

from agentflow.runtime.durable import temporal_engine as te
from agentflow.runtime.durable.ratelimit import STALE_S

__all__ = ["IDLE_S", "POLL_MAX_S", "POLL_MIN_S", "ROLL_EVENTS", "RateWorkflow"]

#: Events after which the limiter continues as new (its history stays small).
ROLL_EVENTS = 2_000
#: Seconds with no slot to count and no request waiting after which the limiter ends.
IDLE_S = 60.0
#: Seconds a request that gave up is remembered (its late ``ask`` is then ignored).
GONE_S = 60.0
#: The shortest and longest a waiting request sleeps before it looks at its slot again.
POLL_MIN_S = 0.1
POLL_MAX_S = 0.5


@workflow.defn(name=te.RATE_WORKFLOW, sandboxed=False)
class RateWorkflow:
    """The slots of one model (see the module doc).  Input and continue-as-new state:
    ``{"slots": {id: [granted, ended or None]}, "waiting": [request…], "keep": seconds,
    "gone": {id: when}}``."""

    @workflow.init
    def __init__(self, state: dict[str, Any]) -> None:
        # the state is loaded here, before the signals of the first activation are handled (a
        # signal-with-start's ``ask``, a ``release`` sent as the limiter continued as new):
        # loaded in ``run``, which starts after them, it overwrote what they did — the first
        # request of a new limiter was lost and granted only when it asked again, 5 s later
        self.slots: dict[str, list[float | None]] = {
            str(k): list(v) for k, v in (state.get("slots") or {}).items()
        }
        self.waiting: list[dict[str, Any]] = list(state.get("waiting") or [])
        #: requests released before they were granted (they gave up): id → when
        self.gone: dict[str, float] = {
            str(k): float(v) for k, v in (state.get("gone") or {}).items()
        }
        #: the longest period asked for: ended slots older than it are dropped
        self.keep = float(state.get("keep") or 1.0)
        self.dirty = False
        #: grants being signalled to the workflows that wait for them (``notify``)
        self.sending: set[asyncio.Task[None]] = set()
        #: grants not signalled yet: (workflow id, request id)
        self.outbox: list[tuple[str, str]] = []

    def _now(self) -> float:
        return workflow.now().timestamp()

    def _busy(self, now: float, period: float) -> tuple[int, int]:
        """(slots counted against a rate of ``period``, slots in flight) at ``now``."""
        counted = in_flight = 0
        for granted, ended in self.slots.values():
            assert granted is not None
            if ended is None:
                if granted >= now - STALE_S:
                    counted += 1
                    in_flight += 1
            elif ended > now - period:
                counted += 1
        return counted, in_flight

    def _grant(self, now: float) -> None:
        """Grant the waiting requests in order while the head's limits allow it."""
        while self.waiting:
            head = self.waiting[0]
            counted, in_flight = self._busy(now, float(head["period"]))
            if counted >= int(head["limit"]):
                return
            if head.get("concurrency") and in_flight >= int(head["concurrency"]):
                return
            self.waiting.pop(0)
            self.slots[str(head["id"])] = [now, None]
            if head.get("notify"):
                self._notify(str(head["notify"]), str(head["id"]))

    def _notify(self, wid: str, rid: str) -> None:
        """Signal workflow ``wid`` (from the run loop: :meth:`_send`) that its request ``rid``
        holds its slot."""
        self.outbox.append((wid, rid))
        self.dirty = True

    def _send(self) -> None:
        """Signal the grants of :attr:`outbox` (a message on topic ``slot:RID``); a workflow
        that cannot be signalled (it ended) ends its slot."""
        for wid, rid in self.outbox:
            task = asyncio.get_running_loop().create_task(self._signal(wid, rid))
            self.sending.add(task)
            task.add_done_callback(self.sending.discard)
        self.outbox.clear()

    async def _signal(self, wid: str, rid: str) -> None:
        try:
            await workflow.get_external_workflow_handle(wid).signal(
                te.MESSAGE_SIGNAL, {"topic": f"slot:{rid}", "value": True}
            )
        except Exception:  # noqa: BLE001 - nobody waits for it: the slot ends
            slot = self.slots.get(rid)
            if slot is not None and slot[1] is None:
                slot[1] = self._now()
                self.dirty = True

    def _wake(self, now: float) -> float | None:
        """Seconds until a slot stops counting for the head request (or, with nothing
        waiting, until the next slot or given-up request is dropped); None: nothing to
        wait for."""
        period = float(self.waiting[0]["period"]) if self.waiting else self.keep
        times = [
            (ended + period) if ended is not None else (granted + STALE_S)
            for granted, ended in self.slots.values()
            if granted is not None
        ]
        if not self.waiting:
            times.extend(t + GONE_S for t in self.gone.values())
        later = [t - now for t in times if t > now]
        return max(0.001, min(later)) if later else (0.001 if times else None)

    def _prune(self, now: float) -> None:
        self.gone = {k: t for k, t in self.gone.items() if t > now - GONE_S}
        for key, (granted, ended) in list(self.slots.items()):
            assert granted is not None
            if (ended is not None and ended < now - self.keep) or (
                ended is None and granted < now - STALE_S
            ):
                del self.slots[key]

    @workflow.run
    async def run(self, state: dict[str, Any]) -> None:
        """Hold the model's slots until idle for :data:`IDLE_S` seconds (``state``: loaded
        by ``__init__``)."""
        while True:
            now = self._now()
            self._grant(now)
            self._send()
            self._prune(now)
            info = workflow.info()
            if info.get_current_history_length() > ROLL_EVENTS or (
                info.is_continue_as_new_suggested()
            ):
                while self.sending or self.outbox:  # every grant signalled before the cut
                    self._send()
                    await asyncio.gather(*self.sending)
                # signal handlers are synchronous: nothing is left half-handled
                workflow.continue_as_new(
                    {"slots": self.slots, "waiting": self.waiting, "keep": self.keep,
                     "gone": self.gone}
                )  # fmt: skip
            idle = not self.waiting and not self.slots and not self.gone and not self.sending
            self.dirty = False
            try:
                await workflow.wait_condition(
                    lambda: self.dirty, timeout=IDLE_S if idle else self._wake(now)
                )  # a request or a release, else a slot that stops counting
            except TimeoutError:
                if idle:
                    return  # a request signalled meanwhile fails this completion: not lost

    @workflow.signal(name="ask")
    def ask(self, request: dict[str, Any]) -> None:
        """A request ``{"id", "limit", "period", "concurrency"}`` waits for its slot (again:
        nothing; after it gave up: nothing)."""
        rid = str(request["id"])
        if rid in self.slots or rid in self.gone or any(str(r["id"]) == rid for r in self.waiting):
            return
        self.keep = max(self.keep, float(request["period"]))
        self.waiting.append(request)
        self.dirty = True

    @workflow.query(name="slot")
    def slot(self, rid: str) -> dict[str, Any]:
        """``{"granted": True, "ended": bool}`` (ended: released), or ``{"wait": seconds}`` —
        about how long until it may be (the asker looks again then), or ``{"unknown": True}``
        (not asked yet, or gave up)."""
        if rid in self.slots:
            return {"granted": True, "ended": self.slots[rid][1] is not None}
        place = next((i for i, r in enumerate(self.waiting) if str(r["id"]) == rid), None)
        if place is None:
            return {"unknown": True}
        head = self.waiting[0]
        rounds = place // max(1, int(head["limit"]))
        soon = self._wake(self._now()) or POLL_MAX_S
        return {"wait": min(POLL_MAX_S, max(POLL_MIN_S, soon + rounds * float(head["period"])))}

    @workflow.signal(name="notify")
    def notify(self, rid: str, wid: str) -> None:
        """Request ``rid`` (asked before) is waited for by workflow ``wid``: signal it the
        grant (now, when granted already).  Sent only by a request that saw it was not
        granted yet — a grant signalled to a workflow that is completing would fail that
        completion (Temporal's ``UnhandledCommand``) and lose the results of its task."""
        if rid in self.slots:
            self._notify(wid, rid)
            return
        for request in self.waiting:
            if str(request["id"]) == rid:
                request["notify"] = wid

    @workflow.signal(name="release")
    def release(self, rid: str) -> None:
        """The request of slot ``rid`` ended, or gave up waiting (before or after it asked:
        a request released first is never granted)."""
        self.waiting = [r for r in self.waiting if str(r["id"]) != rid]
        slot = self.slots.get(rid)
        if slot is None:
            self.gone[rid] = self._now()
        elif slot[1] is None:
            slot[1] = self._now()
        self.dirty = True
