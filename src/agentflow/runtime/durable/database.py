"""Where the state of durable runs lives and how a process opens it (docs/durable.md
"Where runs are kept"): the database URL of a configuration, the engine a command goes to
(:func:`on_engine`: DBOS, or Temporal for ``temporal://``), launching or attaching to the
engine, and the per-run lock file that tells a run in progress from a stopped one.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from agentflow.core.redaction import safe_url as _safe_url
from agentflow.errors import ConfigError, FlowError, InputError
from agentflow.runtime.durable.dbos_launch import _state, database_url, launch
from agentflow.runtime.durable.dbos_system import sqlite_path, with_synchronous
from agentflow.runtime.durable.liveness import _pg_dsn
from agentflow.runtime.durable.records import held_secret
from agentflow.runtime.durable.temporal_client import url_for

if TYPE_CHECKING:
    from agentflow.runtime.config import Config


__all__ = [
    "attach",
    "database_for",
    "database_problem",
    "lock_path",
    "missing_database",
    "no_runs_reason",
    "on_engine",
    "open_database",
    "process_executor",
    "run_id_problem",
    "run_lock",
    "run_lock_key",
    "runs_alive",
    "safe_url",
    "sqlite_url_under",
]


F = TypeVar("F", bound=Callable[..., Any])


def database_for(config: Config, database: str | None = None) -> str:
    """The database URL of durable runs under ``config``: ``database`` when given, else
    ``[durable] database`` (``${VAR}`` expanded), a SQLite file — a path or a ``sqlite:///REL``
    URL — relative to the directory of ``flow.toml`` (the current directory without one). Raises ConfigError for an unset
    variable or a URL that is neither SQLite nor PostgreSQL."""

    if (database or "").startswith("temporal://") or (
        database is None and config.durable.engine == "temporal"
    ):
        return database or url_for(config)
    raw = database or config.durable.database

    def var(m: re.Match[str]) -> str:
        if m.group(1) not in os.environ:
            raise ConfigError(
                f"{config.where()}: [durable] database: environment variable {m.group(1)} is "
                "not set"
            )
        return os.environ[m.group(1)]

    raw = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", var, raw)
    if database is None:  # written in flow.toml: relative to its directory, like a plain path
        raw = sqlite_url_under(raw, config.base_dir())
    try:
        return with_synchronous(database_url(raw, config.base_dir()), config.durable.synchronous)
    except ValueError as e:
        where = "--database" if database else f"{config.where()}: [durable] database"
        raise ConfigError(f"{where}: {e}") from None


def sqlite_url_under(url: str, base: Path) -> str:
    """``url`` with the relative file of a ``sqlite:///REL[?query]`` URL made ``base / REL``
    (``[durable] database`` in ``flow.toml``: relative to the file's directory, as a plain
    path is; docs/reference/configuration.md "[durable]"); any other URL — ``sqlite:////abs``,
    ``sqlite:///:memory:``, PostgreSQL, a plain path — as it is."""
    if not url.startswith("sqlite:///"):
        return url
    name, sep, query = url[len("sqlite:///") :].partition("?")
    if not name or name == ":memory:" or Path(name).is_absolute():
        return url
    return f"sqlite:///{base / name}{sep}{query}"


def on_engine(backend: ModuleType) -> Callable[[F], F]:
    """A command of durable runs that the Temporal backend (``backend``: temporal_manage.py
    for inspecting and messaging runs, temporal_runs.py for running them; the function of the
    same name) does instead when its ``url`` is ``temporal://``: the one place a command
    picks its engine.  The caller names the backend module, so reading a run loads only the
    read side of Temporal's (docs/decisions.md "What flowc runs show loads")."""

    def wrap(fn: F) -> F:
        import inspect

        signature = inspect.signature(fn)
        names = [n for n in ("run_id", "reuse") if n in signature.parameters]

        @functools.wraps(fn)
        async def dispatch(*args: Any, **kw: Any) -> Any:
            url = kw["url"] if "url" in kw else args[0]
            if names:  # an id that cannot be a run's is refused before the engine sees it
                given = signature.bind_partial(*args, **kw).arguments
                for name in names:
                    value = given.get(name)
                    new = name == "run_id" and fn.__name__ == "run_durable"
                    wrong = run_id_problem(value, new=new) if isinstance(value, str) else None
                    if wrong is not None:
                        raise InputError(wrong)
            if isinstance(url, str) and url.startswith("temporal://"):
                return await getattr(backend, fn.__name__)(*args, **kw)
            try:
                return await fn(*args, **kw)
            except Exception as e:
                problem = database_problem(e, url) if isinstance(url, str) else None
                if problem is None:
                    raise
                raise problem from None

        return dispatch  # type: ignore[return-value]

    return wrap


def open_database(
    url: str, *, executor_id: str, queues: list[str] | None = None, recovering: str | None = None
) -> None:
    """Launch the durable engine on ``url`` in this process as ``executor_id`` (``recovering``:
    the run this process resumes, :func:`~agentflow.runtime.durable.dbos_engine.launch`)."""

    _refuse_ambiguous_user_part(url)
    try:
        launch(url, executor_id=executor_id, queues=queues, recovering=recovering)
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001 - a database that cannot be opened
        # the driver's own words, without SQLAlchemy's wrapping and "Background on this error" link
        reason = str(getattr(e, "orig", None) or e).strip()
        raise ConfigError(
            f"cannot open the durable runs database {safe_url(url)}: {reason}"
        ) from None


#: What a run id chosen for a new run (``--run-id``) may be: a letter or digit, then letters,
#: digits and ``._~:@+=-``, at most :data:`RUN_ID_MAX` characters (docs/durable.md "Run ids").
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._~:@+=-]*")
RUN_ID_MAX = 200
#: The longest id looked up (``runs show``, ``answer``, …): longer ones name no run (an
#: earlier agentflow took ids of any alphabet, up to what its lock file's name allowed).
LOOKUP_MAX = 1000


def run_id_problem(run_id: str, *, new: bool) -> str | None:
    """Why ``run_id`` cannot be the id of a new run (``new``) or of any run: too long, or (a
    new one) characters outside :data:`RUN_ID`; None when it can be."""
    if new:
        if len(run_id) > RUN_ID_MAX:
            return f"a run id is at most {RUN_ID_MAX} characters, not {len(run_id)}"
        if not RUN_ID.fullmatch(run_id):
            return (
                f"{_shown_id(run_id)} is not a run id: a letter or digit, then letters, digits "
                "and . _ ~ : @ + = - (no / or spaces)"
            )
        held = held_secret(run_id)
        if held is not None:  # stored in every durable table, and shown as *** everywhere
            return (
                f"the run id holds {held}: a run id is stored in the durable runs database and "
                "shown by every command, and a secret is never stored nor shown; choose another "
                "--run-id"
            )
        return None
    if len(run_id) > LOOKUP_MAX:
        return f"no durable run has an id of {len(run_id)} characters (at most {RUN_ID_MAX})"
    return None


def redrive_id(run_id: str, suffix: str) -> str:
    """The id of a redrive of ``run_id``: its own id before any earlier redrive's ``~…``, then
    ``~suffix`` — made a valid new id (:data:`RUN_ID`, at most :data:`RUN_ID_MAX`) whatever
    ``run_id`` is: a run an earlier version made may have any id (`my run`, `a/b`, `_x`), and a
    199-character one leaves no room for the suffix. Characters outside the alphabet become
    ``-``, a first one that is not a letter or digit gets an ``r`` before it, the base is cut to
    fit."""
    base = run_id.split("~", 1)[0]
    base = "".join(c if RUN_ID.fullmatch("a" + c) else "-" for c in base)
    if not base[:1].isascii() or not base[:1].isalnum():
        base = "r" + base
    tail = f"~{suffix}"
    return base[: RUN_ID_MAX - len(tail)] + tail


def _shown_id(run_id: str) -> str:
    import json

    text = json.dumps(run_id, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + '…"'


def database_problem(error: BaseException, url: str) -> ConfigError | None:
    """The one-line error of a failure of the durable runs database ``url`` itself — SQLite's
    (``database disk image is malformed``, ``file is not a database``, a full disk, a lock
    held too long), SQLAlchemy's wrapping of it, or PostgreSQL's driver's — naming the
    database, the driver's own words and what to do; None for any other error (found in
    ``error``'s causes too).  Every durable command reports it so (docs/durable.md "Errors")."""
    import sqlite3
    import sys

    kinds: list[type[BaseException]] = [sqlite3.Error]
    if "sqlalchemy" in sys.modules:
        kinds.append(sys.modules["sqlalchemy"].exc.SQLAlchemyError)
    if "psycopg" in sys.modules:
        kinds.append(sys.modules["psycopg"].Error)
    cause = _first_of(error, tuple(kinds))
    if cause is None:
        return None
    orig = getattr(cause, "orig", None) or cause
    reason = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
    file = sqlite_path(url)
    if file is not None:
        where = f"the durable runs database {file}"
        hint = (
            "restore it from a backup, or move it away and a new, empty one is made; "
            f"`sqlite3 {file} .recover` may save what is left of its runs"
        )
    else:
        where = f"the durable runs database {safe_url(url)}"
        hint = "check the database server and its log"
    return ConfigError(f"{where} cannot be used: {reason} (hint: {hint})")


def _first_of(error: BaseException, kinds: tuple[type[BaseException], ...]) -> Any:
    """The first exception of ``kinds`` in ``error`` and its causes (or contexts), or None."""
    seen: set[int] = set()
    at: BaseException | None = error
    while at is not None and id(at) not in seen:
        if isinstance(at, FlowError):  # worded already (a launch's "cannot open …")
            return None
        if isinstance(at, kinds):
            return at
        seen.add(id(at))
        at = at.__cause__ or (None if at.__suppress_context__ else at.__context__)
    return None


def missing_database(url: str) -> Path | str | None:
    """What of database ``url`` does not exist: the file of a SQLite database (a
    :class:`~pathlib.Path`), or ``url`` itself, its password masked (:func:`safe_url`), for a
    PostgreSQL database its server does not have; None when it exists (or its server cannot be
    asked: the engine reports that).  A command that only reads or messages runs has nothing to
    do there, and creates nothing (the engine would create a PostgreSQL database it opens)."""

    file = sqlite_path(url)
    if file is not None:
        return file if not file.exists() else None
    if _is_postgres(url) and _postgres_state(url) == "missing":
        return safe_url(url)
    return None


def no_runs_reason(url: str) -> str | None:
    """Why a command that only reads or messages runs finds nothing in database ``url`` and
    must not open it (opening creates what is missing): ``no database at PATH`` (SQLite) or
    ``no database at URL`` (PostgreSQL, password masked) when it does not exist; ``no run was
    ever started in URL`` for a PostgreSQL database without the engine's tables (an empty one:
    its schema is made only when a run starts, docs/decisions.md "Read-only commands on
    PostgreSQL"); None when it can be opened for reading."""

    file = sqlite_path(url)
    if file is not None:
        return f"no database at {file}" if not file.exists() else None
    if not _is_postgres(url):
        return None
    state = _postgres_state(url)
    if state == "missing":
        return f"no database at {safe_url(url)}"
    if state == "empty":
        return f"no run was ever started in {safe_url(url)}"
    return None


def _postgres_state(url: str) -> str:
    """``missing`` when the server of PostgreSQL ``url`` has no such database, ``empty`` when
    the database has no ``dbos.workflow_status`` table (no run ever started there), else
    ``ready`` (also when the server cannot be reached: opening it then says why).  Connects,
    reads, creates nothing."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    dsn = _pg_dsn(url)
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            row = conn.execute("SELECT to_regclass('dbos.workflow_status')").fetchone()
            return "empty" if row is None or row[0] is None else "ready"
    except psycopg.Error:
        pass
    # the connection failed: the server says whether the database exists (as the engine asks
    # before it creates one: its maintenance database `postgres`)
    try:
        parts = conninfo_to_dict(dsn)
        name = parts.get("dbname") or parts.get("user")
        if not name:
            return "ready"
        with psycopg.connect(dsn, dbname="postgres", autocommit=True, connect_timeout=10) as conn:
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            return "ready" if found.fetchone() else "missing"
    except psycopg.Error:
        return "ready"


def holds_run(url: str, run_id: str) -> bool | None:
    """Whether SQLite database ``url`` holds durable run ``run_id`` (DBOS's ``workflow_status``
    row of its root, read without opening the engine or writing anything); False for a file
    that does not exist or cannot be read as one, None for a PostgreSQL or Temporal ``url``
    (not looked into here)."""
    import sqlite3

    file = sqlite_path(url)
    if file is None:
        return None
    if not file.is_file():
        return False
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute(
                "SELECT 1 FROM workflow_status WHERE workflow_uuid = ? LIMIT 1", (run_id,)
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None


def attach(url: str, run_id: str | None = None) -> None:
    """Open ``url`` for inspecting or messaging runs: the engine this process already runs on
    ``url`` (a server's, a run's) as it is, else a launch as this command-line process.
    Raises InputError, naming ``run_id``, for a database that does not exist or (PostgreSQL)
    holds no run (nothing is created: see :func:`no_runs_reason`)."""

    if _state["url"] != url:
        reason = no_runs_reason(url)
        if reason is not None:
            what = f"no durable run {run_id!r}" if run_id else "no durable runs"
            raise InputError(f"{what} ({reason})")
        open_database(url, executor_id=f"cli:{os.getpid()}", queues=[])


def _refuse_ambiguous_user_part(url: str) -> None:
    """Refuse a URL whose authority holds more than one ``@`` (``postgresql://u:p@ss@h/db``):
    the driver splits it at the first and would name the rest of the password as the host in its
    error; the user part must write ``@`` as ``%40``. Raises :class:`ConfigError` (the URL shown
    without its password)."""
    if "://" not in url:
        return
    rest = url.split("://", 1)[1]
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=-1)
    netloc = rest if cut < 0 else rest[:cut]
    if netloc.count("@") > 1:
        raise ConfigError(
            f"the durable runs database URL {safe_url(url)} has `@` in its user name or password: "
            "write it as `%40` there (the URL's user part ends at its first `@`)"
        )


def safe_url(url: str) -> str:
    """``url`` as it may be shown: a password in its user part is ``***``
    (``postgresql://u:***@h/db``), as is a ``password=`` query parameter (libpq reads one
    there too) and any other credential-named one (core/redaction.safe_url); a URL with no
    password is shown as given (``postgresql://u@h/db``)."""
    return _safe_url(url)


def process_executor(run_id: str) -> str:
    """The engine's executor id for a process that starts or resumes run ``run_id``:
    ``run:RUN@xxxxxx``, new for each process, so nothing is pending under it when the engine
    starts (its start-up recovery takes every pending workflow of the executor id it
    launches with)."""
    return f"run:{run_id}@{secrets.token_hex(3)}"


def lock_path(url: str, run_id: str) -> Path | None:
    """The lock file of run ``run_id`` on SQLite database ``url`` (None on PostgreSQL, whose
    runs are locked by an advisory lock: :func:`run_lock_key`): ``locks/NAME-HASH.lock`` beside
    the database, NAME the id's first 60 characters with any but letters, digits, ``-``, ``_``
    and ``.`` as ``_``, HASH 16 hex digits of its SHA-256 — one file per run id (``x/y`` and
    ``x_y`` have two), of a bounded length whatever the id's (docs/decisions.md "Run locks")."""
    if not url.startswith("sqlite:///"):
        return None
    db = Path(url[len("sqlite:///") :].split("?", 1)[0])
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in run_id[:60])
    digest = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return db.parent / "locks" / f"{safe}-{digest}.lock"


def run_lock_key(run_id: str) -> int:
    """The PostgreSQL advisory lock key of run ``run_id``: a signed 64-bit hash (the fleet
    workers' keys, liveness.py, hash another text: the two never meet)."""
    digest = hashlib.blake2b(f"agentflow run {run_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgresql+", "postgres://"))


def _running_elsewhere(run_id: str, where: str) -> InputError:
    return InputError(f"run {run_id} is running in another process (its lock {where} is held)")


@contextlib.contextmanager
def run_lock(url: str, run_id: str) -> Any:
    """Hold the lock of ``run_id`` while this process runs it (released by the OS, or the
    database server, when the process dies, however it dies).  Raises InputError when another
    process holds it.  On SQLite an ``flock`` on :func:`lock_path`; on PostgreSQL a
    session-level advisory lock (:func:`run_lock_key`) on a connection of its own, held for
    the block (docs/durable.md "Where runs are kept")."""
    if _is_postgres(url):
        import psycopg

        conn = psycopg.connect(_pg_dsn(url), autocommit=True)
        try:
            # a process whose machine vanishes (no FIN) frees the run within ~25 s
            for setting, value in (("idle", 10), ("interval", 5), ("count", 3)):
                conn.execute(f"SET tcp_keepalives_{setting} = {value}")
            row = conn.execute(
                "SELECT pg_try_advisory_lock(%s)", (run_lock_key(run_id),)
            ).fetchone()
            if not (row and row[0]):
                raise _running_elsewhere(run_id, "on the database")
            yield
        finally:
            conn.close()  # the server releases the lock with the session
        return
    path = lock_path(url, run_id)
    if path is None:
        yield
        return
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fh = path.open("a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise _running_elsewhere(run_id, str(path)) from None
        legacy = _legacy_lock_path(url, run_id)
        if legacy is not None and _held(legacy):  # a process of an earlier flowc runs it
            raise _running_elsewhere(run_id, str(legacy))
        yield
    finally:
        fh.close()


def _legacy_lock_path(url: str, run_id: str) -> Path | None:
    """The lock file an earlier flowc (before stop 43) held for ``run_id``: ``locks/RUN.lock``
    (``/`` as ``_``), which a process of that version may still hold during an upgrade — looked
    at, never created; None when no such name can exist."""
    if not url.startswith("sqlite:///"):
        return None
    name = f"{run_id.replace('/', '_')}.lock"
    if len(name.encode("utf-8", "surrogatepass")) > 255 or name.startswith("."):
        return None
    return Path(url[len("sqlite:///") :].split("?", 1)[0]).parent / "locks" / name


def _held(path: Path) -> bool:
    """True when a process holds an ``flock`` on the existing file ``path``."""
    import fcntl

    try:
        fh = path.open("r")
    except OSError:
        return False
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


def runs_alive(url: str, run_ids: list[str]) -> set[str]:
    """The ids among ``run_ids`` whose lock a process holds (their process lives): on SQLite
    each lock file tried; on PostgreSQL one look at ``pg_locks``; every id without locks (other
    URLs)."""
    if _is_postgres(url):
        if not run_ids:
            return set()
        import psycopg

        keys = {run_lock_key(r) & 0xFFFFFFFFFFFFFFFF: r for r in run_ids}
        with psycopg.connect(_pg_dsn(url), autocommit=True) as conn:
            rows = conn.execute(
                "SELECT classid::bigint, objid::bigint FROM pg_locks WHERE locktype = 'advisory'"
                " AND objsubid = 1 AND granted AND database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchall()
        return {keys[(c << 32) | o] for c, o in rows if (c << 32) | o in keys}
    alive = set()
    for run_id in run_ids:
        path = lock_path(url, run_id)
        if path is None:
            alive.add(run_id)
            continue
        legacy = _legacy_lock_path(url, run_id)
        if _held(path) or (legacy is not None and _held(legacy)):
            alive.add(run_id)
    return alive
