"""Durable runs on Temporal, inspected and messaged from outside: what management.py's
commands do on a ``temporal://`` URL (``flowc runs``, ``runs show``, ``answer``, ``cancel``,
the recorded input of ``redrive`` and the reuse table of ``--reuse``; docs/durable.md
"Temporal").  None of them needs a worker: they read the service's visibility and histories
through a client (:mod:`.temporal_client`), signal and cancel — and none loads the executor,
the model clients or the tools (docs/decisions.md "What flowc runs show loads").  Starting,
resuming and working is :mod:`.temporal_runs`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import math
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentflow.core.vocabulary import Code
from agentflow.errors import Cancelled, InputError
from agentflow.runtime.durable import temporal_client as tc
from agentflow.runtime.durable import temporal_show as ts
from agentflow.runtime.durable.answers import (
    UNANSWERED,
    Claim,
    as_written,
    checked_answer,
    closed_message,
)
from agentflow.runtime.durable.records import lost_secret, question_digest
from agentflow.runtime.durable.run_info import (
    RunInfo,
    count_inference,
    ended_message,
    error_text,
    json_of,
    no_question_message,
    no_run_message,
    plan_of,
    published_questions,
    refuse_redrive,
)
from agentflow.runtime.durable.shown import (
    Labels,
    ask_waits,
    page,
    parse_operation,
    sleep_entry,
    stopped_ask_error,
    unanswered_steps,
)

if TYPE_CHECKING:
    from agentflow.runtime.durable.run_info import Question

__all__ = [
    "answer",
    "cancel",
    "count_runs",
    "list_runs",
    "pending_questions",
    "recorded_spec",
    "reuse_table",
    "show_run",
    "unanswered",
]


def _where(url: str) -> str:
    target = tc.parse_url(url)
    return f"Temporal {target.address} (namespace {target.namespace})"


async def _no_run(client: Any, url: str, run_id: str) -> InputError:
    """``no durable run 'RUN' in Temporal …``, with a hint naming the run of the namespace
    ``run_id`` looks like a slip of (run_info.no_run_message; the newest 1,000 runs looked at)."""
    ids = [w.id async for w in client.list_workflows(
        f"WorkflowType = '{tc.RUN_WORKFLOW}'", limit=1000
    )]  # fmt: skip
    return InputError(no_run_message(run_id, _where(url), ids))


def _quoted(run_id: str) -> str:
    return run_id.replace("\\", "\\\\").replace("'", "\\'")


async def _family(client: Any, run_id: str, limit: int | None = None, where: str = "") -> list[Any]:
    """The run's root and child unit workflows (visibility listing, no worker needed; at most
    ``limit`` of them, in no particular order; ``where``: a further condition)."""
    quoted = _quoted(run_id)
    query = f"(WorkflowId = '{quoted}' OR WorkflowId STARTS_WITH '{quoted}/'){where}"
    out = []
    async for w in client.list_workflows(query, limit=limit):
        if w.id == run_id or w.id.startswith(run_id + "/"):
            out.append(w)
    return out


#: the first window of start time a lazy listing of a run's workflows asks for (each next
#: window is twice as wide)
WINDOW_MS = 1_000


def _iso(ms: int) -> str:
    """Epoch milliseconds as a visibility query's time (RFC 3339, UTC)."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


class _Workflows(ts.Listing):
    """The run's workflows as ``runs show`` reads them (temporal_show.Listing: ids and starts,
    ends with their memo's counts, unanswered questions), and each one's unit name. Whole
    (:meth:`add` of the whole family), or listed lazily from the run's start in windows of
    start time up to ``end`` (epoch milliseconds): SQL visibility lists by close time, not in
    ascending start order, so a listing that the merge can consume in start order is asked
    for a window at a time (docs/decisions.md "Temporal edges (round 41)")."""

    def __init__(self, client: Any, run_id: str, end: float = math.inf) -> None:
        super().__init__([], [], [])
        self.client = client
        self.run_id = run_id
        self.end = end
        self.width = WINDOW_MS
        self.units: list[str] = []
        #: each unit's memo (its questions: ``question:PATH``), as ``units``
        self.memos: list[dict[str, Any]] = []
        self.windows = 0

    async def add(self, entries: list[Any]) -> None:
        """List ``entries`` (visibility entries, of one window or the whole family)."""
        entries.sort(key=lambda w: (w.id != self.run_id, _started(w), w.id))
        for w in entries:
            memo = await _memo(w)
            unit = w.id[len(self.run_id) :].lstrip("/") or "(run)"
            self.units.append(unit)
            self.memos.append(memo)
            self.family.append((w.id, _started(w)))
            self.ended.append(_ended(w, memo))
            # a workflow closed while it waited on a question: the question was stopped
            closed = getattr(w, "close_time", None)
            ended = closed.timestamp() if closed is not None else None
            self.extras.append(unanswered_steps(memo, unit, Labels(None), ended))

    async def more(self) -> None:
        """List the child workflows that started in the next window."""
        start = int(self.until)
        stop = start + self.width
        self.windows += 1
        self.width *= 2
        query = (
            f"WorkflowId STARTS_WITH '{_quoted(self.run_id)}/' "
            f"AND StartTime >= '{_iso(start)}' AND StartTime < '{_iso(stop)}'"
        )
        found = [w async for w in self.client.list_workflows(query)]
        await self.add([w for w in found if w.id.startswith(self.run_id + "/")])
        self.until = float(stop) if stop < self.end else math.inf


async def _describe(client: Any, run_id: str) -> Any:
    from temporalio.service import RPCError

    try:
        return await client.get_workflow_handle(run_id).describe()
    except RPCError:
        return None


# ---------------------------------------------------------------------------------------------
# Reuse and redrive


async def _operations(
    client: Any, workflow_id: str, first: int | None = None, internals: bool = True
) -> list[dict[str, Any]]:
    """The recorded operations of one workflow, in order: ``{"name", "value", "started_at",
    "finished_at"}`` (``value``: the op's record ``{"v"…}`` or ``{"e"…}``), read from its
    history's local-activity markers; only its ``first`` steps (None: all; ``internals``: the
    engine's own operations count as steps)."""
    from temporalio.api.enums.v1 import EventType

    handle = client.get_workflow_handle(workflow_id)
    out: list[dict[str, Any]] = []
    converter = client.data_converter
    scheduled_at: float | None = None
    task_started = EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED
    marker = EventType.EVENT_TYPE_MARKER_RECORDED
    async for event in handle.fetch_history_events():
        kind = event.event_type
        if kind == task_started:
            scheduled_at = event.event_time.ToMilliseconds() / 1000.0
        if kind != marker:
            continue
        at = event.event_time.ToMilliseconds() / 1000.0
        attrs = event.marker_recorded_event_attributes
        if attrs.marker_name != "core_local_activity":
            continue

        data = attrs.details.get("data")
        meta = json.loads(data.payloads[0].data) if data and data.payloads else {}
        result = attrs.details.get("result")
        value: Any = None
        if result is not None and result.payloads:
            decoded = await converter.decode(list(result.payloads))
            value = decoded[0] if decoded else None
        name = str(meta.get("activity_id") or "")
        out.append(
            {
                "name": name,
                "value": value,
                "failed": attrs.HasField("failure"),
                "started_at": scheduled_at,
                "finished_at": at,
            }
        )
        if first is not None and (internals or parse_operation(name) is not None):
            first -= 1
            if first <= 0:
                break
    return out


async def reuse_table(url: str, run_id: str, *, asks: bool = True) -> dict[str, tuple[str, Any]]:
    """``{operation name: (input digest, value)}`` of every operation run ``run_id`` finished
    without error, and (``asks``) every answer it was given and has not taken yet
    (runs.reuse_table on Temporal)."""
    client = await tc.client_for(url)
    family = await _family(client, run_id)
    if not any(w.id == run_id for w in family):
        raise InputError(f"no durable run {run_id!r} to reuse")
    table: dict[str, tuple[str, Any]] = {}
    for w in family:
        for op in await _operations(client, w.id):
            record = op["value"]
            if isinstance(record, dict) and "v" in record:
                inner = record["v"]
                if isinstance(inner, dict) and "d" in inner and "v" in inner:
                    if lost_secret(inner):  # a secret was redacted from it: not reused
                        continue
                    table.setdefault(op["name"], (inner["d"], inner["v"]))
    if not asks:
        table = {k: v for k, v in table.items() if "/ask#" not in k and not k.startswith("ask#")}
        return table
    # an answer signalled while no worker ran the run, not taken yet: no operation holds it,
    # its unit's history does (dbos_engine.answered_while_stopped on DBOS)
    for q in (await _open_questions(client, run_id, family))[1]:
        if q.closed == "answer" and q.key:
            table.setdefault(q.key, (question_digest(q.question, q.choices, q.schema), q.answer))
    return table


async def recorded_spec(url: str, run_id: str, *, redrive: bool = False) -> dict[str, Any]:
    """runs.recorded_spec on Temporal: the run's recorded input (its first history event)."""
    client = await tc.client_for(url)
    described = await _describe(client, run_id)
    if described is None:
        raise await _no_run(client, url, run_id)
    spec: dict[str, Any] = {}
    async for event in client.get_workflow_handle(run_id).fetch_history_events():
        attrs = event.workflow_execution_started_event_attributes
        decoded = await client.data_converter.decode(list(attrs.input.payloads))
        spec = decoded[0] if decoded else {}
        break
    if redrive:
        refuse_redrive(run_id, spec, _status(described, await _memo(described)))
    spec.pop("_reuse_table", None)
    return spec


# ---------------------------------------------------------------------------------------------
# Inspection


def _status(w: Any, memo: dict[str, Any] | None) -> str:
    from temporalio.client import WorkflowExecutionStatus as S

    status = w.status
    if status == S.RUNNING:
        return "running"
    if status == S.COMPLETED:
        return str((memo or {}).get("status") or "ok")
    if status in (S.CANCELED, S.TERMINATED):
        return "cancelled"
    return "error"


#: seconds a run's workflow task may wait for a worker before the run is said ``stopped`` (a
#: worker takes a task within a second; a dead one's sticky queue hands it on after 2 s)
STALLED_S = 6.0
#: seconds since any worker last polled the task queue after which none is taken to serve it:
#: a live worker polls again at least once a minute (the server's long poll)
POLL_SILENT_S = 75.0


async def _no_worker(client: Any, url: str, run_id: str, polled: dict[str, float]) -> bool:
    """True when no worker takes run ``run_id`` up now, as DBOS says ``stopped`` of a run no
    process holds (docs/durable.md "Temporal"): its workflow task has waited for a worker
    longer than :data:`STALLED_S` (an answer signalled after the run's process died), or no
    worker has polled the run's task queue for :data:`POLL_SILENT_S`.  ``polled``: the queue's
    last poll time, read once per listing.  False when the service cannot say."""
    from temporalio.api.enums.v1 import PendingWorkflowTaskState, TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    now = time.time()
    try:
        if "last" not in polled:
            queue = tc.versioned_queue(url)
            request = DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
            found = await client.workflow_service.describe_task_queue(request)
            times = [p.last_access_time.ToSeconds() for p in found.pollers]
            polled["last"] = max(times, default=0.0)
        if now - polled["last"] > POLL_SILENT_S:
            return True
        described = await client.get_workflow_handle(run_id).describe()
        task = described.raw_description.pending_workflow_task
        if task.state != PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED:
            return False
        scheduled: float = task.scheduled_time.ToSeconds()
        return now - scheduled > STALLED_S
    except Exception:  # noqa: BLE001 - a listing says what it knows: the engine's status
        return False


async def _memo(w: Any) -> dict[str, Any]:
    with contextlib.suppress(Exception):
        return dict(await w.memo())
    return {}


async def _outcome(handle: Any) -> dict[str, Any]:
    """The run's output record; a cancelled run ends ``aborted`` (as on DBOS)."""
    from temporalio.client import WorkflowFailureError
    from temporalio.exceptions import CancelledError

    try:
        out: dict[str, Any] = await handle.result()
    except WorkflowFailureError as e:
        if isinstance(e.cause, CancelledError):
            message = Cancelled().message
            return {"status": "cancelled", "error": {"code": Code.ABORTED, "message": message}}
        cause = e.cause
        code = Code.DURABLE_REPLAY_MISMATCH if "Nondeterminism" in str(cause) else Code.FAILED
        return {"status": "error", "error": {"code": code, "message": str(cause or e)}}
    return out


async def _info(client: Any, w: Any) -> RunInfo:

    memo = await _memo(w)
    status = _status(w, memo)
    info = RunInfo(
        run_id=w.id,
        status=status,
        plan=str(memo.get("plan") or ""),
        question=memo.get("question") if isinstance(memo.get("question"), str) else None,
        created_at=w.start_time.timestamp() if w.start_time else 0.0,
        updated_at=(w.close_time or w.start_time).timestamp() if w.start_time else 0.0,
    )
    if status != "running":
        with contextlib.suppress(Exception):
            out = await _outcome(client.get_workflow_handle(w.id))
            info.error = out.get("error")
            info.output = out.get("output")
            took = out.get("duration_ms")
            if isinstance(took, int) and not isinstance(took, bool) and took >= 0:
                info.duration_ms = took
    return info


async def list_runs(
    url: str, *, limit: int | None = 50, status: str | None = None, plan: str | None = None
) -> list[RunInfo]:
    """runs.list_runs on Temporal: the latest runs, newest first, with pending questions;
    ``status``/``plan`` keep the runs that match before ``limit`` (None: all) is counted."""
    client = await tc.client_for(url)
    wanted = {"running", "waiting", "stopped"} if status == "unfinished" else {status}
    out = []
    query = f"WorkflowType = '{tc.RUN_WORKFLOW}'"
    polled: dict[str, float] = {}
    async for w in client.list_workflows(query, limit=None if status or plan else limit):
        info = await _info(client, w)
        if info.status == "running":
            family = await _family(client, w.id)
            info.questions, info.answered = await _open_questions(client, w.id, family)
            if await _no_worker(client, url, w.id, polled):
                info.status = "stopped"  # `flowc resume` (or any worker) continues it
            elif info.questions:
                info.status = "waiting"
        if (status and info.status not in wanted) or (plan and plan not in (info.plan or "")):
            continue
        out.append(info)
    out.sort(key=lambda i: i.created_at, reverse=True)
    return out if limit is None else out[:limit]


async def count_runs(url: str) -> tuple[int, int]:
    """runs.count_runs on Temporal: ``(all, unfinished)`` runs (unfinished: still running)."""
    client = await tc.client_for(url)
    every = open_ = 0
    async for w in client.list_workflows(f"WorkflowType = '{tc.RUN_WORKFLOW}'"):
        every += 1
        open_ += w.status is not None and w.status.name == "RUNNING"
    return every, open_


async def show_run(
    url: str,
    run_id: str,
    *,
    internals: bool = False,
    values: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> RunInfo:
    """runs.show_run on Temporal: the run's operations in the `.flow`'s terms, read from the
    histories of its workflows (temporal_show.py), its questions left unanswered (from their
    memo), ``values`` (each step's recorded result as JSON), one page of steps
    (``limit``/``offset``)."""

    client = await tc.client_for(url)
    # the requests that do not wait on each other go out together (a loaded server answers
    # each one late): the listing (a page: its first READERS + 1, which tells a run read
    # whole from one read lazily) with the run's input, then its outcome with the histories
    few = limit and ts.READERS + 1
    family, spec, described = await asyncio.gather(
        _family(client, run_id, few or None),
        _first_input(client, run_id),
        _describe(client, run_id) if few else asyncio.sleep(0),
        return_exceptions=True,
    )
    if isinstance(family, BaseException):
        raise family
    lazy = bool(few) and len(family) > ts.READERS
    root = described if lazy and not isinstance(described, BaseException) else None
    root = root or next((w for w in family if w.id == run_id), None)
    if root is None:
        raise await _no_run(client, url, run_id)
    if isinstance(spec, BaseException):
        raise spec
    if lazy:
        # a page of a run of many workflows (a wide map's batches) reads only what it shows,
        # a deep one skipping the workflows that ended before it by their counts, and lists
        # the workflows in windows of start time as the page reaches them (children start
        # before the run ends; a running run's, before now — a minute of clock skew allowed)
        closed = root.close_time.timestamp() if root.close_time else time.time() + 60.0
        listing = _Workflows(client, run_id, math.floor(closed * 1000) + 1)
        await listing.add([root])
        listing.until = float(math.floor(_started(root) * 1000))
        reading = ts.read_first(client, listing, [], internals, offset + (limit or 0), None, offset)
    else:  # a smaller run is read whole (its total and cost are exact)
        listing = _Workflows(client, run_id)
        await listing.add(family)
        reading = ts.read_all(client, listing.family, listing.extras, internals)
    both = asyncio.gather(_info(client, root), reading)
    await asyncio.sleep(0)  # their first requests are sent: the plan loads meanwhile
    labels = Labels(plan_of(spec))
    info, read = await both
    for unit_extras in listing.extras:  # (those listed as the page was read too)
        for extra in unit_extras:
            extra["label"] = labels.label(extra["path"])
            if extra["status"] == "interrupted":  # stopped by the run's end: its error
                extra["error"] = stopped_ask_error(info.error, extra["path"])
    units = listing.units
    info.internal = read.internal
    info.steps_partial = read.partial
    end = None if limit is None else offset + limit
    cost: dict[str, Any] = {"inferences": 0, "input_tokens": 0, "output_tokens": 0}
    priced = 0.0
    converter = client.data_converter
    for at, step in enumerate(read.steps, read.skipped):
        if not isinstance(step, ts.Op):
            info.steps.append(step)
            continue
        model = "/model:" in step.name
        shown = at >= offset and (end is None or at < end)
        entry: dict[str, Any] = {
            "unit": units[step.unit],
            "operation": step.name,
            "status": "error" if step.failed else "done",
            "started_at": step.started_at,
            "finished_at": step.finished_at,
        }
        if step.parsed is None:
            entry["internal"] = True
        else:
            entry.update(path=step.parsed.path, kind=step.parsed.what, label=None, _op=step.parsed)
        info.steps.append(entry)
        if not (shown or model):
            continue  # its result is decoded only when it is shown or priced
        recorded = await step.value(converter)
        record = recorded if isinstance(recorded, dict) else {}
        if "e" in record:
            entry["status"] = "error"
            entry["error"] = error_text(record["e"], step.parsed)
        got = record.get("v")
        inner: dict[str, Any] = got if isinstance(got, dict) else {}
        value = inner.get("v")
        if model and value is not None and not inner.get("reused"):
            priced += count_inference(cost, value)
        if inner.get("reused"):
            entry["reused"] = True
        if step.parsed is not None and step.parsed.kind == "sleep":
            sleep_entry(entry, value, info.status, info.updated_at)
        if values and step.parsed is not None and value is not None:
            entry["value"] = json_of(value)
    for unit, memo in zip(units, listing.memos, strict=True):  # a question's wait, asked on
        ask_waits([e for e in info.steps if e.get("unit") == unit], memo)
    if priced:
        cost["cost"] = round(priced, 10)
    info.cost = cost
    if info.status == "running":
        running = await _family(client, run_id, where=" AND ExecutionStatus = 'Running'")
        listed = running if lazy else family
        info.questions, info.answered = await _open_questions(client, run_id, listed)
        if await _no_worker(client, url, run_id, {}):
            info.status = "stopped"  # `flowc resume` (or any worker) continues it
        elif info.questions:
            info.status = "waiting"
    # the steps counted but not read come before the page (read_first): off the offset
    page(info, limit, offset - read.skipped, labels)
    info.steps_total += read.skipped
    info.steps_offset = offset
    return info


def _ended(w: Any, memo: dict[str, Any]) -> ts.Ended | None:
    """When workflow ``w`` (a listing's entry) ended and the operations its memo counts
    (temporal_workflows ``ops``), or None: running, or recorded with no count."""
    ops = memo.get("ops")
    closed = getattr(w, "close_time", None)
    if closed is None or not isinstance(ops, list) or len(ops) != 2:
        return None
    if not all(isinstance(n, int) and n >= 0 for n in ops):
        return None
    return (closed.timestamp(), ops[0], ops[1])


async def _first_input(client: Any, workflow_id: str) -> dict[str, Any]:
    """The input workflow ``workflow_id`` started with (its history's first event only; the
    service's error for an unknown workflow)."""
    events = client.get_workflow_handle(workflow_id).fetch_history_events(page_size=1)
    async for event in events:
        attrs = event.workflow_execution_started_event_attributes
        decoded = await client.data_converter.decode(list(attrs.input.payloads))
        return decoded[0] if decoded and isinstance(decoded[0], dict) else {}
    return {}


def _started(w: Any) -> float:
    """When workflow ``w`` (a visibility listing's entry) started, epoch seconds."""
    at = getattr(w, "start_time", None)
    return at.timestamp() if at is not None else 0.0


async def _questions(client: Any, run_id: str, family: list[Any]) -> list[Question]:
    """The questions the running workflows of ``family`` publish in their memo and wait on."""
    return (await _open_questions(client, run_id, family))[0]


async def _open_questions(
    client: Any, run_id: str, family: list[Any]
) -> tuple[list[Question], list[Question]]:
    """The questions the running workflows of ``family`` publish in their memo and have not
    taken: ``(waiting, answered)``.  An answer signalled while no worker runs the unit is in
    its history but not in its memo (the unit writes ``answered`` as it takes it): a unit
    with a question published and a workflow task pending (something arrived that no worker
    took yet) has its history read for the first message on each question's topic, which
    closes it (docs/decisions.md "answered while stopped, on Temporal (round 41)")."""
    from temporalio.client import WorkflowExecutionStatus

    waiting: list[Question] = []
    answered: list[Question] = []
    for w in family:
        if w.status != WorkflowExecutionStatus.RUNNING:
            continue
        described = await _describe(client, w.id)  # its memo now (visibility may lag)
        memo = await _memo(described) if described is not None else {}
        published = published_questions(run_id, w.id, memo)
        if published and _task_pending(described):
            taken = await _first_messages(client, client.get_workflow_handle(w.id))
            for q in published:
                first = taken.get(f"answer:{q.path}")
                if first is None:
                    waiting.append(q)
                else:
                    claim = _claim_of(first)
                    answered.append(dataclasses.replace(q, closed=claim.kind, answer=claim.value))
        else:
            waiting.extend(published)
    return waiting, answered


def _task_pending(described: Any) -> bool:
    """Whether workflow ``described`` (a description) has a workflow task no worker completed
    yet (a signal, a timer… arrived since its last one)."""
    raw = getattr(described, "raw_description", None)
    return raw is not None and raw.HasField("pending_workflow_task")


async def pending_questions(url: str, run_id: str) -> list[Question]:
    """The questions run ``run_id`` waits on now."""
    client = await tc.client_for(url)
    return await _questions(client, run_id, await _family(client, run_id))


# ---------------------------------------------------------------------------------------------
# Answer, cancel


async def answer(url: str, run_id: str, step: str, value: Any) -> Question:
    """Answer the question of run ``run_id`` at ``step`` with ``value``: a signal, accepted by
    the service with no worker alive.  The unit takes the first answer signalled for a
    question; this call reads the unit's history afterwards and says whether its answer was
    that one.  Raises InputError for no such question, a value it does not accept, or an
    answer that came second."""

    return await _message(url, run_id, step, lambda q: {"answer": checked_answer(q, value)})


async def unanswered(url: str, run_id: str, step: str) -> Question:
    """Leave the question of run ``run_id`` at ``step`` unanswered (its ``when_unanswered``
    decides)."""

    return await _message(url, run_id, step, lambda q: UNANSWERED)


async def _message(url: str, run_id: str, step: str, make: Callable[[Any], Any]) -> Question:

    client = await tc.client_for(url)
    family = await _family(client, run_id)
    if not family:
        raise await _no_run(client, url, run_id)
    pending = await _questions(client, run_id, family)
    question = next((q for q in pending if q.path == step), None)
    if question is None:
        taken = await _taken(client, family, f"answer:{step}")
        if taken is not None:  # answered (or closed) already: said as on DBOS
            raise InputError(closed_message(run_id, step, taken))
        root = next((w for w in family if w.id == run_id), None)
        status = _status(root, await _memo(root)) if root is not None else "running"
        if status != "running":  # a run that ended waits on nothing: said as on DBOS
            raise InputError(ended_message(run_id, status, as_written(step)))
        raise InputError(no_question_message(run_id, step, pending))
    value = make(question)
    token = secrets.token_hex(8)
    topic = f"answer:{step}"
    handle = client.get_workflow_handle(question.workflow_id)
    await handle.signal(tc.MESSAGE_SIGNAL, {"topic": topic, "value": value, "token": token})
    # the first message signalled on the topic is the one the unit takes

    first = await _first_message(client, handle, topic)
    if first is None or first.get("token") == token:
        if isinstance(value, dict) and "answer" in value:  # the value taken, as on DBOS
            return dataclasses.replace(question, closed="answer", answer=value["answer"])
        return question
    raise InputError(closed_message(run_id, step, _claim_of(first)))


async def _first_message(client: Any, handle: Any, topic: str) -> dict[str, Any] | None:
    """The first message signalled to the unit of ``handle`` on ``topic`` (the one it takes),
    read from its history; None when there is none."""
    return (await _first_messages(client, handle, topic)).get(topic)


async def _first_messages(
    client: Any, handle: Any, only: str | None = None
) -> dict[str, dict[str, Any]]:
    """The first message signalled to the unit of ``handle`` on each topic (``only``: that
    topic, the read stopping at it), read from its history."""
    from temporalio.api.enums.v1 import EventType

    out: dict[str, dict[str, Any]] = {}
    async for event in handle.fetch_history_events():
        if event.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            continue
        attrs = event.workflow_execution_signaled_event_attributes
        if attrs.signal_name != tc.MESSAGE_SIGNAL:
            continue
        decoded = await client.data_converter.decode(list(attrs.input.payloads))
        message = decoded[0] if decoded else {}
        if not isinstance(message, dict) or not isinstance(message.get("topic"), str):
            continue
        if only is None or message["topic"] == only:
            out.setdefault(message["topic"], message)
            if only is not None:
                break
    return out


def _claim_of(message: dict[str, Any]) -> Any:
    """The :class:`~agentflow.runtime.durable.answers.Claim` a taken message stands for."""

    first = message.get("value")
    if isinstance(first, dict) and "answer" in first:
        return Claim(False, "answer", first["answer"])
    return Claim(False, "unanswered")


async def _taken(client: Any, family: list[Any], topic: str) -> Any:
    """The claim of the message a unit of the run already took on ``topic`` (a question
    answered or closed before), or None."""
    for w in family:
        first = await _first_message(client, client.get_workflow_handle(w.id), topic)
        if first is not None:
            return _claim_of(first)
    return None


async def cancel(url: str, run_id: str) -> None:
    """Cancel run ``run_id`` (Temporal cancellation: its workflow and children, and their
    running operations, are cancelled).  Raises InputError for an unknown run, one that
    ended, and one whose root claimed its end before the cancel request reached it (the run
    keeps its end: docs/durable.md "A cancel that comes late")."""
    client = await tc.client_for(url)
    described = await _describe(client, run_id)
    if described is None:
        raise await _no_run(client, url, run_id)
    memo = await _memo(described)
    status = _status(described, memo)
    if status != "running":
        raise InputError(f"run {run_id} has already ended ({status}): nothing to cancel")
    if not memo.get(tc.END_MEMO):
        await client.get_workflow_handle(run_id).cancel()
        if await _cancel_won(client, run_id):
            return
    raise InputError(
        f"run {run_id} has already finished (its outcome is being recorded; if its process "
        f"stopped first, `flowc resume {run_id}` records it): nothing to cancel"
    )


#: How long ``flowc cancel`` waits at most to learn whether its request came before the run's
#: end (the request is seen at the root's next workflow task: at most 80 % of TASK_TIMEOUT
#: later, however long an operation runs)
CANCEL_SETTLE_S = 30.0


async def _cancel_won(client: Any, run_id: str) -> bool:
    """After a cancel request: True once it is ordered before the root's claim of its end (in
    the workflow's history, or the run ended ``cancelled``), False when the claim came first.
    A request the server received while the root's workflow task ran is written to the
    history only after that task: a claim made in it comes first (temporal_engine.py
    ``claim_end``)."""
    from temporalio.client import WorkflowExecutionStatus as S

    handle = client.get_workflow_handle(run_id)
    deadline = time.monotonic() + CANCEL_SETTLE_S
    while True:
        described = await handle.describe()
        memo = await _memo(described)
        if memo.get(tc.END_MEMO):
            return False
        if described.status != S.RUNNING:
            return _status(described, memo) == "cancelled"
        if await _cancel_recorded(client, run_id):
            # the request is in the history: a claim made before it is in the memo now
            return not (await _memo(await handle.describe())).get(tc.END_MEMO)
        if time.monotonic() > deadline:
            return True
        await asyncio.sleep(0.05)


async def _cancel_recorded(client: Any, run_id: str) -> bool:
    """True when the root's recent history (its last 200 events) holds a cancel request."""
    from temporalio.api.common.v1 import WorkflowExecution
    from temporalio.api.enums.v1 import EventType
    from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest

    response = await client.workflow_service.get_workflow_execution_history_reverse(
        GetWorkflowExecutionHistoryReverseRequest(
            namespace=client.namespace,
            execution=WorkflowExecution(workflow_id=run_id),
            maximum_page_size=200,
        )
    )
    wanted = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED
    return any(e.event_type == wanted for e in response.history.events)
