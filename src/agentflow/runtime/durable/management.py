"""Durable runs managed: list, show, answer, cancel, and the recorded input of a run
(``flowc runs``, ``flowc runs show``, ``flowc answer``, ``flowc cancel``; docs/durable.md).
The management half of the durable front door (dbos-transact-py's workflow commands); the
execution half, which starts, resumes and works runs, is :mod:`.execution`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
from typing import Any, TypeGuard

from agentflow.core.vocabulary import Code
from agentflow.errors import Cancelled, InputError, RunError
from agentflow.runtime.durable import temporal_manage
from agentflow.runtime.durable.answers import (
    CANCEL,
    FINISHED,
    UNANSWERED,
    as_written,
    checked_answer,
    claim,
    claim_end,
    closed_message,
    last_claim,
    refuse_closed,
)
from agentflow.runtime.durable.database import (
    attach,
    no_runs_reason,
    on_engine,
    runs_alive,
)
from agentflow.runtime.durable.dbos_launch import (
    RUN_WORKFLOW,
    _state,
    dbos_with_workflows,
    lazy_labels,
    no_run_error,
    open_questions,
    published,
    query_item_page,
    query_items,
    recorded_input,
    waiting_questions,
)
from agentflow.runtime.durable.dbos_system import nameless_roots, query_workflows, workflow_exists
from agentflow.runtime.durable.liveness import worker_alive
from agentflow.runtime.durable.records import (
    check_readable,
    check_record,
    reading,
    root_problem,
    unreadable,
    unreadable_error,
)
from agentflow.runtime.durable.run_info import (
    Question,
    RunInfo,
    count_inference,
    ended_message,
    error_text,
    json_of,
    no_question_message,
    plan_of,
    refuse_redrive,
)
from agentflow.runtime.durable.shown import (
    Labels,
    ask_waits,
    asked_question,
    interrupted_steps,
    page,
    parse_operation,
    sleep_entry,
    stopped_step,
    unanswered_steps,
)

__all__ = [
    "answer",
    "cancel",
    "count_runs",
    "list_runs",
    "pending_questions",
    "recorded_spec",
    "run_alive",
    "show_run",
    "unanswered",
]


def _status(w: Any, alive: bool) -> str:
    if w.status == "SUCCESS":
        out = w.output if isinstance(w.output, dict) else {}
        return str(out.get("status") or "ok")
    if w.status == "ERROR":
        return "error"
    if w.status == "CANCELLED":
        return "cancelled"
    if w.status in ("PENDING", "ENQUEUED"):
        return "running" if alive else "stopped"
    return str(w.status).lower()


def run_alive(url: str, run_id: str) -> bool:
    """True when a process holds the run's lock (:func:`~.database.run_lock`: SQLite or
    PostgreSQL); always True without locks."""
    return run_id in runs_alive(url, [run_id])


#: The statuses of a run that has not ended, as ``flowc runs`` shows them.
UNFINISHED = ("running", "waiting", "stopped")
#: The engine's statuses a run of a listed status can have (a superset: the status is checked
#: again on each row): the filter of :func:`list_runs`'s query.
_ENGINE_STATUSES = {
    "running": ["PENDING", "ENQUEUED"],
    "waiting": ["PENDING", "ENQUEUED"],
    "stopped": ["PENDING", "ENQUEUED"],
    "ok": ["SUCCESS"],
    "exited": ["SUCCESS"],
    "aborted": ["SUCCESS", "CANCELLED", "ERROR"],
    "cancelled": ["SUCCESS", "CANCELLED"],
    "error": ["SUCCESS", "ERROR"],
}
#: The rows one query of :func:`list_runs` reads at most.
_PAGE = 200


@on_engine(temporal_manage)
async def list_runs(
    url: str, *, limit: int | None = 50, status: str | None = None, plan: str | None = None
) -> list[RunInfo]:
    """The latest ``limit`` durable runs in ``url`` (None: all of them), newest first, with
    pending questions (none, and nothing created, for a SQLite file that does not exist);
    ``status`` (``running``, ``waiting``, ``stopped``, ``ok``, …, or ``unfinished``: the
    first three) and ``plan`` (a part of the plan's name) keep only the runs that match,
    before the ``limit`` is counted: the query asks the engine for the runs of the engine
    statuses that can match, page by page (docs/reference/cli.md "flowc runs")."""

    if _state["url"] != url and no_runs_reason(url) is not None:
        return []
    attach(url)
    dbos = dbos_with_workflows()
    wanted = set(UNFINISHED) if status == "unfinished" else ({status} if status else None)
    engine: list[str] | None = None
    if wanted and "unreadable" not in wanted:
        engine = sorted({e for w in wanted for e in _ENGINE_STATUSES.get(w, [])}) or None
    out: list[RunInfo] = []
    if not plan and (wanted is None or "unreadable" in wanted):  # roots with no name: by hand
        for run_id, created, updated in await nameless_roots():
            why = unreadable_error(
                run_id, "its workflow name is None, not 'agentflow.run'", root=True
            )
            out.append(
                RunInfo(run_id, "unreadable", "", _seconds(created) or 0.0,
                        _seconds(updated) or 0.0, unreadable=str(why))
            )  # fmt: skip
        out = out[:limit]
    offset = 0
    while limit is None or len(out) < limit:
        size = _PAGE if wanted or plan or limit is None else max(1, min(limit, _PAGE))
        roots = await dbos.DBOS.list_workflows_async(
            name=RUN_WORKFLOW, status=engine, limit=size, offset=offset, sort_desc=True,
            load_input=True, load_output=True,
        )  # fmt: skip
        offset += len(roots)
        live = runs_alive(
            url, [w.workflow_id for w in roots if w.status in ("PENDING", "ENQUEUED")]
        )
        for w in roots:
            info = await _listed(dbos, w, w.workflow_id in live)
            if wanted is not None and info.status not in wanted:
                continue
            if plan and plan not in (info.plan or ""):
                continue
            out.append(info)
            if limit is not None and len(out) >= limit:
                break
        if len(roots) < size:
            break
    return out


@on_engine(temporal_manage)
async def count_runs(url: str) -> tuple[int, int]:
    """``(all, unfinished)``: how many durable runs ``url`` holds, and how many of them have
    not ended (running, waiting or stopped) — what ``flowc runs`` says of the runs its page
    leaves out.  ``(0, 0)`` for a SQLite file that does not exist; read from the ids alone."""
    if _state["url"] != url and no_runs_reason(url) is not None:
        return 0, 0
    attach(url)
    dbos = dbos_with_workflows()
    every = await dbos.DBOS.list_workflows_async(
        name=RUN_WORKFLOW, load_input=False, load_output=False
    )
    open_ = sum(1 for w in every if w.status in ("PENDING", "ENQUEUED"))
    return len(every), open_


async def _listed(dbos: Any, w: Any, alive: bool) -> RunInfo:
    """The RunInfo of root workflow ``w`` as ``flowc runs`` lists it."""
    # a run with a row that cannot be read is listed as such; the others as usual
    reason = unreadable(w.input, w.output, w.error)
    root = reason is None and (reason := root_problem(w)) is not None
    why: str | None = None
    if reason is None:
        info = _info(w, alive)
        if w.status in ("PENDING", "ENQUEUED"):  # its units and questions are read: checked
            family = await dbos.DBOS.list_workflows_async(workflow_id_prefix=w.workflow_id)
            family = [
                u for u in family
                if u.workflow_id == w.workflow_id or u.workflow_id.startswith(w.workflow_id + "/")
            ]  # fmt: skip
            try:
                check_readable(w.workflow_id, family, lazy_labels(w.workflow_id, [w]))
                with reading(w.workflow_id):
                    info.questions, info.answered = await open_questions(w.workflow_id, family)
            except InputError as e:
                why = str(e)
            if info.questions and info.status == "running":
                info.status = "waiting"
    if reason is not None:
        why = str(unreadable_error(w.workflow_id, reason, root=root))
    if why is not None:
        info = RunInfo(
            w.workflow_id, "unreadable", "", _seconds(w.created_at) or 0.0,
            _seconds(w.updated_at) or 0.0, unreadable=why,
        )  # fmt: skip
    return info


def _info(w: Any, alive: bool) -> RunInfo:
    spec = w.input["args"][0] if w.input and w.input.get("args") else {}
    plan_name = ""
    text = spec.get("plan_text") if isinstance(spec, dict) else None
    if isinstance(text, str):
        for line in text.splitlines():
            if line.startswith("name:"):
                plan_name = line.split(":", 1)[1].strip()
                break
    output = w.output if isinstance(w.output, dict) else {}
    if w.status == "CANCELLED" and not output:  # the engine refused its outcome: no output
        output = {
            "error": {"code": Code.ABORTED, "message": Cancelled().message, "step_path": None}
        }
    created = (w.created_at or 0) / 1000.0
    # a SQLite row's times are whole seconds (the engine's column default): the start the run's
    # process recorded (`started`) is the same moment to the millisecond
    started = spec.get("started") if isinstance(spec, dict) else None
    if _is_number(started) and abs(started - created) < 1.0:
        created = float(started)
    took = output.get("duration_ms") if output else None
    return RunInfo(
        run_id=w.workflow_id,
        status=_status(w, alive),
        plan=plan_name,
        created_at=created,
        updated_at=(w.updated_at or 0) / 1000.0,
        error=output.get("error") if output else (error_text(w.error) if w.error else None),
        output=output.get("output") if output else None,
        question=asked_question(spec),
        duration_ms=int(took) if _is_number(took) and took >= 0 else None,
    )


def _is_number(value: Any) -> TypeGuard[int | float]:
    """True for a finite int or float (not a bool)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return ok and math.isfinite(value)


@on_engine(temporal_manage)
async def show_run(
    url: str,
    run_id: str,
    *,
    internals: bool = False,
    values: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> RunInfo:
    """Run ``run_id`` in detail: its steps in the user's terms (each recorded tool call, model
    call and question: unit, step path, `.flow` label, status, start and end), the count of the
    engine's own operations left out (``internals``: listed too, marked ``internal``), the cost
    of its model calls so far, pending questions, the error, and for a ``--fleet`` run which
    worker holds which unfinished unit and whether that worker is alive.  Raises
    InputError for an unknown run, or one with a row it cannot read.  ``values``: each step
    also carries its recorded result as JSON (``value``: a tool's result, a model's reply, an
    answer), what ``flowc ui`` shows of an agent's conversation.  ``limit``/``offset``: one
    page of the steps, in start order (``steps_total`` counts them all; shown.page)."""

    attach(url, run_id)
    dbos = dbos_with_workflows()
    family = await dbos.DBOS.list_workflows_async(
        workflow_id_prefix=run_id, load_input=True, load_output=True
    )
    root = next((w for w in family if w.workflow_id == run_id), None)
    if root is None:
        raise await no_run_error(url, run_id)
    family = [
        w for w in family if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")
    ]
    check_readable(run_id, family, lazy_labels(run_id, family))
    with reading(run_id):
        return await _show_run(url, run_id, root, family, internals, values, limit, offset)


async def _show_run(
    url: str,
    run_id: str,
    root: Any,
    family: list[Any],
    internals: bool,
    values: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> RunInfo:
    dbos = dbos_with_workflows()
    info = _info(root, run_alive(url, run_id))
    spec = _spec_of(root)
    labels = Labels(plan_of(spec))
    cost: dict[str, Any] = {"inferences": 0, "input_tokens": 0, "output_tokens": 0}
    priced = 0.0
    # one-call units' records (items.py): for a page, only the first offset + limit of them in
    # start order (the page's steps are among those and the engine's steps), their count and
    # the model calls' (the cost); a 100,000-item map's page reads a page of rows, not 100,000
    items: Any = None
    if limit is not None:
        items = await query_item_page([w.workflow_id for w in family], offset + limit)
        for step in items.models:
            priced += _cost(run_id, step, cost)
    paged: dict[str, list[dict[str, Any]]] = {}
    for row in items.first if items is not None else ():
        paged.setdefault(row["workflow_id"], []).append(row)
    # each unit's engine steps, read at once (a fleet's batched map: ~100 units, one query each)
    listed = await asyncio.gather(
        *(dbos.DBOS.list_workflow_steps_async(w.workflow_id) for w in family)
    )
    for w, steps in zip(family, listed, strict=True):
        unit = w.workflow_id[len(run_id) :].lstrip("/") or "(run)"
        first = len(info.steps)  # this unit's steps start here
        engine_steps = len(steps)
        if items is None:
            steps += await query_items(w.workflow_id)
        else:
            steps += paged.get(w.workflow_id, [])
        for k, step in enumerate(steps):
            name = step["function_name"]
            error = step.get("error")
            out = step.get("output")
            check_record(run_id, step, labels.label)
            op = parse_operation(name)
            if op is None:
                info.internal += 1
                if not internals:
                    continue
            entry: dict[str, Any] = {
                "unit": unit,
                "operation": name,
                "status": "error" if error is not None else "done",
                "started_at": _seconds(step.get("started_at_epoch_ms")),
                "finished_at": _seconds(step.get("completed_at_epoch_ms")),
            }
            if op is None:
                entry["internal"] = True
            else:
                entry.update(path=op.path, kind=op.what, label=None, _op=op)
            if error is not None:
                entry["error"] = error_text(error, op)
            value = out.get("v") if isinstance(out, dict) else None
            if items is None or k < engine_steps:  # a page's item records: counted above
                priced += _cost(run_id, step, cost)
            if isinstance(out, dict) and out.get("reused"):
                entry["reused"] = True
            if items is not None and (w.workflow_id, name) in items.later:
                entry["_later"] = True  # made again past the page (shown.page marks it)
            if op is not None and op.kind == "sleep":
                sleep_entry(entry, value, info.status, info.updated_at)
            if values and op is not None and value is not None:
                entry["value"] = json_of(value)
            info.steps.append(entry)
        if any(s["function_name"] == "DBOS.setEvent" for s in steps):
            asked = await published(w.workflow_id)  # the questions it asked
            ask_waits(info.steps[first:], asked)
            # a unit that ended while it waited on a question: the question was stopped
            ended = None if w.status in ("PENDING", "ENQUEUED") else _seconds(w.updated_at)
            info.steps.extend(unanswered_steps(asked, unit, labels, ended or None, info.error))
    if info.status == "aborted" and info.question is not None:  # a question's stopped calls
        info.steps.extend(interrupted_steps(root.output, "(run)"))
    if root.status not in ("PENDING", "ENQUEUED"):  # the step its error cut off, if any
        info.steps.extend(stopped_step(info.error, info.steps, labels, _seconds(root.updated_at)))
    # in the order they started, across units (map items, branches); stable: record order
    info.steps.sort(key=lambda e: e["started_at"] or float("inf"))
    info.updated_at = await _last_change(info, family)
    if priced:
        cost["cost"] = round(priced, 10)
    info.cost = cost
    if root.status in ("PENDING", "ENQUEUED"):
        info.questions, info.answered = await open_questions(run_id, family)
        if info.questions and info.status == "running":
            info.status = "waiting"
        if isinstance(spec, dict) and spec.get("fleet"):
            info.workers = await _holders(url, run_id, family)
    page(info, limit, offset, labels)
    if items is not None:  # the item records not read
        info.steps_total += items.total - len(items.first)
    return info


async def _last_change(info: RunInfo, family: list[Any]) -> float:
    """When run ``info`` last changed (epoch s): the latest of its units' own updates, its
    steps' ends and its questions' answers (an answer given while the run waits on changes
    nothing of the engine's own rows but the unit's mailbox)."""
    times = [info.updated_at, *((_seconds(w.updated_at) or 0.0) for w in family)]
    times += [s["finished_at"] for s in info.steps if s.get("finished_at")]
    answered = await last_claim([w.workflow_id for w in family])
    if answered is not None:
        times.append(answered)
    return max(times)


def _cost(run_id: str, step: dict[str, Any], cost: dict[str, Any]) -> float:
    """Count recorded operation ``step`` in ``cost`` when it is a model call that was made
    (not reused): its inference and tokens; returns its price (0.0 when unknown)."""
    out = step.get("output")
    if "/model:" not in step["function_name"] or not isinstance(out, dict) or out.get("reused"):
        return 0.0
    reason = unreadable(out, step.get("error"))
    if reason is not None:
        raise unreadable_error(run_id, reason)
    value = out.get("v")
    if value is None:
        return 0.0
    return count_inference(cost, value)


def _seconds(epoch_ms: Any) -> float | None:
    ok = isinstance(epoch_ms, int | float) and not isinstance(epoch_ms, bool)
    return epoch_ms / 1000.0 if ok and epoch_ms and math.isfinite(epoch_ms) else None


def _spec_of(w: Any) -> dict[str, Any]:
    """The recorded input (``run_durable``'s spec) of a run's root workflow ``w``."""
    args = w.input.get("args") if isinstance(w.input, dict) else None
    return args[0] if args and isinstance(args[0], dict) else {}


async def _holders(url: str, run_id: str, family: list[Any]) -> list[dict[str, Any]]:
    """Who holds the unfinished units of fleet run ``run_id``: one entry per executor (a
    worker ``worker:NAME`` — with ``alive`` from its liveness lock — or the run's own
    process), plus ``queued`` for units no worker has taken yet."""

    held: dict[str, list[str]] = {}
    queued: list[str] = []
    for w in family:
        if w.workflow_id == run_id:
            continue
        unit = w.workflow_id[len(run_id) + 1 :]
        if w.status == "ENQUEUED":
            queued.append(unit)
        elif w.status == "PENDING":
            held.setdefault(str(w.executor_id or ""), []).append(unit)
    out: list[dict[str, Any]] = []
    for executor, units in sorted(held.items()):
        entry: dict[str, Any] = {"executor": executor, "units": sorted(units)}
        if executor.startswith("worker:"):
            name = executor[len("worker:") :]
            entry["worker"] = name
            entry["alive"] = await asyncio.to_thread(worker_alive, url, name)
        out.append(entry)
    if queued:
        out.append({"executor": None, "queued": True, "units": sorted(queued)})
    return out


@on_engine(temporal_manage)
async def answer(url: str, run_id: str, step: str, value: Any) -> Question:
    """Answer the question of run ``run_id`` at step path ``step`` with ``value`` (checked
    against the question's choices and schema), from any process; returns the question with
    the value taken (``closed="answer"``, ``answer``).  Raises InputError for no such question
    (:func:`_close`) or a value it does not accept."""

    return await _close(url, run_id, step, value, answering=True)


async def _close(url: str, run_id: str, step: str, value: Any, *, answering: bool) -> Question:
    """Close the question of run ``run_id`` at ``step``: answer it with ``value``
    (``answering``), else leave it unanswered.  Both refuse alike, as on Temporal
    (temporal_manage ``_message``): an unknown run (``no durable run``), a question closed
    already (``was already answered``), a run that has ended (``has ended (STATUS)``), and
    else no such question waiting (the ones that do)."""

    attach(url, run_id)
    dbos = dbos_with_workflows()
    family = await dbos.DBOS.list_workflows_async(workflow_id_prefix=run_id)
    family = [
        w for w in family if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")
    ]
    if not family:
        raise await no_run_error(url, run_id)
    check_readable(run_id, family, lazy_labels(run_id, family))
    with reading(run_id):
        pending = await waiting_questions(run_id, family)
        question = next((q for q in pending if q.path == step), None)
        if question is None:
            await refuse_closed(run_id, [w.workflow_id for w in family], step)
            root = next((w for w in family if w.workflow_id == run_id), None)
            if root is not None and root.status not in ("PENDING", "ENQUEUED"):
                # a run that ended waits on nothing: say that, not "waiting: none"
                raise InputError(ended_message(run_id, _status(root, False), as_written(step)))
            raise InputError(no_question_message(run_id, step, pending))

        message: Any = {"answer": checked_answer(question, value)} if answering else UNANSWERED
        closed = await claim(question.workflow_id, question.key, message, topic=f"answer:{step}")
    if not closed.accepted:
        raise InputError(closed_message(run_id, step, closed))
    if answering:  # the value taken, as checked (a choice by its number: the choice)
        return dataclasses.replace(question, closed="answer", answer=message["answer"])
    return question


@on_engine(temporal_manage)
async def pending_questions(url: str, run_id: str) -> list[Question]:
    """The questions run ``run_id`` (and its child units) waits on now; none for a run that
    ended or does not exist."""

    if _state["url"] != url and no_runs_reason(url) is not None:
        return []
    attach(url)
    family = await dbos_with_workflows().DBOS.list_workflows_async(workflow_id_prefix=run_id)
    family = [
        w for w in family if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")
    ]
    check_readable(run_id, family, lazy_labels(run_id, family))
    with reading(run_id):
        return await waiting_questions(run_id, family)


@on_engine(temporal_manage)
async def unanswered(url: str, run_id: str, step: str) -> Question:
    """Leave the question of run ``run_id`` at step path ``step`` unanswered: the ``ask``
    goes on as after its timeout (``when_unanswered`` decides).  Raises InputError for no such
    question, refused as an answer is (:func:`_close`)."""

    return await _close(url, run_id, step, None, answering=False)


@on_engine(temporal_manage)
async def cancel(url: str, run_id: str) -> None:
    """Cancel run ``run_id`` and its child units (each stops at its next operation). Raises
    InputError for an unknown run, and for one that has already ended (``ok``, ``error``,
    ``cancelled`` …), which cancelling would not change."""

    attach(url, run_id)
    dbos = dbos_with_workflows()
    family = await dbos.DBOS.list_workflows_async(workflow_id_prefix=run_id)
    ids = [w.workflow_id for w in family
           if w.workflow_id == run_id or w.workflow_id.startswith(run_id + "/")]  # fmt: skip
    if run_id not in ids:
        raise await no_run_error(url, run_id)
    root = next(w for w in family if w.workflow_id == run_id)
    # a run whose row is damaged may still be ended; one that has not a run's status, not
    reason = root_problem(root)
    if reason is not None and root.status not in ("PENDING", "ENQUEUED"):
        raise unreadable_error(run_id, reason, root=True)
    if root.status not in ("PENDING", "ENQUEUED"):
        raise InputError(
            f"run {run_id} has already ended ({_status(root, False)}): nothing to cancel"
        )
    # the run's end is claimed once (answers.claim_end): a root that finished first keeps its
    # outcome, and this cancel is refused; else the root, wherever it is, ends `cancelled`
    if await claim_end(run_id, CANCEL) == FINISHED:
        raise InputError(
            f"run {run_id} has already finished (its outcome is being recorded; if its process "
            f"stopped first, `flowc resume {run_id}` records it): nothing to cancel"
        )
    for wfid in ids:
        with contextlib.suppress(Exception):
            await dbos.DBOS.cancel_workflow_async(wfid)


@on_engine(temporal_manage)
async def recorded_spec(url: str, run_id: str, *, redrive: bool = False) -> dict[str, Any]:
    """The recorded input of run ``run_id`` (plan text, input, configuration path, …).
    ``redrive``: for ``flowc redrive``, which runs a run that did not succeed again: raises
    InputError for a run that ended ``ok`` or ``exited`` (``flowc run --reuse`` runs it again)
    and for one that has not ended, ``running`` or ``stopped`` (``flowc resume`` continues it;
    ``flowc cancel`` ends it, after which it may be redriven)."""

    attach(url, run_id)
    if not await workflow_exists(run_id):
        raise await no_run_error(url, run_id)
    try:
        spec = await recorded_input(run_id)
    except RunError as e:
        raise InputError(e.message) from None
    if redrive:
        found = await query_workflows(workflow_ids=[run_id], load_input=False)
        status = _status(found[0], run_alive(url, run_id)) if found else None
        refuse_redrive(run_id, spec, status)
    return spec
