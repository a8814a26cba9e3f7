"""Exactly one answer per question of a durable run (docs/durable.md "Questions").

A question (an ``ask`` of a run's unit) is closed by the first of: an answer (``flowc answer``,
``agentflow.answer_run``, an MCP elicitation reply), a "leave it unanswered" (``flowc serve``),
or its timeout passing in the unit that asked.  Each of them *claims* the question: a row
``(unit, question)`` of the table ``agentflow_answers`` in the run's database, whose primary
key makes the claim atomic on SQLite and PostgreSQL alike (``INSERT … ON CONFLICT DO
NOTHING``: one insert takes the row, every other inserts nothing).  An answer's claim and the
engine's message that wakes the waiting unit (DBOS ``send``, in a caller-owned transaction:
``SystemDatabase.send_bulk_with_connection``) commit in one transaction, so an accepted answer
is always delivered and a refused one never is; a timeout's claim makes a late answer refused
rather than dropped.  The row keeps what was accepted, which the loser is told.

The question's key is its operation name (``E2/ask#1``; published with the question) so the
same step asked again later is a new question.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import math
import time
import weakref
from dataclasses import dataclass
from typing import Any

from agentflow.core.redaction import redact_data
from agentflow.errors import InputError
from agentflow.runtime.durable.dbos_system import dbos_module, system_database
from agentflow.runtime.durable.records import (
    ForeignRecord,
    JsonRecords,
    UnreadableRecord,
    message_problem,
)
from agentflow.runtime.hooks import checked_answer  # engine-neutral: a plain run's --answer too

__all__ = [
    "CANCEL",
    "as_written",
    "END_KEY",
    "FINISHED",
    "Claim",
    "claim_end",
    "claims_table",
    "end_claim_in",
    "check_messages",
    "checked_answer",
    "claim",
    "claimed",
    "claims",
    "closed_message",
    "written_as",
    "question_key",
    "refuse_closed",
]

#: How a message is read (records.py): the serializer agentflow gives DBOS.
_SERIALIZER = JsonRecords()
#: The table of claims (created on first use, in the database of the run).
TABLE = "agentflow_answers"
#: What a claim that left the question unanswered stores.
UNANSWERED = "unanswered"

#: the engines whose database has the table (DBOS makes one engine per launch)
_made: weakref.WeakSet[Any] = weakref.WeakSet()


@dataclass(frozen=True)
class Claim:
    """The claim that closed a question: ``accepted`` (this call took it), ``kind``
    (``answer`` or ``unanswered``), the accepted ``value`` (an answer's) and when (epoch s)."""

    accepted: bool
    kind: str
    value: Any = None
    at: float | None = None


#: The key of the claim row that closes a run (its ``question``): taken by the run's root as it
#: finishes (:data:`FINISHED`) or by ``flowc cancel`` (:data:`CANCEL`), whichever comes first
#: (docs/durable.md "A cancel that comes late"); no question has this key.
END_KEY = "@end"
FINISHED = "finished"
CANCEL = "cancel"


def question_key(question: dict[str, Any]) -> str:
    """The key of a published question: its operation name (``PATH/ask#N``), else (a question
    published before operation names were) its step path."""
    return str(question.get("operation") or question.get("path") or "")


def _ensure_table(engine: Any) -> None:
    import sqlalchemy as sa

    if engine in _made:
        return
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":  # two processes making it at once
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext('agentflow_answers'))"))
        conn.execute(
            sa.text(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (workflow_id TEXT NOT NULL, "
                "question TEXT NOT NULL, kind TEXT NOT NULL, value TEXT, "
                "claimed_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (workflow_id, question))"
            )
        )
    _made.add(engine)


def _read(conn: Any, workflow_id: str, key: str) -> Claim | None:
    import sqlalchemy as sa

    row = conn.execute(
        sa.text(
            f"SELECT kind, value, claimed_at FROM {TABLE} WHERE workflow_id = :w AND question = :q"
        ),
        {"w": workflow_id, "q": key},
    ).first()
    if row is None:
        return None
    return claim_of(key, row[0], row[1], row[2])


#: The kinds of claim rows (:data:`UNANSWERED`, an answer; a run's end: FINISHED, CANCEL).
_KINDS = ("answer", UNANSWERED, "finished", "cancel")


def claim_of(key: Any, kind: Any, value: Any, at: Any) -> Claim:
    """The :class:`Claim` a row of :data:`TABLE` holds (``question``, ``kind``, ``value``,
    ``claimed_at``), read without trusting it: raises
    :class:`~agentflow.runtime.durable.records.UnreadableRecord` for a value that is not JSON
    and :class:`~agentflow.runtime.durable.records.ForeignRecord` for a row of another shape
    than a claim (an unknown kind, a time that is not one, an answer that is too deep) —
    the commands say the run cannot be read (docs/durable.md "The database")."""
    where = f"the claim of question {str(key)!r:.80}"
    if kind not in _KINDS:
        raise ForeignRecord(f"{where} has a kind {kind!r:.40} that is not one")
    if type(at) not in (int, float) or not math.isfinite(at):
        raise ForeignRecord(f"{where} has a time {at!r:.40} that is not one")
    if value is None:
        return Claim(False, kind, None, float(at))
    if not isinstance(value, str):
        raise ForeignRecord(f"{where} has an answer that is not JSON text")
    try:
        loaded = json.loads(value)
    except (ValueError, RecursionError):
        raise UnreadableRecord(f"{where} has an answer that is not JSON") from None
    return Claim(False, kind, loaded, float(at))


def _claim(workflow_id: str, key: str, message: Any, topic: str | None) -> Claim:
    import sqlalchemy as sa
    from dbos._sys_db import SendMessage

    sys_db = system_database()
    engine = sys_db.engine
    _ensure_table(engine)
    kind = UNANSWERED if message == UNANSWERED else "answer"
    value = message.get("answer") if isinstance(message, dict) else None
    now = time.time()
    with engine.begin() as conn:
        # the first statement writes: SQLite takes its write lock here (BEGIN IMMEDIATE), and
        # PostgreSQL's unique index makes a concurrent insert of the same key wait, then do nothing
        taken = conn.execute(
            sa.text(
                f"INSERT INTO {TABLE} (workflow_id, question, kind, value, claimed_at) "
                "VALUES (:w, :q, :k, :v, :t) ON CONFLICT (workflow_id, question) DO NOTHING"
            ),
            {
                "w": workflow_id,
                "q": key,
                "k": kind,
                "v": json.dumps(redact_data(value), ensure_ascii=False)
                if kind == "answer"
                else None,  # no secret at rest (records.py)
                "t": now,
            },
        ).rowcount
        if taken != 1:
            found = _read(conn, workflow_id, key)
            # the insert met the row, in this transaction: it is there to read
            assert found is not None, f"claim of {workflow_id} {key} conflicted but is not stored"
            return found
        if topic is not None:  # in the same transaction: delivered exactly when accepted
            sys_db.send_bulk_with_connection(
                [SendMessage(workflow_id, message, topic)],
                conn,
                serialization_type=None,
                function_name="DBOS.send",
                send_to_forks=False,
            )
    return Claim(True, kind, value, now)


async def claim(workflow_id: str, key: str, message: Any, topic: str | None = None) -> Claim:
    """Close question ``key`` of unit ``workflow_id`` with ``message`` (``{"answer": V}`` or
    ``"unanswered"``) unless it is closed already; with ``topic``, the message is sent to the
    unit in the same transaction.  Returns the claim that closed it: ``accepted`` is True when
    this call did (the engine must run in this process: runs.open_database)."""

    await dbos_module().DBOS._configure_asyncio_thread_pool()
    return await asyncio.to_thread(_claim, workflow_id, key, message, topic)


def _claim_end(run_id: str, kind: str) -> str:
    engine = system_database().engine
    _ensure_table(engine)
    with engine.begin() as conn:
        return end_claim_in(conn, run_id, kind)


def claims_table(engine: Any) -> None:
    """Make the claims table in ``engine``'s database unless this process made it already
    (before a transaction that claims in it: :func:`end_claim_in`)."""
    _ensure_table(engine)


@functools.cache
def _end_claim_insert() -> Any:
    """The end claim's INSERT, made once (a run's last transaction: issue 35)."""
    import sqlalchemy as sa

    return sa.text(
        f"INSERT INTO {TABLE} (workflow_id, question, kind, value, claimed_at) "
        "VALUES (:w, :q, :k, NULL, :t) ON CONFLICT (workflow_id, question) DO NOTHING"
    )


def end_claim_in(conn: Any, run_id: str, kind: str) -> str:
    """:func:`claim_end`'s claim made in the caller's transaction ``conn`` (the table exists:
    :func:`claims_table`), so it commits with what else the caller writes there — a root's
    last records (items.py ``commit_with``): one transaction, not two, as a run ends."""
    taken = conn.execute(
        _end_claim_insert(), {"w": run_id, "q": END_KEY, "k": kind, "t": time.time()}
    ).rowcount
    if taken == 1:
        return kind
    found = _read(conn, run_id, END_KEY)
    assert found is not None, f"end claim of {run_id} conflicted but is not stored"
    return found.kind


async def claim_end(run_id: str, kind: str) -> str:
    """Claim the end of run ``run_id`` for ``kind`` (:data:`FINISHED`: its root, as it ends;
    :data:`CANCEL`: ``flowc cancel``) unless it is claimed already; returns the kind that holds
    the claim — the first to come, atomically on SQLite and PostgreSQL alike, as a question's
    claim.  So a cancel and the root's end are ordered once: the root that finds
    :data:`CANCEL` ends ``cancelled`` (no output), and a cancel that finds :data:`FINISHED` is
    refused (the run's outcome is being recorded), and every account of the run agrees."""

    await dbos_module().DBOS._configure_asyncio_thread_pool()
    return await asyncio.to_thread(_claim_end, run_id, kind)


def _claim_rows(workflow_ids: list[str]) -> list[Any]:
    """The claim rows ``(workflow_id, question, kind, value, claimed_at)`` of the units
    ``workflow_ids``, latest first."""
    import sqlalchemy as sa

    engine = system_database().engine
    _ensure_table(engine)
    with engine.connect() as conn:
        return list(
            conn.execute(
                sa.text(
                    f"SELECT workflow_id, question, kind, value, claimed_at FROM {TABLE} "
                    "WHERE workflow_id IN :ws ORDER BY claimed_at DESC"
                ).bindparams(sa.bindparam("ws", expanding=True)),
                {"ws": workflow_ids},
            ).all()
        )


def _claimed(workflow_ids: list[str], path: str) -> tuple[str, Claim] | None:
    for wfid, key, kind, value, at in _claim_rows(workflow_ids):
        if key == path or str(key).rsplit("#", 1)[0] == f"{path}/ask":
            return str(wfid), claim_of(key, kind, value, at)
    return None


async def claimed(workflow_ids: list[str], path: str) -> tuple[str, Claim] | None:
    """The latest claim that closed a question at step path ``path`` in one of the units
    ``workflow_ids`` (``(unit, claim)``), or None."""

    if not workflow_ids:
        return None
    await dbos_module().DBOS._configure_asyncio_thread_pool()
    return await asyncio.to_thread(_claimed, workflow_ids, path)


def _claims(workflow_ids: list[str]) -> dict[tuple[str, str], Claim]:
    rows = _claim_rows(workflow_ids)
    return {
        (str(wfid), str(key)): claim_of(key, kind, value, at) for wfid, key, kind, value, at in rows
    }


async def claims(workflow_ids: list[str]) -> dict[tuple[str, str], Claim]:
    """Every claim that closed a question of the units ``workflow_ids``, by ``(unit, question
    key)``: what ``flowc runs`` shows of a question answered while its run is stopped (its
    unit takes the answer when it goes on: the question is answered, not waiting)."""

    if not workflow_ids:
        return {}
    await dbos_module().DBOS._configure_asyncio_thread_pool()
    return await asyncio.to_thread(_claims, workflow_ids)


#: step path → the name ``flowc answer RUN NAME`` was given for it (``decision``, the ``let``
#: of its ask), for the messages of this answer: they name the question as the user did, never
#: by its compiled step path (``E0``) alone (set by ``api_durable.answer_durable``)
written_as: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "written_as", default=None
)


def as_written(step: str) -> str:
    """How the question at step path ``step`` is named in this answer's messages: as the user
    named it (:data:`written_as`: ``decision``), else by its path."""
    return (written_as.get() or {}).get(step, step)


def closed_message(run_id: str, step: str, closed: Claim) -> str:
    """What the loser of a race for the question of ``run_id`` at ``step`` is told (the
    question named as the user named it: :data:`written_as`)."""
    name = (written_as.get() or {}).get(step)
    where = (
        f"the question `{name}` of run {run_id}"
        if name
        else (f"the question of run {run_id} at {step!r}")
    )
    if closed.kind == "answer":
        shown = json.dumps(closed.value, ensure_ascii=False)
        return f"{where} was already answered ({shown}): this answer was not taken"
    return f"{where} was already closed unanswered (its wait ended): this answer was not taken"


async def refuse_closed(run_id: str, workflow_ids: list[str], step: str) -> None:
    """Raise InputError (:func:`closed_message`) when a question of ``run_id`` at ``step`` in
    one of its units ``workflow_ids`` was closed already (answered, or its wait ended)."""

    found = await claimed(workflow_ids, step)
    if found is not None:
        raise InputError(closed_message(run_id, step, found[1]))


def _check_messages(workflow_ids: list[str]) -> None:
    """Raise UnreadableRecord (ForeignRecord) for a message not yet taken by one of the units
    ``workflow_ids`` that is not agentflow's JSON, or not an answer (records.message_problem):
    what the unit would take when it goes on."""
    import sqlalchemy as sa

    sys_db = system_database()
    table = sys_db.tables.notifications
    with sys_db.engine.connect() as conn:
        rows = conn.execute(
            sa.select(table.c.topic, table.c.message, table.c.serialization).where(
                table.c.destination_uuid.in_(workflow_ids), table.c.consumed.is_(False)
            )
        ).all()
    for topic, message, serialization in rows:
        where = f"the message {str(topic)!r:.80}"
        if serialization == "py_pickle":
            raise UnreadableRecord(
                f"{where} is a pickle, which is never loaded: loading one runs code"
            )
        if serialization not in (None, _SERIALIZER.name()):
            raise ForeignRecord(
                f"{where} is stored as {serialization!r:.40}, which agentflow never writes"
            )
        value = _SERIALIZER.deserialize(message)
        if (problem := message_problem(value)) is not None:
            raise ForeignRecord(f"{where} is {problem}")


async def check_messages(workflow_ids: list[str]) -> None:
    """:func:`_check_messages` off the event loop (a resume checks them before it goes on)."""
    if not workflow_ids:
        return
    await dbos_module().DBOS._configure_asyncio_thread_pool()
    await asyncio.to_thread(_check_messages, workflow_ids)


def _last_claim(workflow_ids: list[str]) -> float | None:
    import sqlalchemy as sa

    engine = system_database().engine
    _ensure_table(engine)
    with engine.connect() as conn:
        at = conn.execute(
            sa.text(f"SELECT MAX(claimed_at) FROM {TABLE} WHERE workflow_id IN :ws").bindparams(
                sa.bindparam("ws", expanding=True)
            ),
            {"ws": workflow_ids},
        ).scalar()
    if at is None:
        return None
    if type(at) not in (int, float) or not math.isfinite(at):
        raise ForeignRecord(f"a claim of a question has a time {at!r:.40} that is not one")
    return float(at)


async def last_claim(workflow_ids: list[str]) -> float | None:
    """When the latest claim closing a question of the units ``workflow_ids`` was made (epoch
    s: an answer given, or a wait closed unanswered), or None: an answer is a change of the run
    (``flowc runs show``'s ``last change``) even while the run waits on."""

    if not workflow_ids:
        return None
    await dbos_module().DBOS._configure_asyncio_thread_pool()
    return await asyncio.to_thread(_last_claim, workflow_ids)
