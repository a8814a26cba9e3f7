"""The result of one plan run (docs/spec/RUNTIME.md §1)."""

from __future__ import annotations

import json
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, NotRequired, TypedDict, cast
from urllib.parse import urlsplit

from typing_extensions import TypeVar

from agentflow.core.vocabulary import ERROR_CODES, Code
from agentflow.errors import ErrorInfo, ExitError, RunError
from agentflow.runtime.expressions import to_json_value
from agentflow.runtime.models.base import add_usage, token_count

RunStatus = Literal["ok", "exited", "error", "aborted", "cancelled"]

#: the type of a run's output: ``RunResult[Triage]`` from a generated client
#: (docs/reference/python-clients.md); a bare ``RunResult`` is ``RunResult[Any]``
OutputT = TypeVar("OutputT", default=Any)


class RoleUsage(TypedDict):
    """One role's (one step's, one stage's) share of :class:`Usage`."""

    inferences: int
    input_tokens: int
    output_tokens: int


class Usage(TypedDict):
    """``RunResult.usage``: a plain ``dict`` at run time (``usage["inferences"]``), typed for
    type checkers, so a misspelt key in a user's code is a ``mypy`` error (docs/reference/
    python-api.md "RunResult"): ``inferences``, ``input_tokens``, ``output_tokens`` and
    ``by_role`` always; the others when they apply (see :class:`RunResult`)."""

    inferences: int
    input_tokens: int
    output_tokens: int
    by_role: dict[str, RoleUsage]
    cache_read_tokens: NotRequired[int]
    cache_write_tokens: NotRequired[int]
    cost: NotRequired[float]
    usage_unknown: NotRequired[int]
    by_step: NotRequired[dict[str, Any]]
    by_stage: NotRequired[dict[str, Any]]


def as_usage(data: dict[str, Any]) -> Usage:
    """``data`` (a usage record built as a plain dict) as the :class:`Usage` it is."""
    return cast("Usage", data)


def _usage() -> Usage:
    return as_usage(empty_usage())


def empty_usage() -> dict[str, Any]:
    """A fresh usage record: ``{inferences, input_tokens, output_tokens, by_role: {}}``."""
    return {"inferences": 0, "input_tokens": 0, "output_tokens": 0, "by_role": {}}


@dataclass
class RunResult(Generic[OutputT]):
    """What a run returns (docs/spec/RUNTIME.md §1); generic in its output
    (``RunResult[Triage]``: what a client of `flowc gen python` returns).

    - ``status``: ``ok`` (finished), ``exited`` (an ``exit`` step with status ok), ``error`` (a
      step failed, or an ``exit`` with status error), ``aborted`` (a gate / on_tool_error hook
      aborted the run, or a signal stopped it: a hard stop, the partial ``results`` come back),
      ``cancelled`` (a durable run cancelled by ``flowc cancel``; its error code is ``aborted``).
    - ``output``: the finish value (None for ``silent`` and on error).
    - ``error``: an :class:`~agentflow.errors.ErrorInfo` (``code`` of docs/spec/PLAN_IR.md §8,
      ``message``, ``step_path``, ``source``, ``details``) or None.
    - ``results``: ``{step id: result}`` of every top-level step that finished.
    - ``steps``: for each key of ``results``, the step as the `.flow` writes it: ``{label,
      stage, source}`` (those known; ``{"E0": {"label": "approve › ok = ask", "stage":
      "approve", "source": "approve.flow:3:12"}}``); a hand-written plan's bare steps have none.
    - ``usage``: ``{inferences, input_tokens, output_tokens, by_role: {role: {inferences,
      input_tokens, output_tokens}}}``, plus ``cache_read_tokens`` / ``cache_write_tokens``
      when a provider reported prompt-cache use and ``cost`` (US dollars, the sum of the priced
      calls) when a call had a price, ``usage_unknown`` (how many calls' token counts were not
      counts, taken as 0) when one had (docs/models.md); ``by_step`` (by step path) and
      ``by_stage`` (by `.flow` stage) from :class:`StepUsage`.
    - ``duration_ms``: wall time of the run in milliseconds.
    - ``run_id``: the id of a durable run (docs/durable.md), else None.
    - ``partial``: of an ``aborted`` or ``cancelled`` run, the ``map``, ``loop``, ``reduce``
      and ``parallel`` steps it stopped that had finished something: a map's
      ``{step path: {of, items: {index: result}, stage?, label?, source?}}`` — ``of`` the
      number of items, ``items`` the finished ones by 0-based index (a tolerating map's
      outcomes), ``label``/``source`` the map's place in the `.flow`; a loop's ``{kind:
      "loop", of: up_to, rounds, state, …}`` (rounds 1 … ``rounds`` finished, ``state`` the
      last); a reduce's ``{kind: "reduce", of, folded, accumulator, …}`` (items 0 …
      ``folded`` - 1 folded into ``accumulator``); a parallel's ``{kind: "parallel", of,
      branches: {name: result}, …}`` (docs/reference/cli.md "Ctrl-C / SIGTERM"); empty
      otherwise.
    - ``unused_answers``: each NAME of ``answers`` (``flowc run --answer``) that answered no
      question of the run — an index past its map's items or its loop's rounds, an ask the run
      never reached — in the order given; empty otherwise.
    """

    status: RunStatus
    output: OutputT | None = None
    error: ErrorInfo | None = None
    results: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=_usage)
    duration_ms: int = 0
    run_id: str | None = None
    partial: dict[str, Any] = field(default_factory=dict)
    unused_answers: list[str] = field(default_factory=list)
    steps: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True for status ``ok`` and ``exited``."""
        return self.status in ("ok", "exited")

    def output_or_raise(self) -> OutputT:
        """The output of a run that ended ``ok`` or ``exited`` — typed ``OutputT``, never
        Optional, so a type checker reads ``result.output_or_raise()[0].category`` as the
        output model says (``result.output`` is ``OutputT | None``: None when the run did not
        end ok) — else raises the run's error as a :class:`~agentflow.errors.RunError`
        (``code``, ``message``, ``step_path``, ``source``; an ``exit``'s own code as an
        :class:`~agentflow.errors.ExitError`) (docs/reference/python-api.md "RunResult")."""
        if self.ok:
            return cast("OutputT", self.output)
        err = self.error
        if err is None:
            raise RunError(Code.FAILED, f"the run ended {self.status}")
        kind = RunError if err.code in ERROR_CODES else ExitError
        raise kind(err.code, err.message, err.step_path, err.source, err.details)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (``error`` as ``{code, message, step_path, source?, stage?,
        item?, agent?, label?, details?}``, omitted when None; ``details`` as the Python API's
        ``ErrorInfo.details``, e.g. ``details.failed`` of a map that failed more items than it
        tolerates). ``flowc run --json`` prints it."""

        data: dict[str, Any] = {"status": self.status, "output": to_json_value(self.output)}
        if self.error is not None:
            data["error"] = self.error.to_dict()
            if self.error.details:
                data["error"]["details"] = to_json_value(self.error.details)
        data["results"] = to_json_value(self.results)
        if self.steps:  # the results' keys as the `.flow` writes them (compiled ids otherwise)
            data["steps"] = {sid: dict(entry) for sid, entry in self.steps.items()}
        if self.partial:  # a stopped run's maps (items by index), loops, reduces, parallels
            data["partial"] = {
                path: to_json_value(entry)
                if "items" not in entry
                else {
                    **entry,
                    "items": {str(i): to_json_value(v) for i, v in entry["items"].items()},
                }
                for path, entry in self.partial.items()
            }
        data["usage"] = self.usage
        data["duration_ms"] = self.duration_ms
        if self.run_id is not None:
            data["run_id"] = self.run_id
        if self.unused_answers:
            data["unused_answers"] = list(self.unused_answers)
        return data


def steps_from_json(data: Any) -> dict[str, dict[str, str]]:
    """``RunResult.steps`` from its JSON form (``to_dict()["steps"]``), as a durable run's
    recorded outcome holds it; ``{}`` for anything else (an outcome recorded before it had
    them), and an entry that is not ``{field: text}`` is left out."""
    if not isinstance(data, dict):
        return {}
    return {
        str(sid): {str(k): v for k, v in entry.items() if isinstance(v, str)}
        for sid, entry in data.items()
        if isinstance(entry, dict)
    }


def partial_from_json(data: Any) -> dict[str, Any]:
    """``RunResult.partial`` from its JSON form (``to_dict()["partial"]``: item indices as
    text), as a durable run's recorded outcome holds it; ``{}`` for anything else."""
    if not isinstance(data, dict):
        return {}
    out: dict[str, Any] = {}
    for path, entry in data.items():
        if isinstance(entry, dict) and isinstance(entry.get("items"), dict):
            items = {int(i): v for i, v in entry["items"].items() if str(i).isdigit()}
            out[str(path)] = {**entry, "items": items}
        elif isinstance(entry, dict) and entry.get("kind") in ("loop", "reduce", "parallel"):
            out[str(path)] = dict(entry)  # no indices to read back
    return out


_USAGE_KEYS = ("inferences", "input_tokens", "output_tokens")
#: Counters present only once a call had them (prompt cache, money).
_OPTIONAL_KEYS = ("cache_read_tokens", "cache_write_tokens", "cost", "usage_unknown")


def elapsed_ms(started: float) -> int:
    """Whole milliseconds since ``started`` (a ``time.monotonic()`` reading)."""
    return int((time.monotonic() - started) * 1000)


def model_call_fields(response: Any, started: float) -> dict[str, Any]:
    """The fields of a ``model_call`` event (docs/spec/RUNTIME.md §8) for one inference:
    ``{model, input_tokens, output_tokens, latency_ms, finish_reason, reply}`` plus ``provider``
    and ``api`` (the configured provider's name and wire API, when a router answered) and
    ``reused: True`` for an answer reused from an earlier ``plan_and_execute`` attempt (tokens 0;
    :class:`StepUsage` skips it); ``usage_unknown: True`` when the provider's token counts
    were not counts or not reported (taken as 0: docs/models.md "Usage"), and then
    ``usage_reported: False`` when the reply gave no usage at all; ``response_id`` (the provider's id of the reply) and
    ``server_address`` / ``server_port`` (the host of the provider's base URL) when known.  ``reply`` is what the model said: ``{text, tool_calls: [{id,
    name, arguments}]}`` (``arguments`` as received).  ``response`` is a ChatResponse and
    ``started`` the ``time.monotonic()`` reading taken before the request; the call began
    ``latency_ms`` before the event's ``time``."""
    fields: dict[str, Any] = {
        "model": response.model,
        "input_tokens": int(response.usage.get("input_tokens", 0) or 0),
        "output_tokens": int(response.usage.get("output_tokens", 0) or 0),
        "latency_ms": elapsed_ms(started),
        "finish_reason": getattr(response, "finish_reason", None),
        "reply": {
            "text": response.text,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments}
                for c in getattr(response, "tool_calls", None) or ()
            ],
        },
    }
    for key in ("cache_read_tokens", "cache_write_tokens"):
        if token_count(response.usage.get(key)):
            fields[key] = token_count(response.usage.get(key))
    if getattr(response, "cost", None) is not None and not getattr(response, "reused", False):
        fields["cost"] = response.cost
    provider = getattr(response, "provider", None)
    if provider:
        fields["provider"] = provider
        fields["api"] = getattr(response, "api", None)
    if getattr(response, "reused", False):
        fields["reused"] = True
    if getattr(response, "usage_unknown", False):
        fields["usage_unknown"] = True  # its token counts were not counts: taken as 0
    if not getattr(response, "usage_reported", True):
        fields["usage_reported"] = False  # no usage block at all: unknown too, said so
    if getattr(response, "response_id", None):
        fields["response_id"] = response.response_id
    base_url = getattr(response, "base_url", None)
    if base_url:
        try:
            parts = urlsplit(base_url)
            host, port = parts.hostname, parts.port
        except ValueError:
            host, port = None, None
        if host:
            fields["server_address"] = host
            if port:
                fields["server_port"] = port
    return fields


def usage_snapshot(router: Any) -> dict[str, Any] | None:
    """A deep copy of ``router.usage`` (docs/spec/RUNTIME.md §1 ``usage`` shape), or None without
    one."""
    usage = getattr(router, "usage", None) if router is not None else None
    if not isinstance(usage, dict):
        return None
    snapshot: dict[str, Any] = json.loads(json.dumps(usage))
    return snapshot


def usage_delta(router: Any, before: dict[str, Any] | None) -> dict[str, Any]:
    """The usage ``router`` accumulated since ``before`` (a :func:`usage_snapshot`): totals and
    ``by_role`` (roles with no change left out)."""
    now = usage_snapshot(router)
    if now is None:
        return empty_usage()
    before = before or empty_usage()
    out = empty_usage()
    _delta(out, now, before)
    for role, entry in (now.get("by_role") or {}).items():
        prev = (before.get("by_role") or {}).get(role, {})
        d: dict[str, Any] = {}
        _delta(d, entry, prev)
        if any(d.values()):
            out["by_role"][role] = d
    return out


def _delta(out: dict[str, Any], now: dict[str, Any], before: dict[str, Any]) -> None:
    for k in _USAGE_KEYS:
        out[k] = int(now.get(k, 0)) - int(before.get(k, 0))
    for k in _OPTIONAL_KEYS:
        if k in now:
            diff = now[k] - before.get(k, 0)
            if diff:
                out[k] = round(diff, 10) if k == "cost" else int(diff)


class StepUsage:
    """An event sink that adds up ``model_call`` events per step path (docs/spec/RUNTIME.md §1
    ``usage``).

    ``by_step``: ``{step path: {inferences, input_tokens, output_tokens, by_role: {role: {…}}}}``,
    keyed by the path the call was made at (an agent step, a judge, a solver). :meth:`total`
    sums a step and everything nested under it (``E3`` includes ``E3/do.2/E10``). Events with
    ``reused: true`` (answers reused by a ``plan_and_execute`` replan) cost nothing: not counted;
    calls a resumed durable run replays from its record are (``takes_replayed``).
    ``by_stage``: ``{stage: {inferences, input_tokens, output_tokens, cost?}}``, the calls of
    each `.flow` stage (the event's ``stage``; calls outside any stage are left out).
    """

    #: EventBus filter: this sink only receives ``model_call`` events.
    kinds = frozenset({"model_call"})
    #: a durable run's model calls replayed from its record (``flowc resume``) are counted
    #: too: the run's usage covers the whole run, as its totals and budgets do
    takes_replayed = True

    def __init__(self) -> None:
        self.by_step: dict[str, dict[str, Any]] = {}
        self.by_stage: dict[str, dict[str, Any]] = {}
        #: step path → the usage of it and everything nested under it, kept up to date as
        #: calls are counted (each call adds to every prefix of its path: O(depth), so
        #: :meth:`total` is a look-up however many steps ran — a map of 16,000 items was
        #: quadratic when it scanned ``by_step``)
        self._totals: dict[str, dict[str, Any]] = {}

    def handle(self, event: Any) -> None:
        """Sink protocol: count ``model_call`` events, ignore the rest."""
        if getattr(event, "kind", None) != "model_call":
            return
        data = event.data or {}
        if data.get("reused"):  # answered from an earlier plan_and_execute attempt: free
            return
        entry = self.by_step.setdefault(
            event.path, {"inferences": 0, "input_tokens": 0, "output_tokens": 0, "by_role": {}}
        )
        role = entry["by_role"].setdefault(
            str(data.get("role") or "chat"),
            {"inferences": 0, "input_tokens": 0, "output_tokens": 0},
        )
        cost = data.get("cost")
        cost = (
            float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
        )
        targets = [entry, role]
        stage = data.get("stage")
        if isinstance(stage, str) and stage:
            targets.append(
                self.by_stage.setdefault(
                    stage, {"inferences": 0, "input_tokens": 0, "output_tokens": 0}
                )
            )
        unknown = bool(data.get("usage_unknown"))
        for target in targets:
            add_usage(target, data, cost, unknown=unknown)
        parts = str(event.path).split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            total = self._totals.get(prefix)
            if total is None:
                total = self._totals[prefix] = {
                    "inferences": 0,
                    "input_tokens": 0,
                    "output_tokens": 0,
                }
            add_usage(total, data, cost, unknown=unknown)

    def counts(self) -> dict[str, Any]:
        """``{"by_step", "by_stage"}`` as JSON (what a durable child unit reports to the unit
        above it, which adds it with :meth:`add_counts`)."""
        return {"by_step": self.by_step, "by_stage": self.by_stage}

    def add_counts(self, counts: dict[str, Any]) -> None:
        """Add another :class:`StepUsage`'s :meth:`counts` (a Temporal child unit's calls,
        counted where they were made, in whichever process): ``by_step``, ``by_stage`` and the
        totals of every step above each path."""
        for path, entry in (counts.get("by_step") or {}).items():
            _add_counts(self.by_step.setdefault(path, _zero_usage()), entry)
            parts = str(path).split("/")
            flat = {k: v for k, v in entry.items() if k != "by_role"}
            for depth in range(1, len(parts) + 1):
                total = self._totals.setdefault("/".join(parts[:depth]), _zero_usage(False))
                _add_counts(total, flat)
        for stage, entry in (counts.get("by_stage") or {}).items():
            _add_counts(self.by_stage.setdefault(stage, _zero_usage(False)), entry)

    def total(self, path: str) -> dict[str, int] | None:
        """``{inferences, input_tokens, output_tokens}`` of ``path`` and its nested steps, or None
        when no model call was made there."""
        total = self._totals.get(path)
        if total is None:
            return None
        out = dict(total)
        if "cost" in out:
            out["cost"] = round(out["cost"], 10)
        return out


def _zero_usage(roles: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"inferences": 0, "input_tokens": 0, "output_tokens": 0}
    if roles:
        out["by_role"] = {}
    return out


def _add_counts(target: dict[str, Any], counts: dict[str, Any]) -> None:
    """Add the counters of ``counts`` (a usage record: numbers, ``by_role`` of records) to
    ``target``'s."""
    for key, value in counts.items():
        if key == "by_role" and isinstance(value, dict):
            roles = target.setdefault("by_role", {})
            for role, entry in value.items():
                _add_counts(roles.setdefault(role, _zero_usage(False)), entry)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            summed = target.get(key, 0) + value
            target[key] = round(summed, 10) if key == "cost" else summed


#: The :class:`StepUsage` of the unit running in this task (the run's root: ``run_plan``'s; a
#: Temporal child unit: its own), to which the child units it collects add their counts.
running_step_usage: ContextVar[StepUsage | None] = ContextVar(
    "agentflow_running_step_usage", default=None
)
