"""The ledger workflow of a Temporal run's budget, ``agentflow.budget/RUN`` (imported only when
``[durable] engine = "temporal"``): what the run spent and what its calls in flight hold,
decided in signal handlers in the order the server recorded the signals (temporal_budget.py
explains the protocol; the rules are :meth:`~agentflow.runtime.models.budget.Budget.try_hold`'s).
It ends when the run's root closes it and continues as new past :data:`ROLL_EVENTS` events."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from temporalio import workflow

from agentflow.runtime.durable import temporal_client as tc
from agentflow.runtime.durable.temporal_budget import LEASE_S, budget_data, budget_of
from agentflow.runtime.models.budget import Budget

__all__ = ["ROLL_EVENTS", "BudgetWorkflow"]

#: Events after which the ledger continues as new (its history stays small).
ROLL_EVENTS = 2_000


@workflow.defn(name=tc.BUDGET_WORKFLOW, sandboxed=False)
class BudgetWorkflow:
    """The ledger of one run's budgets (see the module doc).  Input and continue-as-new state:
    ``{"budgets": [{name, source, inferences, tokens, cost, spent}…], "holds": {id: request},
    "waiting": [request…], "refused": {id|nonce: why}, "lease_s": seconds}``; a request is
    ``{"id", "nonce", "tokens", "cost"}`` and, once here, ``"expires"`` (epoch seconds).

    **Leases.** A request, waiting or held, is the caller's for ``lease_s`` seconds
    (:data:`~.temporal_budget.LEASE_S`), renewed by its process (``renew``) while the call
    waits or is in flight.  Once a lease lapses — the caller's process died, and no worker
    asked the same call again — a held place is charged (the call may have reached the
    provider: as when the same call asks again) and freed, a waiting request dropped (it was
    never granted: nothing sent), and the waiting calls are decided again.  Time is the
    workflow's (``workflow.now()``; :attr:`clock`), the same on replay."""

    #: now, in epoch seconds (a test sets its own on an object it drives by hand)
    clock: Callable[[], float] = staticmethod(lambda: workflow.now().timestamp())

    @workflow.init
    def __init__(self, state: dict[str, Any]) -> None:
        # loaded before the signals of the first activation are handled (signal-with-start)
        self.lease_s = float(state.get("lease_s") or LEASE_S)
        self.budgets = [budget_of(b) for b in state.get("budgets") or ()]
        self.holds: dict[str, dict[str, Any]] = dict(state.get("holds") or {})
        for request in self.holds.values():  # held again in the Budget objects
            for budget in self.budgets:
                budget.try_hold(int(request["tokens"]), float(request["cost"]))
        self.waiting: list[dict[str, Any]] = list(state.get("waiting") or [])
        self.refused: dict[str, dict[str, Any]] = dict(state.get("refused") or {})
        self.closed = False

    def _state(self) -> dict[str, Any]:
        return {
            "budgets": [budget_data(b) for b in self.budgets],
            "holds": self.holds,
            "waiting": self.waiting,
            "refused": self.refused,
            "lease_s": self.lease_s,
        }

    def _now(self) -> float:
        try:
            return float(self.clock())
        except Exception:  # noqa: BLE001 - outside a workflow (no clock of its own)
            return time.time()

    def next_expiry(self) -> float | None:
        """When the first lease lapses (epoch seconds), or None: nothing held or waiting."""
        leases = [float(r.get("expires") or 0.0) for r in (*self.holds.values(), *self.waiting)]
        return min(leases) if leases else None

    def expire(self) -> None:
        """Charge and free the places whose lease lapsed, drop the waiting requests whose lease
        lapsed, and decide the waiting calls again (see the class doc)."""
        now = self._now()
        lapsed = [rid for rid, r in self.holds.items() if float(r.get("expires") or 0.0) <= now]
        for rid in lapsed:
            held = self.holds.pop(rid)
            self._end(held, (int(held["tokens"]), float(held["cost"])))
        before = len(self.waiting)
        self.waiting = [r for r in self.waiting if float(r.get("expires") or 0.0) > now]
        if lapsed or len(self.waiting) != before:
            self._decide()

    @workflow.run
    async def run(self, state: dict[str, Any]) -> None:
        """Hold the run's budget until the root closes it (``state``: loaded by ``__init__``)."""

        def rolls() -> bool:
            info = workflow.info()
            return info.get_current_history_length() > ROLL_EVENTS or (
                info.is_continue_as_new_suggested()
            )

        while True:
            first = self.next_expiry()
            timeout = None if first is None else max(0.001, first - self._now())
            # a timer until the first lease lapses; with nothing leased, until one is
            leased = first is not None

            def woken(leased: bool = leased) -> bool:
                return self.closed or rolls() or (not leased and bool(self.holds or self.waiting))

            try:
                await workflow.wait_condition(woken, timeout=timeout)
            except TimeoutError:
                pass
            if self.closed:
                return
            if rolls():
                # signal handlers are synchronous: nothing is left half-handled
                workflow.continue_as_new(self._state())
            self.expire()

    def _end(self, request: dict[str, Any], used: tuple[int, float | None] | None) -> None:
        """Free ``request``'s places; charge ``used`` (tokens, cost) when it was made."""
        for budget in self.budgets:
            budget.unreserve(int(request["tokens"]), float(request["cost"]))
            if used is not None:
                budget.charge(*used)

    def _decide(self) -> None:
        """Hold, refuse or leave waiting each waiting request, in the order they came."""
        still: list[dict[str, Any]] = []
        now = self._now()
        for request in self.waiting:
            if float(request.get("expires") or now + 1) <= now:
                continue  # its caller is gone: never granted
            tokens, cost = int(request["tokens"]), float(request["cost"])
            held: list[Budget] = []
            outcome: tuple[str, Budget] | None = None
            wait = False
            for budget in self.budgets:
                why, wait = budget.try_hold(tokens, cost)
                if why is None:
                    held.append(budget)
                    continue
                outcome = (why, budget)
                break
            if outcome is None:
                request["expires"] = now + self.lease_s  # the lease runs from the grant
                self.holds[str(request["id"])] = request
                continue
            for budget in held:
                budget.unreserve(tokens, cost)
            if wait:
                still.append(request)
                continue
            why, budget = outcome
            self.refused[f"{request['id']}|{request['nonce']}"] = {
                "why": why,
                "budget": budget.name,
                "limits": budget.limits(),
                "spent": dict(budget.spent),
            }
        self.waiting = still

    @workflow.signal(name="ask")
    def ask(self, request: dict[str, Any]) -> None:
        """A call asks for its place (again, the same attempt: nothing).  A place held by an
        earlier attempt of the same call (its worker died before the call's result was
        recorded) is charged first: that attempt may have reached the provider."""
        rid, nonce = str(request["id"]), str(request["nonce"])
        if f"{rid}|{nonce}" in self.refused:
            return
        held = self.holds.get(rid)
        if held is not None:
            if held["nonce"] == nonce:
                return
            del self.holds[rid]
            self._end(held, (int(held["tokens"]), float(held["cost"])))
        if any(r["id"] == rid and r["nonce"] == nonce for r in self.waiting):
            return
        self.waiting = [r for r in self.waiting if r["id"] != rid]
        self.waiting.append({**request, "expires": self._now() + self.lease_s})
        self._decide()

    @workflow.signal(name="renew")
    def renew(self, message: dict[str, Any]) -> None:
        """The calls of a live process hold on: ``{"ids": [[id, nonce]…]}`` — each one's lease,
        waiting or held, runs ``lease_s`` from now (unknown ones: nothing)."""
        until = self._now() + self.lease_s
        tickets = {(str(t[0]), str(t[1])) for t in message.get("ids") or ()}
        for request in (*self.holds.values(), *self.waiting):
            if (str(request["id"]), str(request["nonce"])) in tickets:
                request["expires"] = max(float(request.get("expires") or 0.0), until)

    @workflow.signal(name="settle")
    def settle(self, message: dict[str, Any]) -> None:
        """A call ended: ``{"id", "nonce", "used": [tokens, cost] or None}`` (None: it failed
        or was cancelled, nothing charged).  A settle of an attempt no longer held: nothing."""
        rid = str(message["id"])
        held = self.holds.get(rid)
        if held is None or held["nonce"] != message["nonce"]:
            self.waiting = [
                r for r in self.waiting if not (r["id"] == rid and r["nonce"] == message["nonce"])
            ]
            return
        del self.holds[rid]
        used = message.get("used")
        self._end(held, (int(used[0]), used[1]) if used is not None else None)
        self._decide()

    @workflow.signal(name="close")
    def close(self) -> None:
        """The run ended: the ledger ends."""
        self.closed = True

    @workflow.query(name="state")
    def state(self, rid: str, nonce: str) -> dict[str, Any]:
        """``{"granted": True}``, ``{"refused": {why, budget, limits, spent}}``, ``{"wait":
        True}`` (calls in flight hold the places it needs) or ``{"unknown": True}`` (its ask
        is not handled yet)."""
        held = self.holds.get(rid)
        if held is not None and held["nonce"] == nonce:
            return {"granted": True}
        refused = self.refused.get(f"{rid}|{nonce}")
        if refused is not None:
            return {"refused": refused}
        if any(r["id"] == rid and r["nonce"] == nonce for r in self.waiting):
            return {"wait": True}
        return {"unknown": True}
