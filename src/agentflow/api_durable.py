"""The api of durable runs seen from outside: what ``flowc runs``, ``flowc answer``, ``flowc
cancel`` and ``flowc ui`` do (docs/durable.md).  :mod:`agentflow.api` re-exports every public
name here; starting and resuming a durable run, and being a worker, is :mod:`agentflow.api_run`'s.

This module loads the runtime's configuration and the durable runs' management, not the
durable engine itself (DBOS, SQLAlchemy: loaded when a database is opened; docs/decisions.md
"The api split by what it loads"), nor the executor, the model clients, the tools or
telemetry that running a step needs (docs/decisions.md "What flowc runs show loads").
"""

from __future__ import annotations

import dataclasses
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentflow.core.text import clean_json
from agentflow.errors import FlowError
from agentflow.runtime import interrupt
from agentflow.runtime.config import Config, load_config
from agentflow.runtime.durable import run_info
from agentflow.runtime.durable.answers import written_as
from agentflow.runtime.durable.database import (
    database_for,
    database_problem,
    holds_run,
    missing_database,
    open_database,
    redrive_id,
    run_id_problem,
)
from agentflow.runtime.durable.dbos_launch import launched_on, shutdown
from agentflow.runtime.durable.management import (
    answer,
    cancel,
    count_runs,
    list_runs,
    pending_questions,
    recorded_spec,
    show_run,
)
from agentflow.runtime.durable.records import UnreadableRun
from agentflow.runtime.durable.run_info import (
    Question,
    answer_command,
    answer_name,
    question_path,
)
from agentflow.runtime.run_index import recall, recent

__all__ = [
    "answer_durable",
    "answer_command",
    "answer_name",
    "answer_run",
    "answer_run_sync",
    "cancel_durable",
    "count_durable_runs",
    "run_id_error",
    "redrive_id",
    "durable_database",
    "durable_run_database",
    "recent_durable_databases",
    "list_durable_runs",
    "missing_durable_database",
    "open_durable",
    "recorded_run",
    "show_durable_run",
    "shutdown_durable",
]


def durable_database(
    *, config: Config | str | os.PathLike[str] | None = None, database: str | None = None
) -> str:
    """The URL of the durable runs database of ``config`` (``database``: a SQLite file or
    PostgreSQL URL given explicitly), as ``flowc runs --database`` resolves it (docs/durable.md).
    Raises :class:`ConfigError` for an unset ``${VAR}`` or an unknown kind of URL."""
    if not isinstance(config, Config):
        config = load_config(None if config is None else os.fspath(config))
    return database_for(config, database)


@dataclass(frozen=True)
class RunDatabase:
    """Where a command that takes durable run ``run_id`` finds it (:func:`durable_run_database`):
    ``url``, the database; ``config``, the ``flow.toml`` to read with it (None: the one given,
    or found from the current directory); ``note``, one line saying the run was found where it
    was started, not in the current directory's database (None when it was not);
    ``started_in``, then the directory it was started in, when the index recorded it."""

    url: str
    config: str | None = None
    note: str | None = None
    started_in: str | None = None


def durable_run_database(
    run_id: str,
    *,
    config: Config | str | os.PathLike[str] | None = None,
    database: str | None = None,
) -> RunDatabase:
    """The database of durable run ``run_id`` for ``flowc runs show``, ``answer``, ``cancel``,
    ``resume`` and ``redrive``: ``--config`` / ``--database`` when given; else the current
    directory's (:func:`durable_database`) when it holds the run — or is not a SQLite file,
    which cannot be looked into without opening it; else the one the run was started on, as
    the per-user index of runs recorded it (runtime/run_index.py), with a note; else
    the current directory's (whose command then says the run is not there).  Raises
    :class:`ConfigError` as :func:`durable_database` (docs/durable.md "Which database a
    command reads")."""
    url = durable_database(config=config, database=database)
    if config is not None or database is not None or holds_run(url, run_id) is not False:
        return RunDatabase(url)
    entry = recall(run_id)
    if entry is None:
        return RunDatabase(url)
    toml = entry.config if entry.config and Path(entry.config).is_file() else None
    if entry.database is not None and not Path(entry.database).is_file():
        return RunDatabase(url)  # the run's SQLite file is gone (or moved)
    if entry.database is None and toml is None:
        return RunDatabase(url)
    try:
        loaded = load_config(toml)
        other = database_for(loaded, entry.database)
    except FlowError:
        return RunDatabase(url)  # its flow.toml is broken now: the current directory's
    if other == url or holds_run(other, run_id) is False:
        return RunDatabase(url)
    # started with a database of its own (--database), or its flow.toml names another one now
    # (a relative `sqlite:///` URL was once the current directory's): named, not its
    # flow.toml's, so the note's command finds it
    by_config = toml is not None and not (entry.own and entry.database) and _names(loaded, entry)
    where = f"{_shown(toml or '')}'s database" if by_config else _shown(entry.database or "")
    return RunDatabase(
        other,
        toml,
        f"note: run {run_id} is in {where}, where it was started (not this directory's)",
        entry.cwd,
    )


def _names(config: Config, entry: Any) -> bool:
    """Whether ``config`` (a run's recorded flow.toml, loaded) names the SQLite file ``entry``
    (its index line) recorded, as it reads now: a command given ``--config`` finds the run
    there (False when its database cannot be said: an unset variable)."""
    if entry.database is None:
        return True  # PostgreSQL or Temporal: the flow.toml is the only name of it
    try:
        url = database_for(config)
    except FlowError:
        return False
    return url.split("?", 1)[0] == f"sqlite:///{entry.database}"


def _config_names(entry: Any) -> bool:
    """:func:`_names` of ``entry``'s own flow.toml; False when it no longer loads."""
    try:
        return _names(load_config(entry.config), entry)
    except FlowError:
        return False


def _shown(path: str) -> str:
    """``path`` relative to the current directory when it is below it, else as it is."""
    try:
        return os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd()) else path
    except (OSError, ValueError):
        return path


def recent_durable_databases(limit: int = 3) -> list[Any]:
    """The ``flow.toml`` files (or SQLite files) durable runs were started with most recently,
    newest first: :class:`agentflow.runtime.run_index.IndexEntry` each (``flowc runs``
    names them where it finds no runs)."""
    return [
        e if e.own or e.config is None or _config_names(e) else dataclasses.replace(e, own=True)
        for e in recent(limit)
    ]  # a flow.toml that names another database now: the run's own is named instead


def missing_durable_database(url: str) -> Path | str | None:
    """What of database ``url`` does not exist — the SQLite file, or for a PostgreSQL database
    its server does not have the URL (password masked) — else None: nothing to list, and
    listing creates nothing (``flowc runs``)."""
    return missing_database(url)


async def list_durable_runs(
    url: str, *, limit: int | None = 50, status: str | None = None, plan: str | None = None
) -> list[Any]:
    """The latest ``limit`` durable runs of database ``url`` (:func:`durable_database`; None:
    all of them), newest first: :class:`agentflow.runtime.durable.run_info.RunInfo` each (id,
    status, plan name, times in epoch seconds, waiting questions); none for a SQLite file that
    does not exist.  ``status`` (``running``, ``waiting``, ``stopped``, ``ok``, ``exited``,
    ``error``, ``aborted``, ``cancelled``, ``unreadable``, or ``unfinished``: the first three)
    and ``plan`` (a part of the plan's name) select in the query, before the limit
    (docs/reference/cli.md "flowc runs")."""
    return await list_runs(url, limit=limit, status=status, plan=plan)


def run_id_error(run_id: str, *, new: bool = False) -> str | None:
    """Why ``run_id`` cannot name a run — a ``new`` one's id (``--run-id``: a letter or digit,
    then letters, digits and ``._~:@+=-``, at most 200 characters), or one looked up (at most
    1,000 characters) — or None when it can (docs/durable.md "Run ids")."""
    return run_id_problem(run_id, new=new)


async def count_durable_runs(url: str) -> tuple[int, int]:
    """``(all, unfinished)``: the number of durable runs in ``url`` and of those not ended
    (running, waiting or stopped): what a page of :func:`list_durable_runs` leaves out is told
    from it (``flowc runs``' "N more" line)."""
    return await count_runs(url)


async def show_durable_run(
    url: str,
    run_id: str,
    *,
    values: bool = False,
    internals: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> Any:
    """Durable run ``run_id`` in detail (``flowc runs show``): a
    :class:`~agentflow.runtime.durable.run_info.RunInfo` with its steps in the `.flow`'s terms,
    cost so far, waiting questions (each with its JSON Schema and choices), error; ``values``:
    each step's recorded result too (a model's reply, a tool's result, an answer);
    ``internals``: the engine's own operations listed too (``flowc runs show --all``);
    ``limit``/``offset``: one page of the steps in start order (``steps_total`` counts them
    all; ``flowc runs show --limit/--offset``).  Raises :class:`InputError` for an unknown run
    or a negative count."""
    return await show_run(
        url, run_id, values=values, internals=internals, limit=limit, offset=offset
    )


async def recorded_run(
    url: str,
    run_id: str,
    *,
    redrive: bool = False,
    started_in: str | None = None,
    found_elsewhere: bool = False,
) -> dict[str, Any]:
    """What durable run ``run_id`` recorded when it started: ``plan_text``, ``plan_file``,
    ``input``, ``config``, ``workspace`` … (docs/durable.md).  Raises :class:`InputError` for
    an unknown run; ``redrive``: also for one ``flowc redrive`` refuses (it ended ok, or has
    not ended).  ``started_in``: the directory the run was started in when it was found from
    another one (:attr:`RunDatabase.started_in`): the flow path a message names, and the
    ``plan_file`` returned, are then ones that work from the current directory.
    ``found_elsewhere``: the run was found in another directory's database (a SQLite ``url``
    is then named in a hint to run its flow again)."""
    token = run_info.started_in.set(started_in)
    found = run_info.found_in.set(url if found_elsewhere and url.startswith("sqlite") else None)
    try:
        spec = await recorded_spec(url, run_id, redrive=redrive)
        if isinstance(spec.get("plan_file"), str):
            spec = {**spec, "plan_file": run_info.shown_plan_file(spec["plan_file"])}
        return spec
    finally:
        run_info.found_in.reset(found)
        run_info.started_in.reset(token)


async def answer_durable(url: str, run_id: str, step: str, value: Any) -> Any:
    """:func:`answer_run` on database ``url``: answer the question run ``run_id`` waits on at
    ``step`` — its step path (``E3/else``), or its name in the `.flow` (the ``let`` its answer
    is bound to, ``decision``, or its stage's name) when that names one waiting question — with
    ``value`` (a text is parsed as JSON unless the question wants text, then checked against
    the question's type and choices, exactly as ``flowc answer``; docs/reference/cli.md
    "flowc answer").  Returns the :class:`~agentflow.runtime.durable.run_info.Question`;
    raises :class:`InputError` (also for a name several waiting questions have, listing
    them)."""
    if "/" not in step:  # a path of a nested step is never a name
        pending = await pending_questions(url, run_id)
        named = question_path(pending, step, run_id)
        if named == step and not any(q.path == step for q in pending):
            named = await _closed_question_path(url, run_id, step)
        if named != step:  # its messages name it as written (`decision`), not `E0`
            token = written_as.set({named: step})
            try:
                return await answer(url, run_id, named, clean_json(value))
            finally:
                written_as.reset(token)
    return await answer(url, run_id, step, clean_json(value))


async def _closed_question_path(url: str, run_id: str, name: str) -> str:
    """The step path of the one question of run ``run_id`` that ``name`` names among those it
    asked already (its recorded ``ask`` steps, in the `.flow`'s terms), so that answering it
    by name is told it was already answered, as by its path; else ``name`` unchanged."""
    try:
        info = await show_run(url, run_id)
    except UnreadableRun:
        raise  # a row of the run cannot be read: the answer is refused, as by its path
    except FlowError:
        return name
    found = set()
    for s in info.steps:
        if s.get("kind") == "ask" and s.get("path"):
            asked = Question(run_id, run_id, str(s["path"]), "", label=s.get("label"))
            if name in asked.names():
                found.add(asked.path)
    # answered while its run was stopped, not taken yet: no step records it so far
    found.update(q.path for q in info.answered if name in q.names())
    return found.pop() if len(found) == 1 else name


async def answer_run(
    run_id: str,
    step: str,
    value: Any,
    *,
    config: Config | str | os.PathLike[str] | None = None,
    database: str | None = None,
) -> None:
    """Answer the question durable run ``run_id`` waits on at ``step`` (its step path, or its
    name in the `.flow`, as :func:`answer_durable` takes it) with ``value`` (a JSON text is
    parsed unless the question wants text), from any process.  Raises :class:`InputError` when
    no such question waits, the name fits several, or the value breaks its choices/schema."""
    await answer_durable(durable_database(config=config, database=database), run_id, step, value)


def answer_run_sync(
    run_id: str,
    step: str,
    value: Any,
    *,
    config: Config | str | os.PathLike[str] | None = None,
    database: str | None = None,
) -> None:
    """:func:`answer_run` for synchronous callers (a script, a web handler without an event
    loop): answers the question on an event loop of its own.  Raises as :func:`answer_run`
    does, and ``RuntimeError`` when this thread already runs an event loop (then ``await
    agentflow.answer_run(...)``; docs/reference/python-api.md "Async code and sync code")."""
    interrupt.run(
        answer_run(run_id, step, value, config=config, database=database),
        name="agentflow.answer_run_sync()",
        instead="`await agentflow.answer_run(...)`",
    )


async def cancel_durable(url: str, run_id: str) -> None:
    """Cancel durable run ``run_id`` of database ``url`` and its units (``flowc cancel``).
    Raises :class:`InputError` for an unknown run or one that has already ended."""
    await cancel(url, run_id)


def open_durable(
    *, config: Config | str | os.PathLike[str] | None = None, database: str | None = None
) -> str:
    """Start the durable engine in this process on the durable runs database of ``config``
    (``database``: a SQLite file or PostgreSQL URL given explicitly) and keep it for the
    durable runs this process starts or resumes next (``run(durable=True)``, ``resume_run``,
    ``ask_sync(durable=True)``) until :func:`shutdown_durable`: a run then pays neither the
    engine's start nor its stop, which a run that finds no engine running pays itself
    (~0.1 s together; docs/reference/python-api.md "A host that runs many durable runs").
    Returns the database's URL.  Idempotent on the same database; on another one the engine
    is started again there.  On Temporal (``temporal://``) it starts nothing (a Temporal run
    brings its own worker).  Raises :class:`ConfigError` for a database that cannot be used
    (said in one line, as every durable command says it)."""
    url = durable_database(config=config, database=database)
    if url.startswith("temporal://") or launched_on() == url:
        return url
    try:
        open_database(url, executor_id=f"host:{os.getpid()}@{secrets.token_hex(3)}", queues=[])
    except Exception as e:
        problem = database_problem(e, url)
        if problem is None:
            raise
        raise problem from None
    return url


def shutdown_durable() -> None:
    """Stop the durable engine in this process if it runs (idempotent): the one
    :func:`open_durable` started, or a server's."""
    shutdown()
