"""Where each durable run was started: a per-user index, so the commands that take a run id
(``flowc runs show``, ``answer``, ``cancel``, ``resume``, ``redrive``) find a run's database
from any directory (docs/durable.md "Which database a command reads").

A run's database is its ``flow.toml``'s ``[durable] database`` — the ``flow.toml`` found from
the flow's directory (docs/reference/configuration.md "Which flow.toml") — while a command
that acts on no file finds its ``flow.toml`` from the current directory.  Started elsewhere
(a parent directory, a sibling, another terminal where the printed ``flowc answer …`` is
pasted) such a command would look in another database.  So each durable run, as it starts,
appends one line to ``$XDG_STATE_HOME/agentflow/runs.jsonl`` (``~/.local/state/…``; mode
0600 in a directory of mode 0700): its id, its SQLite database's absolute path — or a
PostgreSQL or Temporal URL with any password masked (core/redaction.safe_url), never as given
—, its ``flow.toml``'s absolute path, whether the database was its own ``--database``, and the
directory it was started in.
:func:`recall` gives a run's latest line.  The index is a hint, never a source of truth:
written best effort (a run never fails for it; a bad line is skipped; an index that is not a
regular file is never read, written or waited on), read only when the current directory's
database does not hold the run, and kept to the last :data:`KEEP` runs.  Nothing read from it
executes: it names files, which the commands open as they would open ``--config`` /
``--database``.
"""

from __future__ import annotations

import json
import math
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from agentflow.core.redaction import safe_url

__all__ = ["KEEP", "IndexEntry", "index_path", "recall", "recent", "remember"]

#: The runs the index keeps (the oldest lines go when it holds twice as many).
KEEP = 2000
_NAME = "runs.jsonl"


@dataclass(frozen=True)
class IndexEntry:
    """One durable run's start: ``run_id``; ``database``, the absolute path of its SQLite
    database (None on PostgreSQL or Temporal); ``config``, the absolute path of the
    ``flow.toml`` it read (None: none); ``at``, when it started (epoch seconds); ``own``, the
    database was given with ``--database`` (not its ``flow.toml``'s); ``cwd``, the absolute
    directory it was started in (None on lines written before it was recorded), against which
    its recorded relative paths (the flow file) resolve; ``url``, a database that is not a
    SQLite file (PostgreSQL, Temporal), its password masked (None: SQLite, or a line written
    before it was recorded)."""

    run_id: str
    database: str | None
    config: str | None
    at: float
    own: bool = False
    cwd: str | None = None
    url: str | None = None


def index_path(env: dict[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/agentflow/runs.jsonl`` (``~/.local/state/agentflow/runs.jsonl``)."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(base):  # the XDG spec: a relative path is ignored
        base = os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "agentflow" / _NAME


def remember(run_id: str, url: str, config: Path | None, *, own: bool = False) -> None:
    """Append run ``run_id``'s line (``url``: its database, a SQLite file's path or another
    URL with its password masked; ``config``: its ``flow.toml``; ``own``: ``url`` was given with ``--database``);
    best effort: an unwritable index — or one that is not a regular file (a FIFO, a device) —
    is left as it is, never waited on, and the run goes on.  A line starts on a line of its
    own when the file's last one was cut short."""
    database = _sqlite_file(url)
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    line = json.dumps(
        {
            "run": run_id,
            "database": str(database.resolve()) if database is not None else None,
            "config": str(config.resolve()) if config is not None else None,
            "at": round(time.time(), 3),
            "own": own,
            "cwd": cwd,
            "url": safe_url(url) if database is None else None,
        },
        ensure_ascii=False,
    )
    path = index_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o600)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return
            lead = b""
            if info.st_size and os.pread(fd, 1, info.st_size - 1) != b"\n":
                lead = b"\n"  # the last line was cut short: it stays a bad line of its own
            # one write: lines of concurrent runs stay whole
            os.write(fd, lead + (line + "\n").encode())
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > KEEP * 2 * 400:  # about twice KEEP lines
            _trim(path)
    except OSError:
        pass


def _sqlite_file(url: str) -> Path | None:
    """The file of a ``sqlite:///PATH`` URL (durable/dbos_system.sqlite_path, not imported: a
    plain run loads nothing of the durable engine's), None for another kind or in memory."""
    if not url.startswith("sqlite:///"):
        return None
    name = url[len("sqlite:///") :].split("?", 1)[0]
    return None if name in ("", ":memory:") else Path(name)


def _trim(path: Path) -> None:
    """Keep the last :data:`KEEP` lines (written aside, then renamed over the index)."""
    data = _read(path)
    if data is None:
        return
    lines = data.splitlines(keepends=True)[-KEEP:]
    aside = path.with_name(f".{_NAME}.{os.getpid()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"".join(lines))
    finally:
        os.close(fd)
    os.replace(aside, path)


def _read(path: Path) -> bytes | None:
    """The bytes of ``path`` when it is a regular file (opened without blocking: a FIFO put
    in its place is never waited on), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _entry(line: str) -> IndexEntry | None:
    """The entry of one line, or None when it is not one (cut short, edited, of another
    shape): every field's type is checked, a bad line is skipped."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    run, database, config = data.get("run"), data.get("database"), data.get("config")
    at, own, cwd = data.get("at", 0), data.get("own", False), data.get("cwd")
    url = data.get("url")
    if not isinstance(run, str) or not run:
        return None
    if not all(v is None or isinstance(v, str) for v in (database, config, cwd, url)):
        return None
    if isinstance(at, bool) or not isinstance(at, int | float) or not isinstance(own, bool):
        return None
    try:
        when = float(at)
    except OverflowError:
        return None
    if not math.isfinite(when):
        return None
    return IndexEntry(run, database, config, when, own, cwd, url or None)


def _entries() -> list[IndexEntry]:
    data = _read(index_path())
    if data is None:
        return []
    text = data.decode("utf-8", errors="replace")
    return [entry for line in text.splitlines() if (entry := _entry(line)) is not None]


def recall(run_id: str) -> IndexEntry | None:
    """The latest start of run ``run_id`` the index holds, or None."""
    for entry in reversed(_entries()):
        if entry.run_id == run_id:
            return entry
    return None


def recent(limit: int = 3) -> list[IndexEntry]:
    """The latest run of each of the ``limit`` databases (or configurations) runs were
    started on most recently, newest first (``flowc runs``' hint where it finds none); an
    entry whose database or ``flow.toml`` file is gone (a deleted project) is left out."""
    seen: set[tuple[str | None, str | None, str | None]] = set()
    out = []
    for entry in reversed(_entries()):
        key = (entry.database, entry.config, entry.url)
        if key in seen:
            continue
        seen.add(key)
        if not all(p is None or os.path.isfile(p) for p in key[:2]):
            continue
        out.append(entry)
        if len(out) == limit:
            break
    return out
