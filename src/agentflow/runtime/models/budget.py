"""Model budgets: tokens, inferences and money, per run and per agent step (docs/models.md).

A :class:`Budget` is a set of limits with a name for messages (``run``, ``agent step E3``) and
where it was set (``flow.toml [budget]``, ``the plan``). Budgets in force form a stack held in a
ContextVar (:func:`push_budget` / :func:`pop_budget`): the run's budgets are pushed by the
executor for the whole run, an agent step's own budget by the agent loop around each of its
calls; tasks spawned inside (``map`` items, parallel branches) inherit the stack, so every model
call of a run is counted against every budget above it.

:class:`~agentflow.runtime.models.router.RoutedClient` calls :func:`check_budgets` BEFORE each
provider call and :func:`charge_budgets` after it. The check is strict: a call is not made when

- ``inferences``: the calls made so far + 1 would exceed the limit;
- ``tokens`` (prompt + completion): the tokens spent so far plus the least the call will use — the
  prompt size of the previous call of the same conversation, which only grows — would exceed
  the limit, or the spent tokens have reached it;
- ``cost`` (US dollars): likewise with the money spent and that prompt priced at the model's
  input price; calls whose price is unknown cost 0 here (the configuration says how to give
  one).

A refused call raises ``RunError("budget_exceeded")`` naming the budget, its limit and what was
spent; nothing is sent to the provider. Answers reused from an earlier ``plan_and_execute``
attempt cost nothing and are never refused.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from agentflow.core.vocabulary import BUDGET_LIMITS, Code
from agentflow.errors import RunError

__all__ = [
    "Budget",
    "budget_from",
    "check_budgets",
    "charge_budgets",
    "pop_budget",
    "push_budget",
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
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def limits(self) -> dict[str, Any]:
        """The limits that are set, ``{key: limit}``."""
        return {k: getattr(self, k) for k in BUDGET_LIMITS if getattr(self, k) is not None}

    def refusal(self, tokens_needed: int, cost_needed: float) -> str | None:
        """Why the next call would exceed this budget (a message), or None when it fits."""
        with self._lock:
            spent = dict(self.spent)
        if self.inferences is not None and spent["inferences"] + 1 > self.inferences:
            return (
                f"the {self.name} budget of {self.inferences} inference(s) ({self.source}) is "
                f"used up: {spent['inferences']} model call(s) made; the next one was not made"
            )
        if self.tokens is not None and (
            spent["tokens"] >= self.tokens or spent["tokens"] + tokens_needed > self.tokens
        ):
            return (
                f"the {self.name} budget of {self.tokens} token(s) ({self.source}) would be "
                f"exceeded: {spent['tokens']} spent, and the next model call needs at least "
                f"{tokens_needed}; it was not made"
            )
        if self.cost is not None and (
            spent["cost"] >= self.cost or spent["cost"] + cost_needed > self.cost
        ):
            return (
                f"the {self.name} budget of ${self.cost:g} ({self.source}) would be exceeded: "
                f"${spent['cost']:.6f} spent; the next model call was not made"
            )
        return None

    def charge(self, tokens: int, cost: float | None) -> None:
        """Add one call's tokens and cost (None: unknown, counted as 0)."""
        with self._lock:
            self.spent["inferences"] += 1
            self.spent["tokens"] += tokens
            self.spent["cost"] += cost or 0.0


def budget_from(data: Any, *, name: str, source: str) -> Budget | None:
    """A Budget from a mapping or model with ``inferences`` / ``tokens`` / ``cost`` (None when
    ``data`` is None or sets no limit)."""
    if data is None:
        return None
    get = data.get if isinstance(data, dict) else lambda k: getattr(data, k, None)
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


def push_budget(budget: Budget | None) -> Token | None:
    """Put ``budget`` in force for the current context (None: nothing); returns the token for
    :func:`pop_budget`."""
    if budget is None:
        return None
    return _active.set((*_active.get(), budget))


def pop_budget(token: Token | None) -> None:
    """Undo a :func:`push_budget`."""
    if token is not None:
        _active.reset(token)


def check_budgets(tokens_needed: int = 0, cost_needed: float = 0.0, step_path: str = "") -> None:
    """Raise ``RunError("budget_exceeded")`` when the next model call would exceed a budget in
    force (the outermost first); see the module doc for the rules."""
    for budget in _active.get():
        why = budget.refusal(tokens_needed, cost_needed)
        if why is not None:
            raise RunError(
                Code.BUDGET_EXCEEDED,
                why,
                step_path or None,
                details={
                    "budget": budget.name,
                    "limits": budget.limits(),
                    "spent": dict(budget.spent),
                },
            )


def charge_budgets(tokens: int, cost: float | None) -> None:
    """Count one model call against every budget in force."""
    for budget in _active.get():
        budget.charge(tokens, cost)
