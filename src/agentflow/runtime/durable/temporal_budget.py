"""A run's budget across a Temporal fleet (``budget { … }`` of a ``.flow``, a plan's ``budget``,
``flow.toml [budget]``; docs/models.md "Budgets", docs/durable.md "Temporal"): one **ledger**
workflow per run, ``agentflow.budget/RUN`` (workflow type ``agentflow.budget``), which every
worker of the task queue may run, holds what the run spent and what its calls in flight hold.

Every model call of a budgeted Temporal run — of its root or of a child unit, in any worker —
reserves its place in the ledger before it is sent, as a local call reserves in its process's
:class:`~agentflow.runtime.models.budget.Budget` (:func:`~agentflow.runtime.models.budget.
reserve_budgets`): a **signal** ``ask`` (signal-with-start: the run's first call starts the
ledger) and then a **query** ``state`` until the ledger granted or refused it; after the
reply, a signal ``settle`` charges what it used (or frees its place when it failed).  The
ledger decides in its signal handlers with the same rules (:meth:`Budget.try_hold`), in the
order the server recorded the signals, so ``inferences`` is exact across workers, and a call
that fits only once calls in flight end waits for them.

A call's id is its unit and operation (``UNIT|E0/do.3/S0/model:agent#1``), the same when a
worker that died before the call's result reached the run's history is replaced and the call
is sent again; each attempt has its own nonce.  A place still held by an attempt that never
settled is then charged — one inference and its least tokens and money — before the new
attempt is decided: a call that may have reached the provider counts (docs/decisions.md
"Temporal: one account of a late cancel, budgets across workers and kills").  Replayed calls
(their results in the history) are not charged again: the ledger counted them when they were
made.  Each ask is **leased** to its process: the process renews its calls' leases (a signal
``renew`` every :data:`RENEW_S`) while they wait or are in flight, and the ledger charges and
frees a place whose lease lapsed (:data:`LEASE_S`: a worker that died, for a call no worker
asks again) and drops a waiting ask whose lease lapsed.  The root closes the ledger when the
run ends.  This module is the calls' side; the
ledger workflow is temporal_ledger.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from dataclasses import dataclass, field
from typing import Any

from agentflow.core.vocabulary import Code
from agentflow.errors import RunError
from agentflow.runtime.durable import temporal_client as tc
from agentflow.runtime.models.budget import Budget

__all__ = [
    "LEASE_S",
    "RENEW_S",
    "LedgerBudget",
    "budget_data",
    "budget_of",
    "ledger_budgets",
    "ledger_id",
]

#: Failed tries in a row to reach the ledger after which a call fails.
TRIES = 50
#: Seconds a call's ask may stay unknown to the ledger before it is signalled again.
REASK_S = 5.0
#: Seconds a call's request (waiting or held) is its process's in the ledger without being
#: renewed: a place held longer by a process that died is charged and freed
#: (temporal_ledger.py "Leases").  A model call may take minutes: its process renews.
LEASE_S = 60.0
#: Seconds between a process's renewals of its calls' leases (one signal for them all).
RENEW_S = 15.0


def ledger_id(run_id: str) -> str:
    """The workflow id of run ``run_id``'s ledger."""
    return f"{tc.BUDGET_WORKFLOW}/{run_id}"


def budget_of(data: dict[str, Any]) -> Budget:
    """The :class:`Budget` of ``data`` (:func:`budget_data`'s)."""
    budget = Budget(
        name=str(data["name"]),
        source=str(data["source"]),
        inferences=data.get("inferences"),
        tokens=data.get("tokens"),
        cost=data.get("cost"),
    )
    budget.spent.update(data.get("spent") or {})
    return budget


def budget_data(budget: Budget) -> dict[str, Any]:
    """``budget``'s limits and what was spent, as JSON (the ledger's input)."""
    return {
        "name": budget.name,
        "source": budget.source,
        "inferences": budget.inferences,
        "tokens": budget.tokens,
        "cost": budget.cost,
        "spent": dict(budget.spent),
    }


#: settle signals being sent (kept referenced until done)
_SENDING: set[asyncio.Task[None]] = set()
#: (url, run id, event loop id) → the tickets ``(id, nonce)`` of this process's calls that
#: wait or hold a place in the run's ledger (their leases are renewed by one task)
_LEASED: dict[tuple[str, str, int], set[tuple[str, str]]] = {}
#: the renewing task of each key of :data:`_LEASED`
_RENEWERS: dict[tuple[str, str, int], asyncio.Task[None]] = {}


@dataclass
class LedgerBudget(Budget):
    """The run's budgets (``members``) as its process sees them on Temporal: every call
    reserves in the run's ledger (:meth:`hold_remote`, awaited by ``reserve_budgets``) and
    ends there (:meth:`end_remote`); nothing is held or charged here — a call replayed from
    the history (``count_recorded``) was charged in the ledger when it was made."""

    url: str = ""
    run_id: str = ""
    members: list[Budget] = field(default_factory=list)

    def refusal(self, tokens_needed: int, cost_needed: float) -> str | None:
        """None: only the ledger knows."""
        return None

    def charge(self, tokens: int, cost: float | None) -> None:
        """Nothing: the ledger charged the call when it was made."""

    def unreserve(self, tokens_needed: int, cost_needed: float) -> None:
        """Nothing: the ledger holds the places."""

    async def hold_remote(
        self, tokens: int, cost: float, step_path: str, attempt: int = 0
    ) -> tuple[str, str]:
        """Reserve one call's place in the ledger (starting it with the run's first call) and
        wait for its decision; the ticket ``(id, nonce)`` for :meth:`end_remote`.  ``attempt``:
        how many times this call reserved before and gave its places back (another budget made
        it wait): each is a request of its own.  Raises RunError ``budget_exceeded`` when the
        ledger refuses, ``failed`` when it cannot be reached :data:`TRIES` times in a row."""
        rid = tc.OPERATION.get() or secrets.token_hex(8)
        if attempt:
            rid += f"~{attempt}"
        nonce = secrets.token_hex(6)
        request = {"id": rid, "nonce": nonce, "tokens": tokens, "cost": cost}
        state = {"budgets": [budget_data(b) for b in self.members], "lease_s": LEASE_S}
        wid = ledger_id(self.run_id)
        client = await tc.client_for(self.url)
        self._lease((rid, nonce))
        try:
            return await self._decided(client, wid, state, request, step_path)
        except BaseException:
            self._unlease((rid, nonce))
            raise

    async def _decided(
        self,
        client: Any,
        wid: str,
        state: dict[str, Any],
        request: dict[str, Any],
        step_path: str,
    ) -> tuple[str, str]:
        """:meth:`hold_remote`'s ask and wait (its ticket leased meanwhile)."""
        from temporalio.common import WorkflowIDConflictPolicy

        rid, nonce = str(request["id"]), str(request["nonce"])
        failures, asked, delay, unknown = 0, False, 0.01, 0.0
        while True:
            try:
                if not asked:
                    await client.start_workflow(
                        tc.BUDGET_WORKFLOW,
                        state,
                        id=wid,
                        task_queue=tc.versioned_queue(self.url),
                        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                        task_timeout=tc.TASK_TIMEOUT,
                        start_signal="ask",
                        start_signal_args=[request],
                        static_summary=f"budget of run {self.run_id}"[:200],
                    )
                    asked = True
                found = await client.get_workflow_handle(wid).query("state", args=[rid, nonce])
            except asyncio.CancelledError:
                self.end_remote((rid, nonce), None)
                raise
            except Exception as e:  # noqa: BLE001 - not reachable now: try again
                failures += 1
                if failures > TRIES:
                    raise RunError(
                        Code.FAILED,
                        f"the run's budget could not be checked on Temporal "
                        f"({str(e).strip() or type(e).__name__})",
                        step_path or None,
                    ) from None
                await asyncio.sleep(0.1)
                continue
            failures = 0
            if found.get("granted"):
                return rid, nonce
            refused = found.get("refused")
            if isinstance(refused, dict):
                raise RunError(
                    Code.BUDGET_EXCEEDED,
                    str(refused.get("why")),
                    step_path or None,
                    details={
                        "budget": refused.get("budget"),
                        "limits": refused.get("limits"),
                        "spent": refused.get("spent"),
                    },
                )
            if found.get("unknown"):
                unknown += delay
                if unknown > REASK_S:  # not handled in that long (the ledger was ending): again
                    asked, unknown = False, 0.0
            await asyncio.sleep(delay)
            delay = min(0.2, delay * 2)

    def end_remote(self, ticket: tuple[str, str], used: tuple[int, float | None] | None) -> None:
        """Tell the ledger the call of ``ticket`` ended (``used``: its tokens and cost; None:
        it failed or was cancelled) — a signal sent from a task of its own, so a cancelled
        call still gives its place back."""
        rid, nonce = ticket
        self._unlease(ticket)
        message = {"id": rid, "nonce": nonce, "used": list(used) if used is not None else None}

        async def send() -> None:
            with contextlib.suppress(Exception):  # the ledger ended: nothing to give back
                client = await tc.client_for(self.url)
                await client.get_workflow_handle(ledger_id(self.run_id)).signal("settle", message)

        with contextlib.suppress(RuntimeError):  # no loop: the process is ending
            task = asyncio.get_running_loop().create_task(send())
            _SENDING.add(task)
            task.add_done_callback(_SENDING.discard)

    def _key(self) -> tuple[str, str, int]:
        return (self.url, self.run_id, id(asyncio.get_running_loop()))

    def _lease(self, ticket: tuple[str, str]) -> None:
        """Renew ``ticket``'s lease in the ledger every :data:`RENEW_S` until
        :meth:`_unlease` (one task per run and event loop renews all of them)."""
        key = self._key()
        _LEASED.setdefault(key, set()).add(ticket)
        task = _RENEWERS.get(key)
        if task is None or task.done():
            _RENEWERS[key] = asyncio.get_running_loop().create_task(self._renew(key))

    def _unlease(self, ticket: tuple[str, str]) -> None:
        with contextlib.suppress(RuntimeError):  # no loop: the process is ending
            held = _LEASED.get(self._key())
            if held is not None:
                held.discard(ticket)

    async def _renew(self, key: tuple[str, str, int]) -> None:
        """Signal ``renew`` with the tickets of ``key`` every :data:`RENEW_S` while there are
        any (a failed signal: the next one renews them)."""
        try:
            while True:
                await asyncio.sleep(RENEW_S)
                tickets = _LEASED.get(key)
                if not tickets:
                    return
                with contextlib.suppress(Exception):
                    client = await tc.client_for(self.url)
                    await client.get_workflow_handle(ledger_id(self.run_id)).signal(
                        "renew", {"ids": [list(t) for t in sorted(tickets)]}
                    )
        finally:
            if not _LEASED.get(key):
                _LEASED.pop(key, None)
            if _RENEWERS.get(key) is asyncio.current_task():
                del _RENEWERS[key]


def ledger_budgets(budgets: list[Budget], url: str, run_id: str) -> list[Budget]:
    """``budgets`` (the run's, from its plan and configuration) as one :class:`LedgerBudget`
    (none: ``[]``)."""
    if not budgets:
        return []
    first = budgets[0]
    return [LedgerBudget(name=first.name, source=first.source, url=url, run_id=run_id,
                         members=list(budgets))]  # fmt: skip
