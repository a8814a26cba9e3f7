"""The model memo of one ``plan_and_execute`` call (docs/spec/RUNTIME.md §9; docs/decisions.md
"Planning").

A replan re-runs the complete corrected plan.  Kept tool calls are answered by the planner's memo
gate; :class:`ModelMemo` does the same for kept *model* work (agent rounds, agent repair passes,
``infer`` judges of ``decide`` / ``filter``).  While a memo is active
(:data:`agentflow.runtime.models.router.model_memo`, a ContextVar that
:func:`agentflow.runtime.planner.plan_and_execute` sets around each attempt's run), a
:class:`~agentflow.runtime.models.router.RoutedClient` asks it first, and a request identical to
one answered in an EARLIER attempt is answered from that earlier response without calling the
provider.

- Key: the routed client's name (role or named model) + ``cassette.request_key`` (what
  record/replay uses: messages, tools, response schema).
- Occurrences: the n-th identical request of an attempt gets the n-th earlier answer to it (so a
  kept ``map`` that asked the same thing twice gets both answers back, in order); requests first
  seen in the current attempt always go to the model, identical ones too.
- A reused answer is a copy with ``reused=True`` and zero token usage; the router does not record
  it (``router.usage`` unchanged) and its ``model_call`` event carries ``reused: true``, which
  :class:`~agentflow.runtime.result.StepUsage` does not count.

The memo is plain per-call state (no globals beyond the ContextVar): concurrent
``plan_and_execute`` calls each see their own memo, and tasks spawned inside a run (``map``
concurrency, parallel agent tool calls) share their call's memo; a lock guards the counters.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from agentflow.runtime.models.base import ChatRequest, ChatResponse
from agentflow.runtime.models.cassette import request_key

__all__ = ["ModelMemo"]


def _copy(response: ChatResponse, *, reused: bool) -> ChatResponse:
    return replace(
        response,
        tool_calls=list(response.tool_calls),
        usage=({"input_tokens": 0, "output_tokens": 0} if reused else dict(response.usage or {})),
        cost=None if reused else response.cost,
        reused=reused,
    )


class ModelMemo:
    """Answers of earlier attempts, replayed to identical requests of the current attempt.

    Lifecycle: :meth:`start_attempt` before each attempt's run (it promotes the previous
    attempt's fresh answers); :meth:`claim` before a provider call (a reused response, or None:
    call the provider); :meth:`record` after a successful provider call.  ``reused``: requests
    answered from the memo in the current attempt.
    """

    def __init__(self) -> None:
        self._earlier: dict[str, list[ChatResponse]] = {}
        self._fresh: dict[str, dict[int, ChatResponse]] = {}
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self.reused = 0

    def start_attempt(self) -> None:
        """Begin an attempt: answers recorded so far become reusable; counters reset."""
        with self._lock:
            for key, by_index in self._fresh.items():
                known = self._earlier.setdefault(key, [])
                known.extend(by_index[i] for i in sorted(by_index))
            self._fresh.clear()
            self._seen.clear()
            self.reused = 0

    def claim(self, name: str, request: ChatRequest) -> tuple[tuple[str, int], ChatResponse | None]:
        """Register one request of client ``name``: ``(ticket, reused response or None)``.

        Pass ``ticket`` to :meth:`record` when the request went to the provider.
        """

        key = name + "\x00" + request_key(request)
        with self._lock:
            index = self._seen.get(key, 0)
            self._seen[key] = index + 1
            known = self._earlier.get(key, ())
            if index < len(known):
                self.reused += 1
                return (key, index), _copy(known[index], reused=True)
        return (key, index), None

    def record(self, ticket: tuple[str, int], response: ChatResponse) -> None:
        """Remember the provider's ``response`` to the request of ``ticket`` (from :meth:`claim`)."""
        key, index = ticket
        with self._lock:
            self._fresh.setdefault(key, {})[index] = _copy(response, reused=False)
