"""The run budget's ledger on Temporal (runtime/durable/temporal_ledger.py) decides as a
process's :class:`Budget` does (docs/models.md "Budgets"), in the order its signals came: its
signal handlers and query run here on the workflow object itself (they touch no Temporal API;
the protocol on a real server is test_temporal_a_runs_budget_holds_across_workers_and_kills.py).
"""

from __future__ import annotations

from agentflow.runtime.durable.temporal_budget import LEASE_S, budget_data
from agentflow.runtime.durable.temporal_ledger import BudgetWorkflow
from agentflow.runtime.models.budget import Budget


def _ledger(**limits: int) -> BudgetWorkflow:
    budget = Budget(name="run", source="the plan's `budget`", **limits)  # type: ignore[arg-type]
    return BudgetWorkflow({"budgets": [budget_data(budget)]})


def _ask(ledger: BudgetWorkflow, rid: str, nonce: str = "n", tokens: int = 10) -> dict:
    ledger.ask({"id": rid, "nonce": nonce, "tokens": tokens, "cost": 0.0})
    return ledger.state(rid, nonce)


def test_inferences_are_exact_calls_in_flight_wait_and_a_failed_call_gives_its_place_back():
    ledger = _ledger(inferences=2)
    assert _ask(ledger, "a") == {"granted": True}
    assert _ask(ledger, "b") == {"granted": True}
    assert _ask(ledger, "c") == {"wait": True}  # fits only if a call in flight fails
    ledger.settle({"id": "a", "nonce": "n", "used": None})  # a failed: c takes its place
    assert ledger.state("c", "n") == {"granted": True}
    ledger.settle({"id": "b", "nonce": "n", "used": [30, 0.0]})
    ledger.settle({"id": "c", "nonce": "n", "used": [30, 0.0]})
    refused = _ask(ledger, "d")["refused"]
    assert "2 model call(s) made" in refused["why"], refused
    assert refused["spent"]["inferences"] == 2 and refused["spent"]["tokens"] == 60


def test_a_call_asked_again_by_another_attempt_charges_the_attempt_that_never_settled():
    """A worker killed while its call was out: the call's place is still held when the
    replayed unit asks for the same call again (another nonce); the first attempt may have
    reached the provider, so it is charged (one inference, its least tokens) first."""
    ledger = _ledger(inferences=2)
    assert _ask(ledger, "u|E0/model:agent#1", "first", tokens=7) == {"granted": True}
    assert _ask(ledger, "u|E0/model:agent#1", "first") == {"granted": True}  # the same: nothing
    assert _ask(ledger, "u|E0/model:agent#1", "again", tokens=7) == {"granted": True}
    (budget,) = ledger.budgets
    assert budget.spent["inferences"] == 1 and budget.spent["tokens"] == 7
    ledger.settle({"id": "u|E0/model:agent#1", "nonce": "first", "used": [99, 0.0]})  # stale
    assert budget.spent["inferences"] == 1
    ledger.settle({"id": "u|E0/model:agent#1", "nonce": "again", "used": [20, 0.0]})
    assert (budget.spent["inferences"], budget.spent["tokens"]) == (2, 27)
    assert "refused" in _ask(ledger, "u|E1/model:agent#1")


def test_the_ledger_continues_as_new_with_what_it_holds():
    ledger = _ledger(inferences=3)
    _ask(ledger, "a")
    ledger.settle({"id": "a", "nonce": "n", "used": [5, 0.0]})
    _ask(ledger, "b")
    again = BudgetWorkflow(ledger._state())
    (budget,) = again.budgets
    assert budget.spent["inferences"] == 1 and budget.held["inferences"] == 1
    assert again.state("b", "n") == {"granted": True}
    assert _ask(again, "c") == {"granted": True}
    assert _ask(again, "d") == {"wait": True}


def _clocked(**limits: int) -> tuple[BudgetWorkflow, list[float]]:
    ledger = _ledger(**limits)
    now = [1000.0]
    ledger.clock = lambda: now[0]  # the workflow's clock (workflow.now()) on a real server
    return ledger, now


def test_a_place_held_by_a_dead_worker_is_charged_and_freed_when_its_lease_lapses():
    """A call whose worker died holds its place until its lease lapses (no ``renew`` for
    ``lease_s``): the ledger then charges it (it may have reached the provider) and decides
    the calls waiting for its place — they waited for ever (the run's end) when no worker
    asked the same call again."""
    ledger, now = _clocked(inferences=1)
    assert _ask(ledger, "u|E0/model:agent#1", "dead") == {"granted": True}
    assert _ask(ledger, "v|E0/model:agent#1", "live") == {"wait": True}
    now[0] += LEASE_S / 2
    ledger.renew({"ids": [["v|E0/model:agent#1", "live"]]})  # a live worker renews its ask
    ledger.expire()
    assert ledger.state("u|E0/model:agent#1", "dead") == {"granted": True}  # not lapsed yet
    now[0] += LEASE_S / 2 + 1
    assert ledger.next_expiry() is not None and ledger.next_expiry() <= now[0]
    ledger.expire()
    (budget,) = ledger.budgets
    assert (budget.spent["inferences"], budget.held["inferences"]) == (1, 0)
    refused = ledger.state("v|E0/model:agent#1", "live")["refused"]
    assert "1 model call(s) made" in refused["why"], refused
    # the dead attempt's settle, should it come after all, charges nothing more
    ledger.settle({"id": "u|E0/model:agent#1", "nonce": "dead", "used": [50, 0.0]})
    assert budget.spent["inferences"] == 1


def test_a_dead_workers_waiting_call_is_dropped_not_granted_a_place_it_never_frees():
    ledger, now = _clocked(inferences=1)
    assert _ask(ledger, "a", "live") == {"granted": True}
    assert _ask(ledger, "d", "dead") == {"wait": True}  # its worker dies as it waits
    for _ in range(3):
        now[0] += LEASE_S / 2
        ledger.renew({"ids": [["a", "live"]]})
        ledger.expire()
    assert ledger.state("d", "dead") == {"unknown": True}  # dropped: no place, no charge
    ledger.settle({"id": "a", "nonce": "live", "used": None})  # failed: its place is free
    assert _ask(ledger, "e", "next") == {"granted": True}  # not held by the dead waiter
    (budget,) = ledger.budgets
    assert budget.spent["inferences"] == 0


def test_the_lease_of_a_place_continues_as_new_with_it():
    ledger, now = _clocked(inferences=2)
    assert _ask(ledger, "a", "n") == {"granted": True}
    again = BudgetWorkflow(ledger._state())
    again.clock = lambda: now[0]
    now[0] += LEASE_S + 1
    again.expire()
    (budget,) = again.budgets
    assert (budget.spent["inferences"], budget.held["inferences"]) == (1, 0)
