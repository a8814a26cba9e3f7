"""A model's fleet-wide rate limit, held in the durable database (``[models.named.X] rate_limit``,
requests per second; docs/durable.md).

Every request of a rate-limited model takes a *slot* first: a row ``(model, granted, ended)`` in
the table ``agentflow_rate_slots`` of the run's database, written under a lock (PostgreSQL: an
advisory transaction lock per model; SQLite: the database's write lock), with the database's
clock.  A slot is granted at time ``t`` only while fewer than ``limit`` slots of the model are
in flight or ended after ``t - period``; the request is sent after the grant and its slot ends
after the response arrived.  So of any ``limit + 1`` requests, one ended at least ``period``
before the last of them was sent: no window of ``period`` seconds ever holds more than ``limit``
requests, however late a busy worker sends a granted request (a queue's limiter, which spaces
the *starts* of work, cannot promise that).

A slot whose process died stays "in flight" for :data:`STALE_S` seconds, then no longer counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

from agentflow.runtime.durable.dbos_system import sqlite_engine

__all__ = ["STALE_S", "holds", "rate_slot", "rate_window"]

#: Seconds after which a slot that never ended (its process died) no longer counts.
STALE_S = 300.0
#: Seconds between two tries for a slot while the window is full.
POLL_S = 0.05

_engines: dict[str, Any] = {}
_lock = threading.Lock()


def rate_window(rate_limit: float) -> tuple[int, float]:
    """``(limit, period)`` of ``rate_limit`` requests per second: whole requests per window of at
    least one second (``0.5`` → one request per 2 s; ``5`` → five per second)."""
    period = max(1.0, 1.0 / rate_limit)
    return max(1, int(rate_limit * period)), period


def holds(url: str) -> bool:
    """True when this process has database ``url`` open for rate-limit slots (its engine lives
    as long as the process)."""
    return url in _engines


def _engine(url: str) -> Any:
    """A SQLAlchemy engine for ``url`` with the slots table created (one per URL)."""
    with _lock:
        found = _engines.get(url)
        if found is not None:
            return found
        import sqlalchemy as sa

        if url.startswith("sqlite:"):
            engine = sqlite_engine(url)
        else:
            if url.startswith("postgresql://"):
                url_ = "postgresql+psycopg://" + url[len("postgresql://") :]
            else:
                url_ = url
            engine = sa.create_engine(url_, pool_size=2, max_overflow=8)
        with engine.begin() as conn:
            if engine.dialect.name == "postgresql":
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext('agentflow_rate'))"))
                key = "id BIGSERIAL PRIMARY KEY"
            else:
                key = "id INTEGER PRIMARY KEY AUTOINCREMENT"
            conn.execute(
                sa.text(
                    f"CREATE TABLE IF NOT EXISTS agentflow_rate_slots ({key}, "
                    "model TEXT NOT NULL, granted DOUBLE PRECISION NOT NULL, "
                    "ended DOUBLE PRECISION)"
                )
            )
        _engines[url] = engine
        return engine


def _try_grant(url: str, model: str, limit: int, period: float) -> int | None:
    """One try: the id of a new slot, or None while the window is full."""
    import sqlalchemy as sa

    engine = _engine(url)
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext(:m))"), {"m": model})
            now = float(
                conn.execute(sa.text("SELECT extract(epoch from clock_timestamp())")).scalar_one()
            )
        else:
            now = time.time()
        # the first statement writes, so SQLite takes its write lock here (BEGIN IMMEDIATE)
        conn.execute(
            sa.text(
                "DELETE FROM agentflow_rate_slots WHERE model = :m AND "
                "(ended < :old OR (ended IS NULL AND granted < :stale))"
            ),
            {"m": model, "old": now - period - 60.0, "stale": now - STALE_S},
        )
        busy = conn.execute(
            sa.text(
                "SELECT count(*) FROM agentflow_rate_slots WHERE model = :m AND "
                "((ended IS NULL AND granted >= :stale) OR ended > :since)"
            ),
            {"m": model, "stale": now - STALE_S, "since": now - period},
        ).scalar_one()
        if busy >= limit:
            return None
        return int(
            conn.execute(
                sa.text(
                    "INSERT INTO agentflow_rate_slots (model, granted) VALUES (:m, :now) "
                    "RETURNING id"
                ),
                {"m": model, "now": now},
            ).scalar_one()
        )


def _end(url: str, slot: int) -> None:
    import sqlalchemy as sa

    engine = _engine(url)
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            now_sql = "extract(epoch from clock_timestamp())"
            conn.execute(
                sa.text(f"UPDATE agentflow_rate_slots SET ended = {now_sql} WHERE id = :id"),
                {"id": slot},
            )
        else:
            conn.execute(
                sa.text("UPDATE agentflow_rate_slots SET ended = :now WHERE id = :id"),
                {"id": slot, "now": time.time()},
            )


@contextlib.asynccontextmanager
async def rate_slot(url: str, model: str, rate_limit: float) -> AsyncIterator[None]:
    """Hold a slot of ``model`` (``rate_limit`` requests per second across every process on
    database ``url``) while the body sends one request; waits while the window is full."""
    limit, period = rate_window(rate_limit)
    while True:
        slot = await asyncio.to_thread(_try_grant, url, model, limit, period)
        if slot is not None:
            break
        await asyncio.sleep(POLL_S)
    try:
        yield
    finally:
        await asyncio.shield(asyncio.to_thread(_end, url, slot))
