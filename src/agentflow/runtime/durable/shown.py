"""A durable run's recorded operations in the user's terms, for ``flowc runs show``
(docs/durable.md "Looking at runs").

The engine records two kinds of operation per unit: the run's own — a tool call, a model
call, an answered question — named ``PATH/KIND#N`` (``E1/do.3/tool:user__note#1``,
``E4/model:gpt#2``, ``E2/ask#1``), and its own bookkeeping (``DBOS.setEvent``, ``DBOS.recv``,
``DBOS.sleep``, starting and awaiting child units …), which a user never wrote.
:func:`parse_operation` tells them apart; :class:`Labels` names a step path as the rest of the
CLI does (``prep › item 0 › user__note``: runtime/where.py), from the plan recorded with the
run.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentflow.core.vocabulary import Code
from agentflow.errors import InputError
from agentflow.ir.models import Step
from agentflow.runtime.where import Place, is_outlined, tool_label

if TYPE_CHECKING:
    from agentflow.ir.models import Plan

__all__ = [
    "ASK_PLAN_FILE",
    "Labels",
    "Operation",
    "asked_question",
    "ask_waits",
    "interrupted_steps",
    "stopped_step",
    "page",
    "parse_operation",
    "sleep_entry",
    "stopped_ask_error",
    "unanswered_steps",
]

#: The plan file a durable question records (``flowc ask --durable``: runtime/durable/asking.py).
ASK_PLAN_FILE = "<flowc ask>"
#: A step path of a durable question below its loop: ``ask/agent.ROUND/TOOL[/…]``.
_ASK_CALL = re.compile(r"ask/agent\.(?P<round>\d+)/(?P<tool>[^/]+)(?:/.*)?")

_OPERATION = re.compile(
    r"(?:(?P<path>.+)/)?(?P<kind>tool|model|ask|sleep)(?::(?P<what>[^/#]+))?#\d+"
)


@dataclass(frozen=True)
class Operation:
    """One of the run's own operations: its step ``path`` (``E1/do.3``), ``kind`` (``tool``,
    ``model``, ``ask``, ``sleep``: the wake-up time of a ``sleep``) and what it called (the
    tool's or model's name; None for ``ask`` and ``sleep``)."""

    path: str
    kind: str
    what: str | None

    def title(self) -> str:
        """``tool note`` / ``model gpt`` / ``ask``: the operation in a few words."""

        if self.what is None:
            return self.kind
        return f"{self.kind} {tool_label(self.what) if self.kind == 'tool' else self.what}"


def parse_operation(name: str) -> Operation | None:
    """The :class:`Operation` of recorded operation ``name``; None for the engine's own
    bookkeeping (``DBOS.*``, child units' start and result, …)."""
    if name.startswith("DBOS."):
        return None
    m = _OPERATION.fullmatch(name)
    if m is None:
        return None
    return Operation(m.group("path") or "", m.group("kind"), m.group("what"))


class Labels:
    """Step paths of a run of ``plan`` named in the `.flow`'s terms (``stage › name = tool``,
    ``stage › item 3 › tool``); a hand-written plan's paths, which carry its own step ids,
    name themselves.  Never raises: a path it cannot follow is shown as it is."""

    def __init__(self, plan: Plan | None):
        self.plan = plan
        self._cache: dict[str, str | None] = {}

    def label(self, path: str) -> str | None:
        """The user's name of the step at ``path``, or None (no stage: a hand-written plan)."""
        if path not in self._cache:
            try:
                self._cache[path] = self._label(path)
            except Exception:  # noqa: BLE001 - a name is a nicety; the path still shows
                self._cache[path] = None
        return self._cache[path]

    def _label(self, path: str) -> str | None:

        plan = self.plan
        if plan is None or not path:
            return None
        if plan.source_file == ASK_PLAN_FILE:
            return _ask_label(path)
        segments = path.split("/")
        step = next((s for s in plan.steps if s.id == segments[0]), None)
        if step is None:
            return None
        place = Place(segments[0], step, step.tool_name, None, self._outlined(step))
        here = segments[0]
        for seg in segments[1:]:
            inner = self._inner(step, seg)
            if inner is None:
                break  # deeper places take the nearest one's names
            here = f"{here}/{seg}"
            step = inner
            place = Place(here, step, step.tool_name, place, self._outlined(step))
        names = place.names() if here == path else place.names_below(path)
        return names.label

    def _inner(self, step: Any, seg: str) -> Any:
        """The step at path segment ``seg`` below ``step``, or None: a map/reduce item
        (``do.N``) or a loop's round (``round.N``) runs the ``do`` body; a branch (``then``,
        ``else``, a ``try``'s ``do``/``catch``, a ``parallel`` branch) is its body; below a
        call of a sub-plan the compiler outlined, a step id names the sub-plan's step (the
        ``E0`` of ``E0/else/E0``)."""
        inp = step.input if isinstance(step.input, dict) else {}
        if seg.startswith(("do.", "round.")):
            body = inp.get("do")
            return body if isinstance(body, Step) else None
        body = inp.get(seg)
        if isinstance(body, Step):
            return body
        branches = inp.get("branches")
        if isinstance(branches, dict) and isinstance(branches.get(seg), Step):
            return branches[seg]
        if self._outlined(step) and self.plan is not None:
            sub = (self.plan.plans or {}).get(str(step.tool_name).removeprefix("plan__"))
            return next((s for s in sub.steps if s.id == seg), None) if sub is not None else None
        return None

    def _outlined(self, step: Any) -> bool:

        tool = str(step.tool_name or "")
        if not tool.startswith("plan__") or self.plan is None:
            return False
        sub = (self.plan.plans or {}).get(tool.removeprefix("plan__"))
        return sub is not None and is_outlined(sub)


def _ask_label(path: str) -> str | None:
    """A durable question's step path in its terms: ``ask`` is the question (its chat rounds),
    ``ask/agent.2/user__note`` is ``ask › round 2 › user__note``; a step of a plan that
    ``plan_and_execute`` wrote (``E0`` …) names itself."""
    if path == "ask":
        return "ask"
    m = _ASK_CALL.fullmatch(path)
    if m is None:
        return None
    return f"ask › round {m.group('round')} › {tool_label(m.group('tool'))}"


#: what a question the run ended under says (``flowc cancel``, its deadline, a failure
#: elsewhere): the step was stopped, as ``flowc run`` says it (``✗ … aborted``)
_STOPPED_ASK = "the run ended before the question was answered"


def unanswered_steps(
    published: Any,
    unit: str,
    labels: Labels,
    ended: float | None = None,
    error: Any = None,
) -> list[dict[str, Any]]:
    """The questions unit ``unit`` asked that went unanswered, as steps of ``runs show``
    (status ``unanswered``), from what it published (DBOS events, Temporal memo:
    ``question:PATH`` → the question, ``answered: false`` once its wait ended with no answer).
    An answered question shows as its ``ask#`` operation; a pending one under ``waiting``.
    ``ended``: when the unit ended (None: it has not) — a question it still waited on then
    was stopped (``flowc cancel``, a deadline): status ``interrupted`` with the ``aborted``
    error ``flowc run`` showed (``error``: the run's, when it is ``aborted`` or names the
    question's step)."""
    out = []
    for key, value in sorted(dict(published or {}).items()):
        if not str(key).startswith("question:") or not isinstance(value, dict):
            continue
        stopped = ended is not None and "answered" not in value
        if value.get("answered") is not False and not stopped:
            continue
        path = str(value.get("path") or str(key)[len("question:") :])
        asked = value.get("asked_at")
        entry: dict[str, Any] = {
            "unit": unit,
            "operation": f"{path}/ask",
            "status": "unanswered",
            "started_at": asked,
            "finished_at": None,
            "path": path,
            "kind": "ask",
            "label": labels.label(path),
        }
        if stopped and ended is not None:
            entry["status"] = "interrupted"
            entry["finished_at"] = max(ended, asked) if isinstance(asked, int | float) else ended
            entry["error"] = stopped_ask_error(error, path)
        out.append(entry)
    return out


def stopped_ask_error(error: Any, path: str) -> dict[str, str]:
    """The error of the question at step ``path`` its run's end stopped: the run's ``error``
    when it is ``aborted`` (``flowc cancel``) or names that step (its deadline), else an
    ``aborted`` that says the run ended first (a failure elsewhere)."""
    if isinstance(error, dict) and (
        error.get("code") == Code.ABORTED or error.get("step_path") == path
    ):
        return {"code": str(error.get("code")), "message": str(error.get("message"))}
    return {"code": Code.ABORTED, "message": _STOPPED_ASK}


def ask_waits(entries: list[dict[str, Any]], published: Any) -> None:
    """Start each answered question of ``entries`` (a unit's steps of ``runs show``) when it
    was asked (its published ``asked_at``), not when its answer was recorded: its duration is
    the wait, as the run's own progress line showed it (``✓ s › c = ask … 5.03s``)."""
    asked: dict[str, float] = {}
    for value in dict(published or {}).values():
        if isinstance(value, dict) and isinstance(value.get("operation"), str):
            at = value.get("asked_at")
            if isinstance(at, int | float) and not isinstance(at, bool):
                asked[value["operation"]] = float(at)
    for entry in entries:
        at = asked.get(str(entry.get("operation")))
        start = entry.get("started_at")
        if at is not None and start is not None and at < start:
            entry["started_at"] = at


def sleep_entry(entry: dict[str, Any], value: Any, run_status: str, ended: float) -> None:
    """A ``sleep`` operation of ``runs show`` (``entry``, its recorded ``value`` the wake-up
    time, epoch seconds; ``run_status`` the run's, ``ended`` when it last changed): ``wakes_at``
    added; while the time is ahead its status is ``sleeping`` (the run is running or stopped:
    a resume sleeps what is left) and it has no end; when the run failed or was cancelled
    before it (its deadline, ``flowc cancel``) ``interrupted``; else it ended when it woke (the record itself
    is made when the sleep starts).  A reused sleep (``--reuse``, ``redrive``: ``entry["reused"]``)
    whose wake-up passed before this run took it took no time here: it ends as it starts
    (``wakes_at`` stays the reused run's wake-up); one still ahead is waited out as any."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    entry["wakes_at"] = float(value)
    started = entry.get("started_at")
    if entry.get("reused") and isinstance(started, int | float) and value <= started:
        entry["finished_at"] = started  # the reused run's sleep woke before this run took it
        return
    if entry.get("status") != "done":
        return
    if run_status in ("running", "waiting", "stopped"):
        if value > time.time():
            entry["status"], entry["finished_at"] = "sleeping", None
            return
    elif run_status not in ("ok", "exited") and value > ended:
        # the run's own last update may precede the sleep's record (its root row is not
        # touched when the run ends during the sleep): never an end before the start
        started = entry.get("started_at")
        end = max(ended, started) if isinstance(started, int | float) else ended
        entry["status"], entry["finished_at"] = "interrupted", end
        return
    entry["finished_at"] = float(value)


def page(info: Any, limit: int | None, offset: int, labels: Labels | None = None) -> None:
    """Keep steps ``offset`` … ``offset + limit`` of ``info`` (a RunInfo whose ``steps`` are
    in order; ``limit`` None: all from ``offset``), noting how many there were in
    ``steps_total`` and where this page starts in ``steps_offset`` (``flowc runs show
    --limit/--offset``, docs/reference/cli.md).  A kept step whose ``_op`` holds its
    :class:`Operation` is named now, by ``labels`` (``kind``, ``label``): only the page's
    steps are (naming is most of the time ``runs show`` takes on a wide map)."""
    if offset < 0 or (limit is not None and limit < 0):
        raise InputError("--limit and --offset are counts of steps: 0 or more")
    _mark_retried(info.steps)
    info.steps_total = len(info.steps)
    info.steps_offset = offset
    end = None if limit is None else offset + limit
    if offset or end is not None:
        info.steps = info.steps[offset:end]
    for step in info.steps:
        op = step.pop("_op", None)
        if op is not None:
            step["kind"] = op.title()
            step["label"] = labels.label(op.path) if labels is not None else None


#: the path of a tool call an agent's model made (``E1/agent.2/read_file``)
_AGENT_CALL = re.compile(r"(^|/)agent\.\d+(/|$)")


def _mark_retried(steps: list[dict[str, Any]]) -> None:
    """Mark ``retried`` each failed attempt (status ``error``) of a tool or model call that
    the run made again: a later operation of the same unit, step path and call — the step's
    ``retry`` (or an ``on_tool_error`` hook) took that failure as one to try again, as its
    error's code says (``transient``, ``timeout`` …).  The last failed attempt stays
    ``error``: the failure the step ended with (docs/reference/cli.md "flowc runs show")."""
    later: set[tuple[Any, ...]] = set()
    for step in reversed(steps):
        op = step.get("_op")
        again = step.pop("_later", False)  # its next attempt is past a page's rows (items.py)
        if op is None or op.kind == "ask" or _AGENT_CALL.search(op.path):
            continue  # an agent's tool call: its failure went back to the model, not retried
        key = (step.get("unit"), op.path, op.kind, op.what)
        if step.get("status") == "error" and (key in later or again):
            step["status"] = "retried"
        later.add(key)


def asked_question(spec: Any) -> str | None:
    """The question of a durable question's run (``flowc ask --durable``) from its recorded
    ``spec`` (``input.question``), or None for a run of a plan."""
    if not isinstance(spec, dict) or not isinstance(spec.get("ask"), dict):
        return None
    data = spec.get("input")
    question = data.get("question") if isinstance(data, dict) else None
    return question if isinstance(question, str) else None


def interrupted_steps(output: Any, unit: str) -> list[dict[str, Any]]:
    """The tool calls a durable question was stopped in (Ctrl-C during the call: it recorded
    no operation, and a resume makes it again), as steps of ``runs show`` (status
    ``interrupted``), from the question's recorded result (``results.ask.tools_called``
    entries with ``interrupted``: runtime/chat.py)."""
    results = output.get("results") if isinstance(output, dict) else None
    record = results.get("ask") if isinstance(results, dict) else None
    calls = record.get("tools_called") if isinstance(record, dict) else None
    out = []
    for call in calls if isinstance(calls, list) else ():
        if not isinstance(call, dict) or not call.get("interrupted"):
            continue
        path, tool = str(call.get("path") or "ask"), str(call.get("tool") or "")
        started, ended = call.get("started_at"), call.get("finished_at")
        out.append(
            {
                "unit": unit,
                "operation": f"{path}/tool:{tool}",
                "status": "interrupted",
                "started_at": started if isinstance(started, (int, float)) else None,
                "finished_at": ended if isinstance(ended, (int, float)) else None,
                "path": path,
                "kind": Operation(path, "tool", tool).title(),
                "label": _ask_label(path),
            }
        )
    return out


#: the run errors that stop the step running when they strike (its call records nothing)
_STOPPING = frozenset({Code.DEADLINE_EXCEEDED, Code.TIMEOUT, Code.ABORTED})


def stopped_step(
    error: Any, steps: list[dict[str, Any]], labels: Labels, ended: float | None
) -> list[dict[str, Any]]:
    """The step a run's ``error`` stopped while it ran (its deadline expired, its timeout, a
    cancel: the call was cut off and recorded no operation), as a step of ``runs show``
    (status ``interrupted``, ended when the run did, with the error), when no listed step of
    ``steps`` is that step or inside it; else nothing."""
    if not isinstance(error, dict) or error.get("code") not in _STOPPING:
        return []
    path = error.get("step_path")
    if not isinstance(path, str) or not path:
        return []
    if any(
        isinstance(s.get("path"), str) and (s["path"] == path or s["path"].startswith(path + "/"))
        for s in steps
    ):
        return []
    label = error.get("label")
    return [
        {
            "unit": "(run)",
            "operation": f"{path}/stopped",
            "status": "interrupted",
            "started_at": None,
            "finished_at": ended,
            "path": path,
            "kind": "stopped",
            "label": label if isinstance(label, str) and label else labels.label(path),
            "error": {"code": str(error["code"]), "message": str(error.get("message"))},
        }
    ]
