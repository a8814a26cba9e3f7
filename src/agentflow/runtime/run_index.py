"""Where each durable run was started: a per-user index, so the commands that take a run id
(``flowc runs show``, ``answer``, ``cancel``, ``resume``, ``redrive``) find a run's database
from any directory (docs/durable.md "Which database a command reads").

A run's database is its ``flow.toml``'s ``[durable] database`` — the ``flow.toml`` found from
the flow's directory (docs/reference/configuration.md "Which flow.toml") — while a command
that acts on no file finds its ``flow.toml`` from the current directory.  Started elsewhere
(a parent directory, a sibling, another terminal where the printed ``flowc answer …`` is
pasted) such a command would look in another database.  So each durable run, as it starts,
appends one line to ``$XDG_STATE_HOME/agentflow/runs.jsonl`` (``~/.local/state/…``; mode
0600 in a directory of mode 0700): its id, its SQLite database's absolute path — never a
PostgreSQL or Temporal URL, which may hold a password — and its ``flow.toml``'s absolute path.
:func:`recall` gives a run's latest line.  The index is a hint, never a source of truth:
written best effort (a run never fails for it), read only when the current directory's
database does not hold the run, and kept to the last :data:`KEEP` runs.  Nothing read from it
executes: it names files, which the commands open as they would open ``--config`` /
``--database``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KEEP", "IndexEntry", "index_path", "recall", "recent", "remember"]

#: The runs the index keeps (the oldest lines go when it holds twice as many).
KEEP = 2000
_NAME = "runs.jsonl"


@dataclass(frozen=True)
class IndexEntry:
    """One durable run's start: ``run_id``; ``database``, the absolute path of its SQLite
    database (None on PostgreSQL or Temporal); ``config``, the absolute path of the
    ``flow.toml`` it read (None: none); ``at``, when it started (epoch seconds)."""

    run_id: str
    database: str | None
    config: str | None
    at: float


def index_path(env: dict[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/agentflow/runs.jsonl`` (``~/.local/state/agentflow/runs.jsonl``)."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "agentflow" / _NAME


def remember(run_id: str, url: str, config: Path | None) -> None:
    """Append run ``run_id``'s line (``url``: its database, of which only a SQLite file's path
    is written; ``config``: its ``flow.toml``); best effort: an unwritable index is left as it
    is, and the run goes on."""
    database = _sqlite_file(url)
    line = json.dumps(
        {
            "run": run_id,
            "database": str(database.resolve()) if database is not None else None,
            "config": str(config.resolve()) if config is not None else None,
            "at": round(time.time(), 3),
        },
        ensure_ascii=False,
    )
    path = index_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())  # one write: lines of concurrent runs stay whole
        finally:
            os.close(fd)
        if path.stat().st_size > KEEP * 2 * 400:  # about twice KEEP lines
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
    lines = path.read_bytes().splitlines(keepends=True)[-KEEP:]
    aside = path.with_name(f".{_NAME}.{os.getpid()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"".join(lines))
    finally:
        os.close(fd)
    os.replace(aside, path)


def _entries() -> list[IndexEntry]:
    try:
        text = index_path().read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue  # a line cut short (a full disk): the others stand
        if not isinstance(data, dict) or not isinstance(data.get("run"), str):
            continue
        database, config, at = data.get("database"), data.get("config"), data.get("at")
        out.append(
            IndexEntry(
                data["run"],
                database if isinstance(database, str) else None,
                config if isinstance(config, str) else None,
                float(at) if isinstance(at, int | float) else 0.0,
            )
        )
    return out


def recall(run_id: str) -> IndexEntry | None:
    """The latest start of run ``run_id`` the index holds, or None."""
    for entry in reversed(_entries()):
        if entry.run_id == run_id:
            return entry
    return None


def recent(limit: int = 3) -> list[IndexEntry]:
    """The latest run of each of the ``limit`` databases (or configurations) runs were
    started on most recently, newest first (``flowc runs``' hint where it finds none)."""
    seen: set[tuple[str | None, str | None]] = set()
    out = []
    for entry in reversed(_entries()):
        key = (entry.database, entry.config)
        if key in seen:
            continue
        seen.add(key)
        out.append(entry)
        if len(out) == limit:
            break
    return out
