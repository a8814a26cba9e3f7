"""Item records: the results of one-call units (a map item or ``parallel`` branch that is one
idempotent tool call) recorded in batches, one transaction for every item that finished while
the previous batch was being written (group commit; docs/durable.md "Big maps").

A DBOS step costs two database round trips (a read of what is recorded at its position, then
the insert of its result, each its own transaction on a thread of DBOS's pool): 3-5 ms, which
made a 10,000-item durable map 35x its plain run.  An item of a map whose body is one idempotent
tool call needs neither the position (its name, which holds its step path, identifies it) nor a
transaction of its own, so its result is a row of the table ``agentflow_items`` in the run's
database, keyed by ``(unit, operation name)``:

- a unit reads its rows once, when its first item runs in this process (one ``SELECT``); an
  item found there is replayed (its tool is not called), and its row dropped from memory;
- an item that ran waits until its row is committed before it returns, so nothing (its
  ``tool_finished`` event, the map's result) says it finished before its record does: a
  process killed before the commit runs the item again on resume (at least once: the tool is
  idempotent), one killed after replays it;
- rows are written by one writer per process: every row queued while a batch is being written
  goes into the next batch, in one transaction (``INSERT … ON CONFLICT DO NOTHING``), so a map
  at concurrency C writes about one transaction per C items;
- a unit cancelled (``flowc cancel``) is seen at its next batch: its items raise
  ``RunAborted``, as a DBOS step does, and it starts no call after that; the rows of the calls
  it finished are still written (a model call that was answered is paid for: ``flowc runs
  show`` counts it, ``--reuse`` and ``redrive`` take it).

Rows are agentflow's JSON (records.py): ``output`` the step's ``{"d": digest, "v": value}``,
``error`` an exception, exactly as a DBOS step stores them.  ``flowc runs show``, ``--reuse`` and
``redrive`` read them beside the engine's steps (:func:`item_steps`).
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from agentflow.core.vocabulary import MAX_INT
from agentflow.errors import Cancelled, RunAborted
from agentflow.runtime.durable.dbos_system import begin_behind, dbos_module
from agentflow.runtime.durable.records import ForeignRecord, Unreadable, install

__all__ = ["ItemPage", "ItemRecords", "TABLE", "item_page", "item_steps", "items_for"]

T = TypeVar("T")
#: A row: unit, operation name, output, error (agentflow JSON), ordered (1: an ordered operation,
#: 0: a one-call unit's), started and finished (epoch s).
Row = tuple[str, str, str | None, str | None, int, float, float]
#: A unit's rows read back: {operation name: (output, error, ordered)}.
Recorded = dict[str, tuple[str | None, str | None, int]]


class Extra(Protocol):
    """A write that joins a batch's transaction (:meth:`ItemRecords.commit_with`)."""

    def prepare(self, engine: Any) -> None:
        """Called with the SQLAlchemy engine before the transaction (e.g. make a table)."""

    def __call__(self, conn: Any) -> Any:
        """The write, in the batch's transaction ``conn``; its return value is handed back."""


#: The table of item records (created on first use, in the database of the run).
TABLE = "agentflow_items"

#: Seconds between two looks at whether the units being written were cancelled.
CANCEL_LOOK_S = 0.5

#: The longest a batch of rows that nobody waits for (ordered rows written behind) is held
#: before it is written, so that the rows of the next calls join it (group commit over a
#: window): a row something waits for — a one-call unit's, or any row of a unit that flushes
#: (its next engine operation, its end) — has its batch written at once.
BEHIND_S = 0.02

#: Transactions and rows this process wrote (bench/durable_map.py prints rows per transaction).
WRITTEN = {"transactions": 0, "rows": 0}

#: the SQLAlchemy engines whose database has the table
_made: weakref.WeakSet[Any] = weakref.WeakSet()


def _ensure_table(engine: Any) -> None:
    import sqlalchemy as sa

    if engine in _made:
        return
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":  # two processes making it at once
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext('agentflow_items'))"))
        conn.execute(
            sa.text(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (workflow_id TEXT NOT NULL, "
                "name TEXT NOT NULL, output TEXT, error TEXT, ordered INTEGER NOT NULL, "
                "started_at DOUBLE PRECISION NOT NULL, finished_at DOUBLE PRECISION NOT NULL, "
                "PRIMARY KEY (workflow_id, name))"
            )
        )
    _made.add(engine)


def _serializer() -> Any:

    return install()


class ItemRecords:
    """The item records of one database in this process: what each unit has recorded (read
    once per unit), and the group-commit writer.  ``sys_db``: a zero-argument function giving
    the engine's system database (DBOS's ``SystemDatabase``: its SQLAlchemy ``engine`` and
    ``get_cancelled_workflow_ids``)."""

    def __init__(self, sys_db: Callable[[], Any]):
        self._sys_db = sys_db
        #: unit → {operation name: (output text, error text)} not yet replayed
        self._loaded: dict[str, Recorded] = {}
        #: unit → the step paths of its one-call units' records (a path's item is replayed)
        self._paths: dict[str, set[str]] = {}
        #: unit → how many of its ordered records are not replayed yet (it is replaying)
        self._ahead: dict[str, int] = {}
        self._loading: dict[str, asyncio.Future[Recorded]] = {}
        #: event loop → its rows waiting for the next batch, and its writer: DBOS runs units it
        #: recovers or dequeues on a loop of its own, beside the caller's (one writer per loop)
        self._queues: dict[asyncio.AbstractEventLoop, list[tuple[Row, asyncio.Future[None]]]] = {}
        self._writers: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
        self._looked = -CANCEL_LOOK_S
        self._cancelled: set[str] = set()
        #: unit → its ordered rows queued and not known committed (write-behind: :meth:`flush`)
        self._behind: dict[str, list[asyncio.Future[Any]]] = {}
        #: unit → its latest ordered row queued, until committed (:meth:`last_pending`)
        self._last: dict[str, asyncio.Future[None]] = {}
        #: unit → the flush in progress (:meth:`flush`)
        self._barriers: dict[str, asyncio.Future[list[Any]]] = {}
        #: event loop → the wake-up of its writer while it holds a batch nobody waits for
        #: (:data:`BEHIND_S`), and the loops whose next batch is wanted at once
        self._holding: dict[asyncio.AbstractEventLoop, asyncio.Future[None]] = {}
        self._wanted: set[asyncio.AbstractEventLoop] = set()
        #: event loop → the writes that join its next batch's transaction (:meth:`commit_with`)
        self._extras: dict[asyncio.AbstractEventLoop, list[tuple[Extra, asyncio.Future[Any]]]] = {}

    def forget(self, workflow_id: str) -> None:
        """Drop what was read of unit ``workflow_id`` (it starts again: read it again)."""
        self._loaded.pop(workflow_id, None)
        self._paths.pop(workflow_id, None)
        self._ahead.pop(workflow_id, None)
        self._loading.pop(workflow_id, None)

    async def _thread(self, fn: Callable[..., T], *args: Any) -> T:
        await dbos_module().DBOS._configure_asyncio_thread_pool()
        return await asyncio.to_thread(fn, *args)

    def _read(self, workflow_id: str) -> Recorded:
        import sqlalchemy as sa

        engine = self._sys_db().engine
        _ensure_table(engine)
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(f"SELECT name, output, error, ordered FROM {TABLE} WHERE workflow_id = :w"),
                {"w": workflow_id},
            ).all()
        return {str(name): (output, error, _flag(ordered)) for name, output, error, ordered in rows}

    async def load(self, workflow_id: str) -> None:
        """Read unit ``workflow_id``'s records (once: until :meth:`forget`)."""
        if workflow_id in self._loaded:
            return
        loading = self._loading.get(workflow_id)
        if loading is None:
            loading = self._loading[workflow_id] = asyncio.ensure_future(
                self._thread(self._read, workflow_id)
            )
        records = await asyncio.shield(loading)
        if workflow_id not in self._loaded:
            self._loaded[workflow_id] = records
            self._paths[workflow_id] = {_path_of(n) for n, r in records.items() if not r[2]}
            self._ahead[workflow_id] = sum(1 for r in records.values() if r[2])

    def none_recorded(self, workflow_id: str) -> None:
        """Unit ``workflow_id`` was just inserted by this process: it has no records, none
        are read."""
        self._loaded[workflow_id] = {}
        self._paths[workflow_id] = set()
        self._ahead[workflow_id] = 0

    def replaying(self, workflow_id: str) -> bool:
        """True while unit ``workflow_id`` has ordered records not replayed yet (read once it
        recorded or replayed an operation here; before that, its engine steps tell)."""
        return self._ahead.get(workflow_id, 0) > 0

    async def recorded_at(self, workflow_id: str, path: str) -> bool:
        """True when unit ``workflow_id`` recorded the operation of the item at step ``path``
        (the item is then replayed: its events are not emitted again)."""
        await self.load(workflow_id)
        return path in self._paths.get(workflow_id, ())

    async def step(
        self, workflow_id: str, name: str, fn: Callable[[], Awaitable[T]], *, ordered: bool
    ) -> tuple[T, bool]:
        """Run ``fn()`` once as operation ``name`` of unit ``workflow_id``, its result (or
        exception) recorded in the next batch, returning once it is committed; the recorded
        one when there is.  ``ordered``: an operation of the unit's sequence (else a one-call
        unit's).  Returns ``(value, ran)``."""
        await self.load(workflow_id)
        found = self._loaded.get(workflow_id, {}).pop(name, None)
        if found is not None:
            output, error, was_ordered = found
            if was_ordered:
                self._ahead[workflow_id] -= 1
            else:
                self._paths.get(workflow_id, set()).discard(_path_of(name))
            if error is not None:
                raise _serializer().deserialize(error)
            return _serializer().deserialize(output), False
        if ordered and self._behind.get(workflow_id):
            # write-behind: the rows before this call may not be committed, so the commit's
            # look at a cancel has not gated it — look here (a cancelled unit starts nothing)
            await self._refuse_cancelled(workflow_id)
        started = time.time()
        flag = int(ordered)
        try:
            value = await fn()
        except Exception as e:
            if isinstance(e, RunAborted):  # stopped, not finished: nothing to record
                raise
            await self._record((workflow_id, name, None, _serializer().serialize(e), flag, started))
            raise
        await self._record((workflow_id, name, _serializer().serialize(value), None, flag, started))
        return value, True

    async def _record(self, row: tuple[str, str, str | None, str | None, int, float]) -> None:
        """Queue ``row``: a one-call unit's waits for its commit; an ordered operation's does
        not (write-behind: the unit's next engine operation, and its end, wait for it first:
        :meth:`flush`)."""
        done = self._queue(row)
        if not row[4]:
            await done
            return
        done.add_done_callback(_retrieved)
        self._behind.setdefault(row[0], []).append(done)
        self._last[row[0]] = done
        done.add_done_callback(
            lambda f: self._last.pop(row[0], None) if self._last.get(row[0]) is f else None
        )

    async def _refuse_cancelled(self, workflow_id: str) -> None:
        """Raise ``RunAborted`` when unit ``workflow_id`` was cancelled (``flowc cancel``, a
        client's cancellation of a served run): a row of it refused as cancelled, or the
        engine's list of cancelled units, looked at once per CANCEL_LOOK_S."""
        for done in self._behind.get(workflow_id, ()):
            if done.done() and not done.cancelled() and isinstance(done.exception(), RunAborted):
                raise Cancelled()
        now = time.monotonic()
        if now - self._looked >= CANCEL_LOOK_S:
            self._looked = now
            found = await self._thread(self._sys_db().get_cancelled_workflow_ids, [workflow_id])
            self._cancelled.update(found)
        if workflow_id in self._cancelled:
            raise Cancelled()

    def last_pending(self, workflow_id: str) -> asyncio.Future[None] | None:
        """Unit ``workflow_id``'s latest ordered row not committed yet (rows commit in the
        order they were queued: once it is done, so are all before it), or None."""
        return self._last.get(workflow_id)

    async def flush(self, workflow_id: str) -> None:
        """Return once every ordered row unit ``workflow_id`` queued is committed (before any
        other record of the unit, so what it recorded is always a prefix of what it did, and
        before its result); raises the first error of their writes (``RunAborted`` for a unit
        cancelled meanwhile).  Without rows pending it returns without suspending; callers
        that come while a flush waits wait for that same flush and go on in the order they
        came, so concurrent branches reach the engine in the order they would without one
        (the engine numbers their operations in that order: a replay must find the same)."""
        pending = self._behind.pop(workflow_id, None)
        barrier = self._barriers.get(workflow_id)
        if pending and not all(_committed(f) for f in pending):
            self._want(asyncio.get_running_loop())  # the rows held behind are wanted now
            if barrier is not None and not barrier.done():
                pending.append(barrier)
            barrier = self._barriers[workflow_id] = asyncio.gather(*pending, return_exceptions=True)
            barrier.add_done_callback(lambda b: self._barriers.pop(workflow_id, None))
        if barrier is None:
            return
        results = await asyncio.shield(barrier)
        for result in results:
            if isinstance(result, list):  # an earlier barrier's
                result = next((r for r in result if isinstance(r, BaseException)), None)
            if isinstance(result, BaseException):
                raise result

    async def commit_with(self, workflow_id: str, extra: Extra) -> Any:
        """Commit unit ``workflow_id``'s rows written behind and ``extra`` in one transaction:
        ``extra.prepare(engine)`` first (outside it: making a table), then ``extra(conn)`` in
        the batch's transaction after its rows; returns what ``extra`` returns, once committed
        (every row the unit queued before is committed by then).  A root's end claim goes so
        (answers.end_claim_in): a run's last records and its end are one commit, not two
        (issue 35).  Raises the transaction's error."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        self._extras.setdefault(loop, []).append((extra, done))
        self._want(loop)
        writer = self._writers.get(loop)
        if writer is None or writer.done():
            self._writers[loop] = asyncio.ensure_future(self._write_batches(loop))
        return await done

    def _queue(self, row: tuple[str, str, str | None, str | None, int, float]) -> Any:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._queues.setdefault(loop, []).append(((*row, time.time()), done))
        if not row[4]:  # a one-call unit waits for its row
            self._want(loop)
        writer = self._writers.get(loop)
        if writer is None or writer.done():
            self._writers[loop] = asyncio.ensure_future(self._write_batches(loop))
        return done

    async def _write_batches(self, loop: asyncio.AbstractEventLoop) -> None:
        while self._queues.get(loop) or self._extras.get(loop):
            await asyncio.sleep(0)  # the items finishing at this moment join the batch
            if loop not in self._wanted and BEHIND_S > 0:
                # rows written behind only: the next calls' rows join them for a while
                held = self._holding[loop] = loop.create_future()
                timer = loop.call_later(BEHIND_S, _wake, held)
                try:
                    await held
                finally:
                    timer.cancel()
                    self._holding.pop(loop, None)
            self._wanted.discard(loop)
            batch, self._queues[loop] = self._queues.get(loop, []), []
            extras, self._extras[loop] = self._extras.get(loop, []), []
            try:
                cancelled, made = await self._thread(
                    self._commit, [row for row, _ in batch], [extra for extra, _ in extras]
                )
            except BaseException as e:
                for _, done in [*batch, *extras]:
                    if not done.done():
                        done.set_exception(e if isinstance(e, Exception) else RuntimeError(str(e)))
                if not isinstance(e, Exception):
                    raise
                continue
            for row, done in batch:
                if done.done():
                    continue
                if row[0] in cancelled:
                    done.set_exception(Cancelled())
                else:
                    done.set_result(None)
            for (_, done), value in zip(extras, made, strict=True):
                if not done.done():
                    done.set_result(value)
        # nothing queued on this loop (no await since the check): its entries go
        self._queues.pop(loop, None)
        self._extras.pop(loop, None)
        self._writers.pop(loop, None)
        self._wanted.discard(loop)

    def _want(self, loop: asyncio.AbstractEventLoop) -> None:
        """The rows queued on ``loop`` are waited for: its writer writes its next batch at
        once (wakes up now when it is holding one: :data:`BEHIND_S`)."""
        self._wanted.add(loop)
        _wake(self._holding.get(loop))

    def _commit(self, rows: list[Row], extras: Sequence[Extra] = ()) -> tuple[set[str], list[Any]]:
        """Insert ``rows`` and make ``extras``' writes (:meth:`commit_with`) in one
        transaction; returns the units among the rows that are cancelled (their waiters raise
        ``RunAborted``; their finished calls stay recorded) and what each extra returned."""
        sys_db = self._sys_db()
        engine = sys_db.engine
        _ensure_table(engine)
        units = sorted({row[0] for row in rows})
        now = time.monotonic()
        if now - self._looked >= CANCEL_LOOK_S:  # a cancel is seen within CANCEL_LOOK_S
            self._looked = now
            self._cancelled.update(sys_db.get_cancelled_workflow_ids(units))
        cancelled = self._cancelled.intersection(units)
        keep = rows
        made: list[Any] = []
        for extra in extras:
            extra.prepare(engine)
        if keep or extras:
            mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
            # rows nobody waits for (written behind) and a root's end claim: the next commit
            # of the unit — a full one — syncs them (dbos_system.begin_behind); a batch with
            # a one-call unit's row, which its unit waits for, is a full commit of its own
            behind = all(row[4] for row in keep)
            with (begin_behind if behind else _begin)(engine) as conn:
                if keep:
                    conn.exec_driver_sql(
                        f"INSERT INTO {TABLE} (workflow_id, name, output, error, ordered, "
                        f"started_at, finished_at) VALUES ({', '.join([mark] * 7)}) "
                        "ON CONFLICT (workflow_id, name) DO NOTHING",
                        keep,
                    )
                made = [extra(conn) for extra in extras]  # the driver's executemany above
            WRITTEN["transactions"] += 1
            WRITTEN["rows"] += len(keep)
        return cancelled, made


def _begin(engine: Any) -> Any:
    return engine.begin()


def _wake(held: asyncio.Future[None] | None) -> None:
    if held is not None and not held.done():
        held.set_result(None)


def _committed(future: asyncio.Future[Any]) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


def _retrieved(future: asyncio.Future[None]) -> None:
    """A written-behind row's outcome is read by :meth:`ItemRecords.flush`; this keeps asyncio
    from reporting an error nobody read when the unit ends another way."""
    if not future.cancelled():
        future.exception()


def _path_of(name: str) -> str:
    """The step path of an item's operation name (``E1/do.4/tool:user__note#1`` → ``E1/do.4``)."""
    return name.rsplit("/tool:", 1)[0]


#: one :class:`ItemRecords` per launched engine (dbos_engine keeps it)
_records: dict[str, ItemRecords] = {}


def items_for(key: str, sys_db: Callable[[], Any]) -> ItemRecords:
    """The :class:`ItemRecords` of the engine launched on ``key`` (its database URL)."""
    found = _records.get(key)
    if found is None:
        _records.clear()  # one database per process at a time
        found = _records[key] = ItemRecords(sys_db)
    return found


@dataclass
class ItemPage:
    """What a page of ``flowc runs show`` needs of some units' item records, without reading
    them all (:func:`item_page`): ``total``, how many they hold; ``first``, the first ones in
    start order (as :func:`item_steps` lists them, each with its unit's id, ``workflow_id``);
    ``models``, every model call's record (the run's cost counts them all)."""

    total: int = 0
    first: list[dict[str, Any]] = field(default_factory=list)
    models: list[dict[str, Any]] = field(default_factory=list)
    #: ``(workflow_id, name)`` of each failed record of ``first`` that a later record of the
    #: same unit and call follows (an attempt made again: past the page, so not among them)
    later: set[tuple[str, str]] = field(default_factory=set)


#: Units per query of :func:`item_page` (SQLite allows 32,766 parameters, older builds 999).
_CHUNK = 500


def item_page(sys_db: Any, workflow_ids: list[str], first: int) -> ItemPage:
    """The item records of units ``workflow_ids`` for one page of ``flowc runs show``: their
    count, the first ``first`` of them in start order, and every model call's record
    (:class:`ItemPage`): a 100,000-item map's page reads ``first`` rows' values, not 100,000
    (docs/durable.md "Looking at a run")."""
    import sqlalchemy as sa

    # a page past what SQL's 64-bit integers hold (`--offset 9223372036854775807` plus the
    # limit) reads every row: there are fewer
    first = max(0, min(first, MAX_INT))
    engine = sys_db.engine
    _ensure_table(engine)
    page = ItemPage()
    rows: list[Any] = []
    with engine.connect() as conn:
        for lo in range(0, len(workflow_ids), _CHUNK):
            ids = workflow_ids[lo : lo + _CHUNK]
            marks = ", ".join(f":w{i}" for i in range(len(ids)))
            params: dict[str, Any] = {f"w{i}": w for i, w in enumerate(ids)}
            where = f"FROM {TABLE} WHERE workflow_id IN ({marks})"
            page.total += int(
                conn.execute(sa.text(f"SELECT count(*) {where}"), params).scalar_one()
            )
            columns = "workflow_id, name, output, error, started_at, finished_at"
            rows += conn.execute(
                sa.text(
                    f"SELECT {columns} {where} ORDER BY started_at, finished_at, name LIMIT :n"
                ),
                {**params, "n": first},
            ).all()
            page.models += [
                _step(row)
                for row in conn.execute(
                    sa.text(f"SELECT {columns} {where} AND name LIKE :m"),
                    {**params, "m": "%/model:%"},
                ).all()
            ]
        rows.sort(key=lambda r: (_at(r[4]), _at(r[5]), str(r[1])))
        # a failed attempt on the page whose next attempt is past it: told here, where the
        # rows are, so the page shows it `retried` as the whole listing does
        for row in rows[:first]:
            if row[3] is None:
                continue
            key = str(row[1]).rsplit("#", 1)[0] + "#"
            again = conn.execute(
                sa.text(
                    f"SELECT 1 FROM {TABLE} WHERE workflow_id = :w AND name <> :name "
                    "AND substr(name, 1, :n) = :key AND started_at >= :at LIMIT 1"
                ),
                {"w": row[0], "name": row[1], "n": len(key), "key": key, "at": row[4]},
            ).first()
            if again is not None:
                page.later.add((str(row[0]), str(row[1])))
    page.first = [_step(row) for row in rows[:first]]
    return page


def _flag(ordered: Any) -> int:
    """A row's ``ordered`` (0 or 1); ForeignRecord for anything else (a row edited by hand)."""
    if ordered not in (0, 1) or isinstance(ordered, float):
        raise ForeignRecord(f"an item record's ordered mark {ordered!r:.40} is not one")
    return int(ordered)


def _ms(at: Any) -> Any:
    """A row's time (epoch s) in epoch ms as the engine lists steps' times; a value that is
    not a finite number is handed on as it is, for records.record_problem to refuse."""
    if type(at) in (int, float) and math.isfinite(at) and abs(at) < 1e14:
        return int(at * 1000)
    return at


def _at(at: Any) -> float:
    """A row's time to order rows by (one that is not a number: last)."""
    return float(at) if type(at) in (int, float) and math.isfinite(at) else math.inf


def _read(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return _serializer().deserialize(text)
    except Exception as e:  # noqa: BLE001 - reported by the run's commands
        return Unreadable(str(e))


def _step(row: Any) -> dict[str, Any]:
    workflow_id, name, output, error, started, finished = row
    return {
        "workflow_id": str(workflow_id),
        "function_name": str(name),
        "output": _read(output),
        "error": _read(error),
        "started_at_epoch_ms": _ms(started),
        "completed_at_epoch_ms": _ms(finished),
    }


def item_steps(sys_db: Any, workflow_id: str) -> list[dict[str, Any]]:
    """Unit ``workflow_id``'s item records as the engine lists its steps (``function_name``,
    ``output``, ``error``, ``started_at_epoch_ms``, ``completed_at_epoch_ms``), in the order
    they finished; a row that is not agentflow's JSON reads as
    :class:`~agentflow.runtime.durable.records.Unreadable`."""
    import sqlalchemy as sa

    engine = sys_db.engine
    _ensure_table(engine)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                f"SELECT name, output, error, started_at, finished_at FROM {TABLE} "
                "WHERE workflow_id = :w ORDER BY finished_at, name"
            ),
            {"w": workflow_id},
        ).all()
    serializer = _serializer()

    def read(text: str | None) -> Any:
        if text is None:
            return None
        try:
            return serializer.deserialize(text)
        except Exception as e:  # noqa: BLE001 - reported by the run's commands
            return Unreadable(str(e))

    return [
        {
            "function_name": str(name),
            "output": read(output),
            "error": read(error),
            "started_at_epoch_ms": _ms(started),
            "completed_at_epoch_ms": _ms(finished),
        }
        for name, output, error, started, finished in rows
    ]
