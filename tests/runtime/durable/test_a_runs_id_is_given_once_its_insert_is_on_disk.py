"""A durable run's root is inserted without an fsync of its own on SQLite at ``synchronous =
"full"`` (issue 35, docs/decisions.md "The root's insert is synced beside it"): a thread syncs
the database's WAL while the root starts, and the run's id (``on_start``), then its events,
come only once that sync has ended, so nothing tells of a run a power loss could lose.  At
``normal`` nothing is synced: the level itself says a power loss may lose the last commits."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import event
from support.durable_project import NOTE_TOOLS, NOTES_PLAN, open_durable_project

import agentflow
from agentflow.runtime.durable import dbos_engine
from agentflow.runtime.durable.dbos_system import system_database

#: how long the test's fsync takes: longer than the run would without it
SLOW_S = 0.5


class _Seen:
    """What the run showed, and when (monotonic seconds)."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.first_event: float | None = None
        self.synced: list[tuple[str, float]] = []
        self.inserts: list[int] = []

    def handle(self, _event: object) -> None:
        if self.first_event is None:
            self.first_event = time.monotonic()


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, synchronous: str | None) -> _Seen:
    durable = f'[durable]\nsynchronous = "{synchronous}"\n' if synchronous else ""
    files = {"notes.yaml": NOTES_PLAN, "tools.py": NOTE_TOOLS}
    config = open_durable_project(tmp_path, monkeypatch, files, durable)
    seen = _Seen()
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:  # a slow disk, and which file was synced
        if threading.current_thread() is threading.main_thread():
            real_fsync(fd)
            return
        time.sleep(SLOW_S)
        real_fsync(fd)
        seen.synced.append((os.readlink(f"/proc/self/fd/{fd}"), time.monotonic()))

    def on_execute(conn, cursor, statement, params, context, many):
        if statement.startswith("INSERT INTO main.workflow_status"):
            seen.inserts.append(cursor.connection.execute("PRAGMA synchronous").fetchone()[0])

    def on_start(_run_id: str) -> None:
        seen.started = time.monotonic()

    engine = system_database().engine
    event.listen(engine, "before_cursor_execute", on_execute)
    monkeypatch.setattr(os, "fsync", slow_fsync)
    try:
        run = agentflow.run(
            tmp_path / "notes.yaml", {}, config=config, durable=True, sinks=[seen],
            on_start=on_start,
        )  # fmt: skip
        result = asyncio.run(asyncio.wait_for(run, 30))
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)
        dbos_engine.shutdown()
    assert result.status == "ok" and result.output == [2, 4], result.error
    return seen


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names the synced file by /proc")
def test_the_run_id_and_the_events_wait_for_the_sync_of_the_roots_insert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _run(tmp_path, monkeypatch, None)
    assert seen.inserts == [1]  # the root's insert: NORMAL, its fsync made beside it
    assert [Path(name).name for name, _ in seen.synced] == ["durable.sqlite-wal"]
    synced_at = seen.synced[0][1]
    assert seen.started is not None and seen.started >= synced_at
    assert seen.first_event is not None and seen.first_event >= seen.started  # the id first


def test_at_normal_the_insert_is_not_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    seen = _run(tmp_path, monkeypatch, "normal")
    assert seen.inserts == [1] and seen.synced == []
    assert seen.started is not None and seen.first_event is not None
