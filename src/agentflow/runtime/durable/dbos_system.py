"""The DBOS of this process, read directly: the dbos module, its system database and
the SQLite engine it is given (docs/durable.md; docs/decisions.md "Start-up": importing this
module imports neither DBOS nor SQLAlchemy).  Below the engine (:mod:`.dbos_engine`) and the
helpers that read its records (:mod:`.answers`, :mod:`.liveness`, :mod:`.ratelimit`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agentflow.errors import ConfigError

__all__ = [
    "dbos_instance",
    "dbos_module",
    "query_steps",
    "query_workflows",
    "SYNCHRONOUS",
    "sqlite_engine",
    "sqlite_path",
    "synchronous_of",
    "system_database",
    "with_synchronous",
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
    import sqlalchemy as sa
    from sqlalchemy import event

    url, level = synchronous_of(url)
    engine = sa.create_engine(url)

    @event.listens_for(engine, "connect")
    def _pragmas(conn: Any, _record: Any) -> None:  # the pragmas DBOS sets, plus WAL
        conn.isolation_level = "IMMEDIATE"
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={level.upper()}")

    return engine


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


def dbos_instance() -> Any:
    from dbos._dbos import _get_dbos_instance as instance

    return instance()
