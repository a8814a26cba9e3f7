"""Where DBOS runs in this process and what a command reads without running anything: the
database's URL, :func:`launch` and :func:`shutdown`, DBOS's own log, and the reads of ``flowc
runs`` / ``runs show`` (a run's recorded input, its item records, its waiting questions).

Below the engine (:mod:`.dbos_engine`, which registers agentflow's workflows here when it is
imported: :data:`REGISTRARS`): reading a run loads neither the executor nor the model clients
nor the tools (docs/decisions.md "What flowc runs show loads").  Importing this module imports
neither DBOS nor SQLAlchemy (:mod:`.dbos_system` loads them on first use).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentflow.core.redaction import safe_url
from agentflow.core.version import __version__
from agentflow.core.vocabulary import Code
from agentflow.errors import InputError, RunError
from agentflow.runtime.durable.answers import check_messages, claims, last_claim
from agentflow.runtime.durable.dbos_system import (
    dbos_instance,
    dbos_module,
    install_inline_then,
    install_precise_sqlite_clock,
    install_prepared_sqlite,
    query_steps,
    query_workflows,
    sqlite_engine,
    sqlite_path,
    synchronous_of,
    system_database,
)
from agentflow.runtime.durable.items import item_page, item_steps
from agentflow.runtime.durable.log_file import log_handler
from agentflow.runtime.durable.ratelimit import holds
from agentflow.runtime.durable.records import (
    ForeignRecord,
    check_readable,
    check_record,
    install,
    question_problem,
    reading,
    root_problem,
)
from agentflow.runtime.durable.run_info import (
    Question,
    no_run_message,
    plan_of,
    published_questions,
    split_closed,
)
from agentflow.runtime.durable.shown import Labels
from agentflow.runtime.tools import confined

__all__ = [
    "DBOS_CONSOLE_HANDLER",
    "LOG_HANDLER",
    "ON_SHUTDOWN",
    "REGISTRARS",
    "RECOVERY_POLL_S",
    "RUN_WORKFLOW",
    "UNIT_WORKFLOW",
    "database_url",
    "dbos_with_workflows",
    "launch",
    "launched",
    "launched_on",
    "log_file",
    "no_run_error",
    "query_item_page",
    "query_items",
    "recorded_input",
    "shutdown",
    "check_recorded",
    "lazy_labels",
    "open_questions",
    "published",
    "waiting_questions",
]

#: The registered names of the two workflows (stable: they are recorded with every run).
RUN_WORKFLOW = "agentflow.run"
UNIT_WORKFLOW = "agentflow.unit"

_state: dict[str, Any] = {"url": None, "executor_id": None}

#: The functions that register agentflow's workflows on the dbos module (dbos_engine.py adds
#: its own when it is imported): a process that only reads runs (``flowc runs``, ``flowc runs
#: show``, ``flowc answer``, ``flowc cancel``) never imports the engine, nor the executor, the
#: model clients and the tools it runs on, and launches DBOS with no workflow of its own
#: (nothing is recovered under a command-line executor id: it has no pending workflow).
REGISTRARS: list[Callable[[Any], Any]] = []
#: Called by :func:`shutdown` after DBOS stops (dbos_engine.py: forget this process's runtimes).
ON_SHUTDOWN: list[Callable[[], None]] = []


def dbos_with_workflows() -> Any:
    """The dbos module, agentflow's workflows registered on first use (importing this module
    imports neither DBOS nor SQLAlchemy: ``flowc runs`` of no database, and every command
    that only names the database, start without them; docs/decisions.md "Start-up").  A
    registrar added after the first call (the engine imported later in the process) registers
    at the next call: DBOS takes a workflow registered after its launch."""
    dbos = dbos_module()
    while len(_REGISTERED) < len(REGISTRARS):
        register = REGISTRARS[len(_REGISTERED)]
        _REGISTERED.append(register)
        register(dbos)
    return dbos


#: The registrars of :data:`REGISTRARS` already applied, in order.
_REGISTERED: list[Callable[[Any], Any]] = []


# ---------------------------------------------------------------------------------------------
# Launch


#: ``scheme://`` at the start of a database setting: a URL, never a file name.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def database_url(database: str, base: Path) -> str:
    """The SQLAlchemy URL of ``[durable] database``: a PostgreSQL URL as it is, a
    ``sqlite:///PATH`` URL as it is, else a SQLite file (relative to ``base``, the project
    directory; nothing is made here: :func:`launch` makes its directory). Raises ValueError for a URL of any other scheme
    (``mysql://…``, ``sqlite://x`` with two slashes), which would otherwise be taken for a file
    name."""
    if database.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        if database.startswith("postgres://"):
            database = "postgresql://" + database[len("postgres://") :]
        return database
    if database.startswith("sqlite:///"):
        return database
    scheme = _SCHEME.match(database)
    if scheme is not None:
        raise ValueError(
            f"{scheme.group(1)}:// is not a durable runs database: give a SQLite file "
            "(a path, or sqlite:///PATH) or a PostgreSQL URL (postgresql://…)"
        )
    path = Path(database)
    if not path.is_absolute():
        path = base / path
    return f"sqlite:///{path}"


def launch(
    url: str, *, executor_id: str, queues: list[str] | None = None, recovering: str | None = None
) -> None:
    """Start DBOS in this process on database ``url`` as executor ``executor_id`` (its pending
    workflows are recovered: a restarted worker's); a SQLite file's directory
    is made.  ``queues``: the queues
    this process takes work from (None: all, as a worker; ``[]``: none but DBOS's own).
    ``recovering``: a run this process recovers (:func:`~agentflow.runtime.durable.dbos_engine.recover_run`): its recovery queue is
    polled from the start.  Launching again with the same database and executor does nothing;
    another one replaces the running DBOS."""
    if _state["url"] == url and _state["executor_id"] == executor_id:
        return
    if _state["url"] is not None:
        shutdown()
    dbos = dbos_with_workflows()
    install_inline_then()  # no idle thread hop before each workflow and step body
    install_precise_sqlite_clock()  # a workflow's end to the millisecond on SQLite too
    install_prepared_sqlite()  # a workflow's insert compiled once on SQLite too

    config: dict[str, Any] = {
        "name": "agentflow",
        # rows are JSON, and nothing read from the database is unpickled (records.py)
        "serializer": install(),
        "system_database_url": synchronous_of(url)[0] if url.startswith("sqlite:") else url,
        "application_version": __version__,
        "executor_id": executor_id,
        "log_level": os.environ.get("AGENTFLOW_DBOS_LOG", "WARNING"),
        "notification_listener_polling_interval_sec": 0.1,
    }
    if url.startswith("sqlite:"):
        file = sqlite_path(url)
        if file is not None:
            file.parent.mkdir(parents=True, exist_ok=True)
            _guard_files(file)
        config["system_database_engine"] = sqlite_engine(url)
    _quiet_cancellations()  # before DBOS(): it may log about the database already
    _log_to_file(url)  # before DBOS(): its own console handler is then never added
    dbos.DBOS(config=config)
    if recovering is not None:
        _recovery_queue(recovering)
    if queues is not None:
        dbos.DBOS.listen_queues(queues)
    try:
        dbos.DBOS.launch()
    except BaseException:
        with contextlib.suppress(Exception):  # a half-launched DBOS must not block the next one
            dbos.DBOS.destroy(workflow_completion_timeout_sec=0)
        raise
    _state.update(url=url, executor_id=executor_id)


#: Seconds between two polls of a run's recovery queue.
RECOVERY_POLL_S = 0.05


def _recovery_queue(run_id: str) -> str:
    """The name of run ``run_id``'s recovery queue, registered in this process: an in-memory
    queue (DBOS's own kind), polled by this process only — no other process of the database
    knows it.  The name stays with the workflows recovered onto it, so the next process that
    recovers the run polls it again."""
    name = f"agentflow.recover.{run_id}"
    dbos_instance()._registry._register_internal_queue(name, polling_interval_sec=RECOVERY_POLL_S)
    return name


def _guard_files(file: Path) -> None:
    """Keep this process's file tools off the database's files and the run locks beside it: a
    descriptor of one opened and closed beside SQLite's drops SQLite's locks on it, and another
    process then truncates the mapped ``-shm`` (SIGBUS; confined.guard)."""

    names = [file.name + suffix for suffix in ("", "-wal", "-shm", "-journal")]
    confined.guard(file.parent, names, "the durable runs database")
    confined.guard(file.parent / "locks", None, "a durable run's lock")


#: DBOS log messages agentflow reports itself: a database that cannot be reached or opened is
#: one ``cannot open the durable runs database …`` line (runs.open_database), not DBOS's
#: traceback and warning before it
_QUIET_MESSAGES = (
    "no longer owned by this execution",
    "DBOS failed to launch",
    "Could not connect to postgres database to verify existence",
)


def _quiet_cancellations() -> None:
    """Keep DBOS from logging a traceback for a workflow cancelled on purpose (``flowc cancel``:
    the run's own process reports it as an ``aborted`` error), from warning that a
    cancelled workflow is no longer owned by this process, and from logging a traceback when
    its database cannot be opened (the caller reports that in one line)."""

    class QuietCancel(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            exc = record.exc_info[1] if record.exc_info else None
            if exc is not None and "Cancelled" in type(exc).__name__:
                return False
            message = record.getMessage()
            return not any(quiet in message for quiet in _QUIET_MESSAGES)

    logger = logging.getLogger("dbos")
    if not any(type(f).__name__ == "QuietCancel" for f in logger.filters):
        logger.addFilter(QuietCancel())


#: the name of the handler that takes DBOS's own log (``dbos`` logger) to its file
LOG_HANDLER = "agentflow-dbos-log"
#: the name DBOS gives the handler it adds when the ``dbos`` logger has none (dbos/_logger.py
#: ``init_logger``): a stream handler on stderr; pinned by tests/runtime/durable/test_dbos_log.py
DBOS_CONSOLE_HANDLER = "__dbos_console_log_handler__"


def log_file(url: str) -> Path:
    """Where DBOS's own log goes for database ``url``: ``dbos.log`` beside a SQLite file
    (``.flowc/dbos.log``), else ``.flowc/dbos.log`` under the current directory."""
    file = sqlite_path(url)
    return (file.parent if file is not None else Path(".flowc")) / "dbos.log"


def _log_to_file(url: str) -> None:
    """Send the ``dbos`` logger to :func:`log_file` instead of the terminal (docs/durable.md
    "DBOS's own log"): a step that raises — a tool error an agent or a ``catch`` handles — made
    DBOS print an ``[ERROR] … Traceback`` of up to hundreds of lines on stderr, which looks like
    a crash. DBOS adds its stderr handler only to a logger without handlers, so a handler of our
    own, in place before ``DBOS()``, keeps it off; one added earlier in the process is removed.
    A log file that cannot be opened leaves DBOS's messages dropped, never on the terminal."""

    logger = logging.getLogger("dbos")
    logger.propagate = False
    for handler in list(logger.handlers):
        if handler.name in (LOG_HANDLER, DBOS_CONSOLE_HANDLER):
            logger.removeHandler(handler)
            handler.close()

    handler = log_handler(log_file(url), LOG_HANDLER)
    logger.addHandler(handler)
    # asyncio's own reports in a durable process (a background wait refused as a cancel landed,
    # reported when its task is collected) go to the same file, never as a traceback on stderr
    background = logging.getLogger("asyncio")
    for old in list(background.handlers):
        if old.name == LOG_HANDLER:
            background.removeHandler(old)
    background.addHandler(handler)


def launched() -> bool:
    """True when DBOS runs in this process."""
    return _state["url"] is not None


def launched_on() -> str | None:
    """The database URL DBOS runs on in this process (None: it does not run)."""
    url = _state["url"]
    return str(url) if url is not None else None


def shutdown() -> None:
    """Stop DBOS in this process (waiting briefly for its threads) and forget the runtimes
    (:data:`ON_SHUTDOWN`)."""
    if _state["url"] is None:
        return
    dbos = dbos_with_workflows()
    dbos.DBOS.destroy(workflow_completion_timeout_sec=0)
    with contextlib.suppress(RuntimeError):  # a loop goes on: give it threads of its own again
        from concurrent.futures import ThreadPoolExecutor

        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
    file = sqlite_path(str(_state["url"]))

    if file is not None and not holds(str(_state["url"])):
        # closed (no rate-limit slots' connection either): the file tools may open its files
        confined.unguard(file.parent)
        confined.unguard(file.parent / "locks")
    _state.update(url=None, executor_id=None)
    for forget in ON_SHUTDOWN:
        forget()


async def query_items(workflow_id: str) -> list[Any]:
    """The item records of ``workflow_id`` (items.py), as :func:`query_steps` lists steps."""
    await dbos_module().DBOS._configure_asyncio_thread_pool()
    return await asyncio.to_thread(item_steps, system_database(), workflow_id)


async def query_item_page(workflow_ids: list[str], first: int) -> Any:
    """The item records of units ``workflow_ids`` for a page of ``runs show``
    (items.item_page: their count, the first ``first`` in start order, the model calls')."""
    await dbos_module().DBOS._configure_asyncio_thread_pool()
    return await asyncio.to_thread(item_page, system_database(), workflow_ids, first)


async def no_run_error(url: str, run_id: str) -> InputError:
    """The error of a command given run ``run_id`` that database ``url`` (open) does not hold:
    ``no durable run 'RUN' in URL`` (password masked) and, when ``run_id`` looks like a slip of
    one of the runs it holds, a ``hint:`` naming it (run_info.no_run_message)."""
    roots = await query_workflows(name=RUN_WORKFLOW, load_input=False, load_output=False)
    return InputError(no_run_message(run_id, safe_url(url), [w.workflow_id for w in roots]))


async def recorded_input(run_id: str) -> dict[str, Any]:
    """The input ``agentflow.run`` was started with for ``run_id``.  Raises
    InputError when it cannot be read (records.unreadable_error)."""

    found = await query_workflows(workflow_ids=[run_id], load_input=True)
    check_readable(run_id, found)
    if not found or not found[0].input:
        raise RunError(Code.VALIDATION, f"no durable run {run_id!r} in this database")
    started: dict[str, Any] = found[0].input["args"][0]
    return started


async def open_questions(
    run_id: str, workflows: list[Any]
) -> tuple[list[Question], list[Question]]:
    """The questions the unfinished units among ``workflows`` of run ``run_id`` published and
    have not taken an answer to: ``(waiting, answered)`` — answered ones were closed by a
    claim (answers.py: ``flowc answer`` while the run is stopped) that their unit takes when
    it goes on."""
    out = []
    for w in workflows:
        if w.status not in ("PENDING", "ENQUEUED"):
            continue
        events = await published(w.workflow_id)
        out.extend(published_questions(run_id, w.workflow_id, events))
    if not out:
        return [], []
    return split_closed(out, await claims(sorted({q.workflow_id for q in out})))


def lazy_labels(run_id: str, family: list[Any]) -> Callable[[str], str | None]:
    """Step path → the step as run ``run_id``'s `.flow` writes it (shown.Labels), the plan
    loaded from the root of ``family`` only when first asked (a row found damaged: ``answer``
    and ``cancel`` load no plan otherwise), None when it cannot be."""
    made: list[Labels] = []

    def label(path: str) -> str | None:
        if not made:
            root = next((w for w in family if w.workflow_id == run_id), None)
            fine = root is not None and root_problem(root) is None
            made.append(Labels(plan_of(root.input["args"][0]) if root and fine else None))
        return made[0].label(path)

    return label


async def check_recorded(
    run_id: str, family: list[Any], label: Callable[[str], str | None] | None = None
) -> None:
    """Check every row run ``run_id`` recorded besides its units' own (checked by
    records.check_readable): each unit's operations and item records
    (records.record_problem), the questions it published and their claims — what a resumed
    run replays and reads.  Raises the InputError of records.unreadable_error (the step named
    by ``label``, step path → the `.flow`'s name, when given); nothing is run first."""
    ids = [w.workflow_id for w in family]
    with reading(run_id):
        for wfid in ids:
            for step in [*await query_steps(wfid), *await query_items(wfid)]:
                check_record(run_id, step, label)
            await published(wfid)
        await claims(ids)
        await last_claim(ids)
        await check_messages(ids)


async def published(workflow_id: str) -> dict[str, Any]:
    """The events unit ``workflow_id`` published (DBOS ``get_all_events``), each question
    checked (records.question_problem).  Raises
    :class:`~agentflow.runtime.durable.records.UnreadableRecord` (or its ForeignRecord) for
    one that is not what agentflow publishes."""
    events = await dbos_with_workflows().DBOS.get_all_events_async(workflow_id)
    if not isinstance(events, dict):
        raise ForeignRecord("the events of a unit are not a mapping")
    for key, value in events.items():
        if (reason := question_problem(key, value)) is not None:
            raise ForeignRecord(reason)
    return events


async def waiting_questions(run_id: str, workflows: list[Any]) -> list[Question]:
    """The questions of run ``run_id`` still waiting for an answer (:func:`open_questions`)."""
    return (await open_questions(run_id, workflows))[0]
