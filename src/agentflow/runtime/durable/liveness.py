"""Which workers of a fleet are alive, and getting a dead one's units run by the others
(docs/durable.md "When a worker dies").

The engine (DBOS 3.4, without its hosted Conductor) records which executor holds a unit
(``worker:NAME``) but not whether that executor still lives.  So each ``flowc worker --name
NAME`` holds a lock named for it for as long as its process lives, and the operating system or
the database server releases it however the process dies:

- on PostgreSQL, a session-level advisory lock (``pg_try_advisory_lock``) on a connection of
  its own: the server drops it when the connection ends (a SIGKILLed process's socket closes);
- on SQLite, an ``flock`` on ``locks/worker-NAME.lock`` beside the database file.

A process waiting on a fleet run (the run's own process, ``flowc resume``) looks at the
executors holding the run's unfinished units (:func:`watch_run`); for one whose lock is free —
its worker is gone — it asks the engine to recover that executor's pending work
(``DBOS._recover_pending_workflows``: each still-PENDING workflow of that executor goes back on
its queue, once, and a live worker of the fleet takes it).  Nothing is recovered while the
worker lives, so a unit never runs in two live workers at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from agentflow.errors import FlowError, InputError, RunAborted, RunError
from agentflow.runtime.durable.dbos_system import dbos_module, query_workflows
from agentflow.runtime.durable.run_info import untaken_message

__all__ = [
    "WATCH_S",
    "gone_workers",
    "stop_on_untaken",
    "taken_up",
    "worker_alive",
    "worker_lock",
    "watch_run",
]

_T = TypeVar("_T")

#: Seconds between two looks at the executors holding a waited-on run's units.
WATCH_S = 1.0
#: Seconds a starting worker waits for its name's lock (its killed predecessor's connection
#: may take a moment to end on the database server).
TAKE_S = 10.0

log = logging.getLogger("agentflow.durable")


def _key(name: str) -> int:
    """The advisory lock key of worker ``name``: a signed 64-bit hash."""
    digest = hashlib.blake2b(f"agentflow worker {name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _pg_dsn(url: str) -> str:
    """The libpq form of a SQLAlchemy PostgreSQL URL."""
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix) :]
    return url


def _lock_file(url: str, name: str) -> Path:
    db = Path(url[len("sqlite:///") :].split("?", 1)[0])
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return db.parent / "locks" / f"worker-{safe}.lock"


def _try_flock(path: Path) -> Any:
    """An open file holding an exclusive ``flock`` on ``path``, or None when it is held."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fh = path.open("a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        return None
    return fh


@contextlib.contextmanager
def worker_lock(url: str, name: str, *, wait_s: float = TAKE_S) -> Iterator[None]:
    """Hold worker ``name``'s lock on database ``url`` (a SQLAlchemy URL) while the block runs.
    Waits up to ``wait_s`` seconds for it; raises InputError when a live worker of that name
    holds it."""
    deadline = time.monotonic() + float(os.environ.get("AGENTFLOW_WORKER_WAIT_S", wait_s))
    if url.startswith("sqlite:///"):
        path = _lock_file(url, name)
        while (fh := _try_flock(path)) is None:
            if time.monotonic() >= deadline:
                raise InputError(_taken(name))
            time.sleep(0.1)
        try:
            yield
        finally:
            fh.close()
        return
    import psycopg

    conn = psycopg.connect(_pg_dsn(url), autocommit=True)
    try:
        # a worker whose machine vanishes (no FIN) frees its name within ~25 s, not the
        # kernel's default two hours of TCP keepalive
        for setting, value in (("idle", 10), ("interval", 5), ("count", 3)):
            conn.execute(f"SET tcp_keepalives_{setting} = {value}")
        while not _pg_try(conn, name):
            if time.monotonic() >= deadline:
                raise InputError(_taken(name))
            time.sleep(0.1)
        yield
    finally:
        conn.close()  # the server releases the lock with the session


def _taken(name: str) -> str:
    return (
        f"a worker named {name!r} is already running on this database (two workers under one "
        "name would take each other's units): give this one another --name"
    )


def _pg_try(conn: Any, name: str) -> bool:
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (_key(name),)).fetchone()
    return bool(row and row[0])


def worker_alive(url: str, name: str) -> bool:
    """True when a process holds worker ``name``'s lock on ``url`` (the worker lives).  The
    lock is taken and released at once when it is free."""
    if url.startswith("sqlite:///"):
        fh = _try_flock(_lock_file(url, name))
        if fh is None:
            return True
        fh.close()
        return False
    import psycopg

    with psycopg.connect(_pg_dsn(url), autocommit=True) as conn:
        if not _pg_try(conn, name):
            return True
        conn.execute("SELECT pg_advisory_unlock(%s)", (_key(name),))
        return False


async def gone_workers(url: str, run_id: str) -> dict[str, list[str]]:
    """``{worker name: [unit ids]}``: the unfinished units of run ``run_id`` (and the run
    itself) held by a worker whose process is gone."""
    pending = await query_workflows(
        workflow_id_prefix=run_id, status=["PENDING"], load_input=False, load_output=False
    )
    held: dict[str, list[str]] = {}
    for w in pending:
        if w.workflow_id != run_id and not w.workflow_id.startswith(run_id + "/"):
            continue
        executor = str(w.executor_id or "")
        if executor.startswith("worker:"):
            held.setdefault(executor[len("worker:") :], []).append(w.workflow_id)
    gone = {}
    for name, units in held.items():
        if not await asyncio.to_thread(worker_alive, url, name):
            gone[name] = sorted(units)
    return gone


async def recover(names: list[str]) -> None:
    """Put the pending work of the workers ``names`` back on its queues (DBOS recovery: only
    workflows still PENDING under those executors are touched, each once)."""
    executors = [f"worker:{n}" for n in names]
    await asyncio.to_thread(dbos_module().DBOS._recover_pending_workflows, executors)


async def watch_run(url: str, run_id: str, *, every: float = WATCH_S) -> None:
    """Until cancelled, every ``every`` seconds: recover the units of run ``run_id`` whose
    worker is gone, and say so (a warning of logger ``agentflow.durable``: on stderr)."""
    while True:
        await asyncio.sleep(every)
        try:
            gone = await gone_workers(url, run_id)
        except Exception as e:  # noqa: BLE001 - a database hiccup: look again next time
            log.debug("looking for gone workers of %s failed: %s", run_id, e)
            continue
        if not gone:
            continue
        await recover(sorted(gone))
        for name, units in sorted(gone.items()):
            log.warning(
                "worker %s is gone (its lock is free): the %d unit(s) of run %s it held went "
                "back to their queues for the fleet's live workers (%s); if no worker is "
                "running, start one: flowc worker --name NAME",
                name,
                len(units),
                run_id,
                ", ".join(units[:5]) + (" …" if len(units) > 5 else ""),
            )


#: the runs this process could not take up (:func:`taken_up`), said once each
_UNTAKEN: set[str] = set()
#: a fleet worker's stop (:func:`stop_on_untaken`): told of the first run it cannot take up
_STOP: list[Callable[[str, FlowError], None]] = []


@contextlib.contextmanager
def stop_on_untaken(stop: Callable[[str, FlowError], None]) -> Iterator[None]:
    """While in this block (a ``flowc worker``: execution.work), a run this process cannot
    build is not left pending here nor said here: ``stop(run_id, error)`` is called — from
    whatever thread the engine runs the unit on — and the worker stops, freeing its liveness
    lock, so the units it held go back to their queues for the fleet's other workers
    (:func:`watch_run`; docs/decisions.md "A worker that cannot build a run stops")."""
    _STOP.append(stop)
    try:
        yield
    finally:
        _STOP.remove(stop)


async def taken_up(run_id: str, build: Awaitable[_T]) -> _T:
    """``await build`` — the runtime of run ``run_id`` a workflow body of this process needs
    (a fleet worker taking a unit up, a restarted ``flowc serve --durable`` recovering its
    runs at the engine's launch) — or, when this process cannot build it (a FlowError: an
    API key unset, a ``[tools]`` module missing or broken, a ``flow.toml`` or plan that no
    longer loads), leave the workflow pending rather than end the run with it: say so once
    (a warning of logger ``agentflow.durable``: on stderr) and wait until the process stops,
    recording nothing. The run stays redrivable as ``flowc resume`` leaves one it refuses: a
    worker restarted under its name (or the liveness watch, once it is stopped) hands the
    work on; ``flowc resume RUN`` takes a stopped run up (docs/durable.md)."""
    try:
        return await build
    except (RunError, RunAborted):
        raise
    except FlowError as e:
        await _left_pending(run_id, e)


async def _left_pending(run_id: str, error: FlowError) -> NoReturn:
    if _STOP:  # a fleet worker: it stops, and says why
        _STOP[-1](run_id, error)
    elif run_id not in _UNTAKEN:
        _UNTAKEN.add(run_id)
        log.warning("%s", untaken_message(run_id, error))
    # cancelled when the process stops: the engine records no outcome for a cancelled body
    await asyncio.Event().wait()
    raise AssertionError("unreachable")  # pragma: no cover
