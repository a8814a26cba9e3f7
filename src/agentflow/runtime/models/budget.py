"""Model budgets: tokens, inferences and money, per run and per agent step (docs/models.md).

A :class:`Budget` is a set of limits with a name for messages (``run``, ``agent step E3``) and
where it was set (``flow.toml [budget]``, ``the plan``). Budgets in force form a stack held in a
ContextVar (:func:`push_budget` / :func:`pop_budget`): the run's budgets are pushed by the
executor for the whole run, an agent step's own budget by the agent loop around each of its
calls; tasks spawned inside (``map`` items, parallel branches) inherit the stack, so every model
call of a run is counted against every budget above it.

:class:`~agentflow.runtime.models.router.RoutedClient` calls :func:`reserve_budgets` BEFORE each
provider call and settles the :class:`Reservation` after it (:meth:`Reservation.settle` with what
the call used, or :meth:`Reservation.release` when it failed or was cancelled).  A reservation
holds its call's place while the call is in flight, so calls made at once (``parallel map``
items) are counted against each other.  The check is strict: a call is not made when

- ``inferences``: the calls made so far + 1 would exceed the limit (exact, however many calls
  run at once: a call that fits only if a call in flight fails waits for the calls in flight
  to end, then is checked again);
- ``tokens`` (prompt + completion): the tokens spent so far plus the least this call will
  use — the prompt size of the previous call of the same conversation, which only grows —
  would exceed the limit, or the spent tokens have reached it (with calls in flight, their
  least counts too until they end: it waits for them as above);
- ``cost`` (US dollars): likewise with the money spent and those prompts priced at the model's
  input price; calls whose price is unknown cost 0 here (the configuration says how to give
  one).

Tokens and money are known only when a reply comes, so calls in flight together may pass a
``tokens`` / ``cost`` limit by what they use beyond their reservations; no call starts once
the limit is reached.  A refused call raises ``RunError("budget_exceeded")`` naming the budget,
its limit and what was spent; nothing is sent to the provider. Answers reused from an earlier
``plan_and_execute`` attempt cost nothing and are never refused; model calls a durable run
replays from its record (``flowc resume``) are charged with their recorded usage
(:func:`charge_budgets`), never refused.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from agentflow.core.vocabulary import BUDGET_LIMITS, Code
from agentflow.errors import RunError

__all__ = [
    "Budget",
    "Reservation",
    "budget_from",
    "check_budgets",
    "charge_budgets",
    "pop_budget",
    "push_budget",
    "reserve_budgets",
]

#: The budgets in force (outermost first).
_active: ContextVar[tuple[Budget, ...]] = ContextVar("agentflow_budgets", default=())


@dataclass
class Budget:
    """Limits on model use (None: no limit) and what has been spent against them.

    ``name``: what the budget covers (``run``, ``agent step E3``); ``source``: where it was set.
    ``spent``: ``{inferences, tokens, cost}`` so far (updated by :func:`charge_budgets`; a lock
    guards it, as ``map`` items may charge concurrently).
    """

    name: str
    source: str
    inferences: int | None = None
    tokens: int | None = None
    cost: float | None = None
    spent: dict[str, Any] = field(
        default_factory=lambda: {"inferences": 0, "tokens": 0, "cost": 0.0}
    )
    #: ``{inferences, tokens, cost}`` held by calls in flight (:meth:`reserve`)
    held: dict[str, Any] = field(
        default_factory=lambda: {"inferences": 0, "tokens": 0, "cost": 0.0},
        repr=False,
        compare=False,
    )
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    #: calls waiting for a call in flight to end (:meth:`reserve`): (their loop, a future)
    _waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = field(
        default_factory=list, repr=False, compare=False
    )

    def limits(self) -> dict[str, Any]:
        """The limits that are set, ``{key: limit}``."""
        return {k: getattr(self, k) for k in BUDGET_LIMITS if getattr(self, k) is not None}

    def refusal(self, tokens_needed: int, cost_needed: float) -> str | None:
        """Why the next call would exceed this budget (a message), or None when it fits
        (counting the calls in flight: :meth:`reserve`)."""
        with self._lock:
            return self._refusal(tokens_needed, cost_needed)

    def _refusal(
        self, tokens_needed: int, cost_needed: float, held: dict[str, Any] | None = None
    ) -> str | None:
        spent = self.spent
        held = self.held if held is None else held
        if self.inferences is not None and spent["inferences"] + held["inferences"] + 1 > (
            self.inferences
        ):
            flying = f" and {held['inferences']} in flight" if held["inferences"] else ""
            return (
                f"the {self.name} budget of {self.inferences} inference(s) ({self.source}) is "
                f"used up: {spent['inferences']} model call(s) made{flying}; the next one was "
                "not made"
            )
        if self.tokens is not None and (
            spent["tokens"] >= self.tokens
            or spent["tokens"] + held["tokens"] + tokens_needed > self.tokens
        ):
            return (
                f"the {self.name} budget of {self.tokens} token(s) ({self.source}) would be "
                f"exceeded: {spent['tokens']} spent, and the next model call needs at least "
                f"{tokens_needed}; it was not made"
            )
        if self.cost is not None and (
            spent["cost"] >= self.cost or spent["cost"] + held["cost"] + cost_needed > self.cost
        ):
            return (
                f"the {self.name} budget of ${self.cost:g} ({self.source}) would be exceeded: "
                f"${spent['cost']:.6f} spent; the next model call was not made"
            )
        return None

    def try_hold(self, tokens_needed: int, cost_needed: float) -> tuple[str | None, bool]:
        """Check and, when the call fits, hold its place (one inference, ``tokens_needed``
        tokens, ``cost_needed`` dollars) until :meth:`unreserve`: one atomic step.  Returns
        ``(None, False)`` when held; ``(why, False)`` when the call does not fit even with no
        call in flight (refused); ``(why, True)`` when it fits only once calls in flight end
        (check again then).  The fleet-wide ledger of a Temporal run decides with it too
        (runtime/durable/temporal_budget.py)."""
        with self._lock:
            why = self._refusal(tokens_needed, cost_needed)
            if why is None:
                self.held["inferences"] += 1
                self.held["tokens"] += tokens_needed
                self.held["cost"] += cost_needed
                return None, False
            if not self.held["inferences"]:
                return why, False
            if self._refusal(tokens_needed, cost_needed, _NOTHING_HELD) is not None:
                return why, False  # what was spent alone refuses it
            return why, True

    def reserve(
        self, tokens_needed: int, cost_needed: float
    ) -> tuple[str | None, asyncio.Future[None] | None]:
        """:meth:`try_hold`, with a future for a call that must wait: ``(None, None)`` when
        held; ``(why, None)`` when refused; ``(why, future)`` when it fits only once calls in
        flight end — the future is done at the next :meth:`unreserve` (a call in flight that
        fails gives its place back), then check again.  ``future`` belongs to the running
        event loop (None outside one: refused)."""
        with self._lock:
            why, wait = self.try_hold(tokens_needed, cost_needed)
            if why is None or not wait:
                return why, None
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return why, None
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
            return why, future

    def unreserve(self, tokens_needed: int, cost_needed: float) -> None:
        """Give back a place held by :meth:`reserve` (and wake the calls waiting for one)."""
        with self._lock:
            self.held["inferences"] = max(0, self.held["inferences"] - 1)
            self.held["tokens"] = max(0, self.held["tokens"] - tokens_needed)
            self.held["cost"] = max(0.0, self.held["cost"] - cost_needed)
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_wake, future)

    def charge(self, tokens: int, cost: float | None) -> None:
        """Add one call's tokens and cost (None: unknown, counted as 0)."""
        with self._lock:
            self.spent["inferences"] += 1
            self.spent["tokens"] += tokens
            self.spent["cost"] += cost or 0.0


class Reservation:
    """The places one model call holds in every budget in force (:func:`reserve_budgets`):
    :meth:`settle` once the reply came (its tokens and cost charged), :meth:`release` when the
    call failed or was cancelled (nothing charged).  Either may be called once; later calls do
    nothing.  ``tickets``: a remote budget's ticket for this call, by position in ``budgets``
    (a Temporal run's fleet-wide ledger: its budget ends the call with :meth:`end_remote`)."""

    __slots__ = ("budgets", "tokens", "cost", "tickets", "_open")

    def __init__(
        self,
        budgets: tuple[Budget, ...],
        tokens: int,
        cost: float,
        tickets: dict[int, Any] | None = None,
    ):
        self.budgets = budgets
        self.tokens = tokens
        self.cost = cost
        self.tickets = tickets or {}
        self._open = True

    def settle(self, tokens: int, cost: float | None) -> None:
        """The call was made: free its places and charge what it used."""
        if not self._open:
            return
        self._open = False
        for i, budget in enumerate(self.budgets):
            if i in self.tickets:
                budget.end_remote(self.tickets[i], (tokens, cost))  # type: ignore[attr-defined]
                continue
            budget.unreserve(self.tokens, self.cost)
            budget.charge(tokens, cost)

    def release(self) -> None:
        """The call was not made or failed: free its places, charge nothing."""
        if not self._open:
            return
        self._open = False
        for i, budget in enumerate(self.budgets):
            if i in self.tickets:
                budget.end_remote(self.tickets[i], None)  # type: ignore[attr-defined]
                continue
            budget.unreserve(self.tokens, self.cost)


#: no call in flight (:meth:`Budget.reserve`: would the call fit once they all ended?)
_NOTHING_HELD: dict[str, Any] = {"inferences": 0, "tokens": 0, "cost": 0.0}


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def budget_from(data: Any, *, name: str, source: str) -> Budget | None:
    """A Budget from a mapping or model with ``inferences`` / ``tokens`` / ``cost`` (None when
    ``data`` is None or sets no limit)."""
    if data is None:
        return None
    get: Callable[[str], Any] = (
        data.get if isinstance(data, dict) else lambda k: getattr(data, k, None)
    )
    limits = {k: get(k) for k in BUDGET_LIMITS}
    if all(v is None for v in limits.values()):
        return None
    return Budget(
        name=name,
        source=source,
        inferences=limits["inferences"],
        tokens=limits["tokens"],
        cost=limits["cost"],
    )


def push_budget(budget: Budget | None) -> Token[tuple[Budget, ...]] | None:
    """Put ``budget`` in force for the current context (None: nothing); returns the token for
    :func:`pop_budget`."""
    if budget is None:
        return None
    return _active.set((*_active.get(), budget))


def pop_budget(token: Token[tuple[Budget, ...]] | None) -> None:
    """Undo a :func:`push_budget`."""
    if token is not None:
        _active.reset(token)


def _exceeded(budget: Budget, why: str, step_path: str) -> RunError:
    return RunError(
        Code.BUDGET_EXCEEDED,
        why,
        step_path or None,
        details={"budget": budget.name, "limits": budget.limits(), "spent": dict(budget.spent)},
    )


def check_budgets(tokens_needed: int = 0, cost_needed: float = 0.0, step_path: str = "") -> None:
    """Raise ``RunError("budget_exceeded")`` when the next model call would exceed a budget in
    force (the outermost first); see the module doc for the rules.  Holds nothing: a caller
    that then makes the call uses :func:`reserve_budgets`."""
    for budget in _active.get():
        why = budget.refusal(tokens_needed, cost_needed)
        if why is not None:
            raise _exceeded(budget, why, step_path)


async def reserve_budgets(
    tokens_needed: int = 0, cost_needed: float = 0.0, step_path: str = ""
) -> Reservation:
    """Check every budget in force (the outermost first) and hold one call's place in each;
    raise ``RunError("budget_exceeded")`` (holding nothing) when the call would exceed one.
    A call that fits only once calls in flight end (their usage known, or their places given
    back by a failure) waits for them, holding nothing meanwhile, then is checked again: so a
    ``parallel map`` makes exactly the calls a sequential one would before the refusal.  The
    caller settles or releases the returned :class:`Reservation` (module doc)."""
    attempt = 0
    while True:
        budgets = _active.get()
        held: list[Budget] = []
        tickets: dict[int, Any] = {}
        for i, budget in enumerate(budgets):
            remote = getattr(budget, "hold_remote", None)
            if remote is not None:  # held by its ledger (waits there; raises when refused)
                try:
                    tickets[i] = await remote(tokens_needed, cost_needed, step_path, attempt)
                except BaseException:
                    Reservation(tuple(held), tokens_needed, cost_needed, tickets).release()
                    raise
                held.append(budget)
                continue
            why, wait = budget.reserve(tokens_needed, cost_needed)
            if why is None:
                held.append(budget)
                continue
            Reservation(tuple(held), tokens_needed, cost_needed, tickets).release()
            if wait is None:
                raise _exceeded(budget, why, step_path)
            await wait
            attempt += 1
            break
        else:
            return Reservation(budgets, tokens_needed, cost_needed, tickets)


def charge_budgets(tokens: int, cost: float | None) -> None:
    """Count one model call against every budget in force (a call made without a
    reservation: one a durable run replays from its record)."""
    for budget in _active.get():
        budget.charge(tokens, cost)
