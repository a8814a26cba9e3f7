"""The DBOS of this process, read directly: the dbos module, its system database and
the SQLite engine it is given (docs/durable.md; docs/decisions.md "Start-up": importing this
module imports neither DBOS nor SQLAlchemy).  Below the engine (:mod:`.dbos_engine`) and the
helpers that read its records (:mod:`.answers`, :mod:`.liveness`, :mod:`.ratelimit`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import weakref
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from agentflow.errors import ConfigError

__all__ = [
    "begin_behind",
    "dbos_instance",
    "install_inline_then",
    "install_precise_sqlite_clock",
    "install_prepared_sqlite",
    "dbos_module",
    "next_commit_behind",
    "nameless_roots",
    "open_sync",
    "query_steps",
    "query_workflows",
    "SYNCHRONOUS",
    "sqlite_engine",
    "sqlite_path",
    "start_sync",
    "synced",
    "synchronous_of",
    "sync_database",
    "system_database",
    "unsynced",
    "with_synchronous",
    "workflow_exists",
]


def dbos_module() -> Any:
    """The dbos module (importing this module imports neither DBOS nor SQLAlchemy: ``flowc
    runs`` of no database, and every command that only names the database, start without
    them; docs/decisions.md "Start-up").  The engine's workflows are registered by
    :func:`agentflow.runtime.durable.dbos_engine.dbos_with_workflows`, which every launch goes through.
    Raises ConfigError when dbos is not installed."""
    try:
        import dbos
    except ImportError:
        raise ConfigError(
            "durable runs need the dbos package (a dependency of agentflow): pip install 'dbos>=3.4,<3.5'"
        ) from None
    return dbos


#: SQLite ``synchronous`` levels ``[durable] synchronous`` may name (``full`` is the default).
SYNCHRONOUS = ("normal", "full", "extra")


def with_synchronous(url: str, level: str) -> str:
    """``url`` with SQLite's ``synchronous`` level ``level`` (``[durable] synchronous``) as its
    ``?synchronous=`` parameter: ``full``, the default, leaves it as it is, and so does a URL
    that names its own level or is not SQLite."""
    if level == "full" or not url.startswith("sqlite:///") or "synchronous=" in url:
        return url
    return url + ("&" if "?" in url else "?") + f"synchronous={level}"


def synchronous_of(url: str) -> tuple[str, str]:
    """``(the URL without its synchronous parameter, the level)`` of a SQLite URL (level
    ``full`` when it names none).  Raises ValueError for a level SQLite's WAL is not run at."""
    base, _, query = url.partition("?")
    level = "full"
    rest = []
    for part in query.split("&") if query else []:
        key, _, value = part.partition("=")
        if key == "synchronous":
            level = value.lower()
        else:
            rest.append(part)
    if level not in SYNCHRONOUS:
        raise ValueError(
            f"synchronous={level} is not a level durable runs use: normal, full or extra"
        )
    return base + ("?" + "&".join(rest) if rest else ""), level


def sqlite_engine(url: str) -> Any:
    """The SQLAlchemy engine of a SQLite durable runs database ``url`` (DBOS is given it): WAL,
    the pragmas DBOS sets, and the ``synchronous`` level of the URL (:func:`synchronous_of`),
    which every connection runs at when it is checked out — but the one checkout a context
    asks for with :func:`next_commit_behind`, which runs at ``normal`` (at ``full`` only)."""
    import sqlalchemy as sa
    from sqlalchemy import event

    url, level = synchronous_of(url)
    engine = sa.create_engine(url)

    @event.listens_for(engine, "connect")
    def _pragmas(conn: Any, record: Any) -> None:  # the pragmas DBOS sets, plus WAL
        conn.isolation_level = "IMMEDIATE"
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={level.upper()}")
        record.info[_LEVEL_KEY] = level

    @event.listens_for(engine, "checkout")
    def _level(conn: Any, record: Any, _proxy: Any) -> None:
        want = level
        if level == "full":
            behind = _BEHIND.get()
            if behind is not None and behind[0] > 0:
                behind[0] -= 1
                want = "normal"
        if record.info.get(_LEVEL_KEY) != want:
            try:  # no transaction is open on a connection checked out: the level holds
                conn.execute(f"PRAGMA synchronous={want.upper()}")
            except Exception as e:  # the pool drops it and connects again (at `level`)
                record.info.pop(_LEVEL_KEY, None)
                raise sa.exc.DisconnectionError(f"cannot set synchronous={want}: {e}") from e
            record.info[_LEVEL_KEY] = want

    _LEVELS[engine.pool] = level  # shared by DBOS's `execution_options` copy of it
    return engine


#: The ``synchronous`` level of the connection pool of each SQLite engine
#: :func:`sqlite_engine` made.
_LEVELS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

#: Where a pooled connection notes the ``synchronous`` level it runs at.
_LEVEL_KEY = "agentflow_synchronous"

#: How many more connections checked out in this context run at ``normal``
#: (:func:`next_commit_behind`); a list, shared by the contexts copied from it (a thread a
#: task hands work to, a task it creates), so one checkout takes it for all of them.
_BEHIND: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "agentflow_behind", default=None
)


@contextlib.contextmanager
def next_commit_behind() -> Iterator[None]:
    """While in this block, the next connection of a :func:`sqlite_engine` checked out in this
    context — or in one copied from it: a thread ``asyncio.to_thread`` runs a function on —
    commits at ``synchronous=NORMAL`` when the database runs at ``full`` (no ``fsync`` of its
    own), and only that one; after the block, none (a task created in it keeps nothing).  The
    caller makes sure a ``full`` commit of the same database, or :func:`sync_database`, follows
    before anything depends on that commit being on disk (the WAL is one file, synced whole).
    At another level, and on PostgreSQL, nothing changes."""
    behind = [1]
    token = _BEHIND.set(behind)
    try:
        yield
    finally:
        behind[0] = 0
        _BEHIND.reset(token)


@contextlib.contextmanager
def begin_behind(engine: Any) -> Iterator[Any]:
    """``engine.begin()`` for a transaction of records written behind (items.py: rows nobody
    waits for, and a root's end claim), committed at ``synchronous=NORMAL`` when the database
    runs at ``full``: no ``fsync`` of its own.  Such a transaction is always followed by a
    ``full`` commit of the same WAL before anything depends on it — the unit's next engine
    operation (a non-idempotent call's start, a question, a sleep, a child) or its outcome —
    and that commit's ``fsync`` makes it durable too (the WAL is one file, synced whole).
    A process crash loses nothing committed (WAL at ``normal``); a power loss before that
    next commit may lose it, which the operations in it tolerate: they are idempotent and
    were not waited for (docs/durable.md "Big maps: item records and synchronous").  Any
    other level, and PostgreSQL, is an ordinary transaction.  The connection's level is set
    when it is checked out (:func:`sqlite_engine`): no statement of its own per batch."""
    with next_commit_behind(), engine.begin() as conn:
        yield conn


def sync_database(engine: Any) -> Callable[[], None] | None:
    """A function that puts on disk what is committed to the SQLite database of ``engine``
    (a :func:`sqlite_engine`'s) at ``full``: an ``fsync`` of its WAL file — SQLite's own at a
    ``full`` commit, made later and on another thread, so a commit made with
    :func:`next_commit_behind` is as durable as a ``full`` one once it has returned.  A WAL
    file gone means its frames are in the database file, which the checkpoint synced.  None
    at another level and on PostgreSQL (nothing to do).  Only the WAL file is opened: closing
    a descriptor of the database file (or of its ``-shm``) would drop SQLite's locks on it."""
    if _LEVELS.get(engine.pool) != "full":
        return None
    name = engine.url.database
    if not name or name == ":memory:":
        return None
    wal = name + "-wal"

    def sync() -> None:
        try:
            fd = os.open(wal, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    return sync


#: workflow id → the gate of its insert, committed behind (:func:`start_sync`), until it opens
_SYNCING: dict[str, asyncio.Future[None]] = {}


def start_sync(workflow_id: str, *, held: bool = False) -> asyncio.Future[None] | None:
    """Start putting on disk, on a thread, what the database holds, for workflow
    ``workflow_id`` whose insert was just committed with :func:`next_commit_behind` (a run's
    root: execution.run_durable), and close its gate: :func:`unsynced` gives it, and
    :func:`synced` waits for it.  The gate opens when the sync has ended — ``held``: when the
    caller opens it (:func:`open_sync`, after the sync and its own step that must come first).
    Returns the sync's future, or None when there is nothing to do (:func:`sync_database`).
    The caller is on the loop DBOS configured (its thread pool)."""
    sync = sync_database(system_database().engine)
    if sync is None:
        return None
    loop = asyncio.get_running_loop()
    _SYNCING[workflow_id] = loop.create_future()
    disk = loop.run_in_executor(None, sync)

    def done(f: asyncio.Future[None]) -> None:
        if not f.cancelled():
            f.exception()  # a failed fsync: the next full commit meets the same disk
        if not held:
            open_sync(workflow_id)

    disk.add_done_callback(done)
    return disk


def open_sync(workflow_id: str) -> None:
    """Open the gate of ``workflow_id``'s insert (:func:`start_sync`): what waits for it goes on."""
    gate = _SYNCING.pop(workflow_id, None)
    if gate is not None and not gate.done():
        gate.set_result(None)


def unsynced(workflow_id: str) -> asyncio.Future[None] | None:
    """The gate of ``workflow_id``'s insert (:func:`start_sync`) while it is closed, else None."""
    gate = _SYNCING.get(workflow_id)
    return gate if gate is not None and not gate.done() else None


async def synced(workflow_id: str) -> None:
    """Return once the gate of ``workflow_id``'s insert is open (at once when it has none: an
    insert committed at ``full``).  A sync that failed opens it all the same: the next
    ``full`` commit, which meets the same disk, reports the failure."""
    gate = unsynced(workflow_id)
    if gate is not None:
        await asyncio.shield(gate)


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///PATH`` URL (None: PostgreSQL, or SQLite in memory)."""
    if not url.startswith("sqlite:///"):
        return None
    name = url[len("sqlite:///") :].split("?", 1)[0]
    return None if name in ("", ":memory:") else Path(name)


def system_database() -> Any:
    from dbos._dbos import _get_dbos_instance

    return _get_dbos_instance()._sys_db


async def query_steps(workflow_id: str, *, load_output: bool = True) -> list[Any]:
    """The recorded steps of ``workflow_id``, read from the database directly: DBOS's own
    ``list_workflow_steps`` called inside a workflow is recorded as one of its steps (and
    replayed with its old answer), which a query made only on some executions must not be."""
    await (
        dbos_module().DBOS._configure_asyncio_thread_pool()
    )  # this DBOS's threads, not a stopped one's
    return await asyncio.to_thread(
        system_database().list_workflow_steps, workflow_id, load_output=load_output
    )


async def query_workflows(**filters: Any) -> list[Any]:
    """Workflow statuses matching ``filters`` (``list_workflows``'s), read directly (see
    :func:`query_steps`)."""
    await dbos_module().DBOS._configure_asyncio_thread_pool()
    return await asyncio.to_thread(lambda: system_database().list_workflows(**filters))


def _workflow_exists(workflow_id: str) -> bool:
    import sqlalchemy as sa

    sys_db = system_database()
    ws = sys_db.tables.workflow_status
    with sys_db.engine.connect() as conn:
        found = conn.execute(sa.select(ws.c.workflow_uuid).where(ws.c.workflow_uuid == workflow_id))
        return found.first() is not None


async def workflow_exists(workflow_id: str) -> bool:
    """Whether the system database holds a workflow ``workflow_id``: one primary-key read of
    DBOS's ``workflow_status`` table (``list_workflows`` would read and decode its input and
    output as well: ~4× the time, measured in docs/decisions.md "Durable per-run cost").
    Reaches into ``SystemDatabase.tables`` and ``.engine``: pinned by
    tests/runtime/durable/test_dbos_internals_pinned.py."""
    await dbos_module().DBOS._configure_asyncio_thread_pool()
    return await asyncio.to_thread(_workflow_exists, workflow_id)


def install_inline_then() -> None:
    """Make DBOS's ``Pending.then`` call its stage without a thread hop first (idempotent;
    issue 35).  ``Pending.then(next)`` composes a workflow's body with the recording of its
    outcome, and a step's body with the recording of its result; DBOS 3.4 runs it as
    ``Pending._wrap(func, lambda: next)``, whose first line hands ``before`` — here a lambda
    that returns ``next`` — to a worker thread and back before the body starts: one hand-off
    per workflow and per step that does no work.  This ``then`` is DBOS's ``_wrap`` with
    ``before()`` evaluated where it is (the body, and the recording on a thread after it,
    unchanged).  ``Pending.wrap`` (a ``before`` that reads the database) keeps its hop.
    Reaches into ``dbos._outcome`` (``Pending``, ``Pending._raise``, ``DeferredResult``):
    pinned by tests/runtime/durable/test_dbos_internals_pinned.py, which fails on a DBOS
    whose ``_wrap`` or ``then`` is not the one this copies."""
    from dbos._logger import dbos_logger
    from dbos._outcome import DeferredResult, Pending

    if getattr(Pending.then, "inline", False):
        return

    async def run_then(
        func: Callable[[], Awaitable[Any]], next_: Callable[[Callable[[], Any]], Any], dbos: Any
    ) -> Any:
        if dbos is not None:  # as _wrap: the executor pool configured for this loop
            await dbos._configure_asyncio_thread_pool()
        try:
            value = await func()
            result = await asyncio.to_thread(next_, lambda: value)
        except asyncio.CancelledError:
            dbos_logger.warning(f"Asyncio task cancelled for workflow or step {func}")
            raise
        except BaseException as exp:  # noqa: BLE001 - recorded as the outcome, as DBOS does
            saved_exp = exp
            result = await asyncio.to_thread(next_, lambda: Pending._raise(saved_exp))
        if isinstance(result, DeferredResult):
            return await result.resolve_async()
        return result

    def then(self: Any, next: Any, *, dbos: Any = None) -> Any:
        return Pending(lambda: run_then(self._func, next, dbos))

    then.inline = True  # type: ignore[attr-defined]
    then.original = Pending.then  # type: ignore[attr-defined]  # DBOS's (the pin test reads it)
    Pending.then = then  # type: ignore[method-assign]


#: The epoch in SQLite's ``julianday`` (1970-01-01T00:00:00Z), and milliseconds a day.
_UNIX_EPOCH_JULIAN_DAY = 2440587.5
_MS_A_DAY = 86_400_000.0


def install_precise_sqlite_clock() -> None:
    """Make DBOS's clock in SQL, ``SystemDatabase._now_ms_sql`` (a workflow's ``updated_at``
    and ``completed_at`` as it ends or is cancelled), count milliseconds on SQLite, as every
    other time of a run does (idempotent).  DBOS 3.4 counts them with ``unixepoch('subsec')``
    on Python ≥ 3.12 only, and else with ``strftime('%s', 'now')``: whole seconds, so a
    question its run's end stopped ended up to a second early in ``flowc runs show``
    (docs/decisions.md "A SQLite run's end to the millisecond").  ``julianday('now')`` has the
    milliseconds on every SQLite.  PostgreSQL's clock is left as it is.  Pinned by
    tests/runtime/durable/test_dbos_internals_pinned.py."""
    from dbos._sys_db import SystemDatabase

    if getattr(SystemDatabase._now_ms_sql, "precise", False):
        return
    import sqlalchemy as sa

    original = SystemDatabase._now_ms_sql
    # one expression, made once: SQLAlchemy's are immutable, and making it again for every
    # statement (a workflow's end) was a third of the CPU of DBOS's outcome write (issue 35)
    days = sa.func.julianday("now") - _UNIX_EPOCH_JULIAN_DAY
    now_ms = sa.cast(sa.func.round(days * _MS_A_DAY), sa.BigInteger)

    def now_ms_sql(self: Any) -> Any:
        if self.engine.dialect.name != "sqlite":
            return original(self)
        return now_ms

    now_ms_sql.precise = True  # type: ignore[attr-defined]
    now_ms_sql.original = original  # type: ignore[attr-defined]  # DBOS's (the pin test reads it)
    SystemDatabase._now_ms_sql = now_ms_sql  # type: ignore[method-assign]


def install_prepared_sqlite() -> None:
    """Make DBOS's ``SystemDatabase._execute_prepared`` keep its statements compiled on SQLite
    as it does on PostgreSQL (idempotent; issue 35).  DBOS 3.4 builds and compiles a
    workflow's insert (its status row, its input) and its output's upsert once per set of
    columns on PostgreSQL, then hands the SQL and the values, each through its type's bind
    processor, to the driver; on SQLite it builds the statement on every call (``insert``,
    ``on_conflict_do_update``, ``returning``, the ``excluded`` alias) and SQLAlchemy looks it
    up in its compiled cache: about 0.3 ms of CPU per run's insert, on the path a durable run
    waits for.  Here SQLite takes DBOS's own PostgreSQL path, compiled for the driver's
    ``named`` parameter style (DBOS's path passes the values as a mapping), on the engine's
    own dialect otherwise (its schema, its RETURNING support).  A Session, or a connection of
    another engine, goes to DBOS's code as before.  Reaches into ``SystemDatabase``
    (``_execute_prepared``, ``_prepared_statements``, ``_is_sqlite``) and
    ``dbos._schemas.SCHEMA_PLACEHOLDER``: pinned by
    tests/runtime/durable/test_dbos_internals_pinned.py."""
    import copy

    import sqlalchemy as sa
    from dbos._schemas import SCHEMA_PLACEHOLDER
    from dbos._sys_db import SystemDatabase

    if getattr(SystemDatabase._execute_prepared, "sqlite", False):
        return
    original = SystemDatabase._execute_prepared
    named: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def execute_prepared(
        self: Any,
        conn: Any,
        name: str,
        values: dict[str, Any],
        build: Callable[[], Any],
        *,
        insert_columns: bool = True,
    ) -> Any:
        dialect = self.engine.dialect
        if not self._is_sqlite or type(conn) is not sa.Connection or conn.dialect is not dialect:
            return original(self, conn, name, values, build, insert_columns=insert_columns)
        key = ("sqlite", name, tuple(values))
        prepared = self._prepared_statements.get(key)
        if prepared is None:
            compiling = named.get(dialect)
            if compiling is None:  # the engine's dialect (initialized), binding by name
                compiling = named[dialect] = copy.copy(dialect)
                compiling.paramstyle, compiling.positional = "named", False
            compiled = build().compile(
                dialect=compiling,
                column_keys=list(values) if insert_columns else None,
                schema_translate_map={SCHEMA_PLACEHOLDER: self.schema},
                render_schema_translate=True,
            )
            processors: dict[str, Callable[[Any], Any]] = {}
            constants: dict[str, Any] = {}  # the statement's own constants, bound too
            for bind_name, bind in compiled.binds.items():
                processor = bind.type.dialect_impl(compiling).bind_processor(compiling)
                if processor is not None:
                    processors[bind_name] = processor
                if bind_name not in values:
                    constants[bind_name] = bind.value
            prepared = (str(compiled), processors, constants)
            self._prepared_statements[key] = prepared
        sql, processors, constants = prepared
        params = {
            k: processors[k](v) if k in processors else v
            for k, v in {**constants, **values}.items()
        }
        return conn.exec_driver_sql(sql, params)

    execute_prepared.sqlite = True  # type: ignore[attr-defined]
    execute_prepared.original = original  # type: ignore[attr-defined]  # DBOS's (pinned)
    SystemDatabase._execute_prepared = execute_prepared  # type: ignore[method-assign]
    _install_prepared_outcome(SystemDatabase)


def _install_prepared_outcome(system: Any) -> None:
    """DBOS's ``_update_workflow_outcome_in_transaction`` (SQLite's outcome write: an UPDATE
    of the workflow's status row, PENDING and still owned by the caller, then the upsert of
    its output, in one transaction) with both statements compiled once
    (:func:`install_prepared_sqlite`): the UPDATE, built anew for every outcome, was most of
    the CPU of a run's last write.  The same statements, conditions and result (False when
    no row was the caller's to end); a ``SystemDatabase`` whose ``_wf`` or ``_wf_values``
    are not DBOS's own (a sharded one) runs DBOS's code."""
    import sqlalchemy as sa
    from dbos._sys_db import WorkflowStatusString

    original = system._update_workflow_outcome_in_transaction

    def update_outcome(
        self: Any,
        workflow_id: str,
        status: Any,
        *,
        output: str | None,
        error: str | None,
        owner_xid: str | None,
    ) -> bool:
        if (
            not self._is_sqlite
            or type(self)._wf is not system._wf
            or type(self)._wf_values is not system._wf_values
        ):
            return bool(
                original(self, workflow_id, status, output=output, error=error, owner_xid=owner_xid)
            )
        self._reject_shard_key(workflow_id, None)  # as DBOS's ``_wf`` does
        ws = self.tables.workflow_status
        owned = owner_xid is not None

        def build_update() -> Any:
            now_ms = self._now_ms_sql()
            update = (
                sa.update(ws)
                .values(
                    status=sa.bindparam("outcome_status"),
                    deduplication_id=None,
                    owner_xid=None,
                    updated_at=now_ms,
                    completed_at=now_ms,
                )
                .where(ws.c.workflow_uuid == sa.bindparam("outcome_workflow"))
                .where(ws.c.status == WorkflowStatusString.PENDING.value)
            )
            if owned:
                update = update.where(ws.c.owner_xid == sa.bindparam("outcome_owner"))
            return update

        def build_output_upsert() -> Any:
            insert = self.dialect.insert(self.tables.workflow_output)
            return insert.on_conflict_do_update(
                index_elements=self._key_conflict("workflow_uuid"),
                set_={"output": insert.excluded.output, "error": insert.excluded.error},
            )

        keys: dict[str, Any] = {"outcome_status": status, "outcome_workflow": workflow_id}
        if owned:
            keys["outcome_owner"] = owner_xid
        with self.engine.begin() as c:
            name = "update_workflow_outcome" + ("_owned" if owned else "")
            result = self._execute_prepared(c, name, keys, build_update, insert_columns=False)
            if result.rowcount == 0:  # not ours to end: no orphan output
                return False
            values = {
                **self._wf_values(workflow_id),
                "workflow_uuid": workflow_id,
                "output": output,
                "error": error,
            }
            self._execute_prepared(c, "upsert_workflow_output", values, build_output_upsert)
            return True

    update_outcome.original = original  # type: ignore[attr-defined]  # DBOS's (pinned)
    system._update_workflow_outcome_in_transaction = update_outcome


def dbos_instance() -> Any:
    from dbos._dbos import _get_dbos_instance as instance

    return instance()


def _nameless_roots() -> list[tuple[str, Any, Any]]:
    import sqlalchemy as sa

    sys_db = system_database()
    ws = sys_db.tables.workflow_status
    query = sa.select(ws.c.workflow_uuid, ws.c.created_at, ws.c.updated_at)
    with sys_db.engine.connect() as conn:
        rows = conn.execute(query.where(ws.c.name.is_(None)))
        return [(r[0], r[1], r[2]) for r in rows if "/" not in str(r[0])]


async def nameless_roots() -> list[tuple[str, Any, Any]]:
    """``(id, created_at, updated_at)`` of every workflow row with no name whose id is a run's
    (no ``/``): DBOS always names the workflows it writes, so such a row is a run's root edited
    by hand, which a listing by name cannot see (management.list_runs lists it as
    ``unreadable``).  The times as stored (epoch ms, or whatever the row holds).  Reaches into
    ``SystemDatabase.tables`` and ``.engine`` as :func:`workflow_exists` does."""
    await dbos_module().DBOS._configure_asyncio_thread_pool()
    return await asyncio.to_thread(_nameless_roots)
