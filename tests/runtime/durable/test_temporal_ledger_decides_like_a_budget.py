"""The run budget's ledger on Temporal (runtime/durable/temporal_ledger.py) decides as a
process's :class:`Budget` does (docs/models.md "Budgets"), in the order its signals came: its
signal handlers and query run here on the workflow object itself (they touch no Temporal API;
the protocol on a real server is test_temporal_a_runs_budget_holds_across_workers_and_kills.py).
"""

from __future__ import annotations

from agentflow.runtime.durable.temporal_budget import budget_data
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
