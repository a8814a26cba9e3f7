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

import agentflow
from agentflow.runtime.config import load_config
from agentflow.runtime.durable import dbos_engine
from agentflow.runtime.durable.database import database_for, open_database
from agentflow.runtime.durable.dbos_system import system_database

PLAN = """\
version: 1
name: notes
input_schema: {type: object}
steps:
  - {id: E0, tool_name: user__note, input: {n: 1}}
  - {id: E1, tool_name: user__note, input: {n: "{{ E0 }}"}}
finish: {mode: output, output: "{{ [E0, E1] }}"}
"""

TOOLS = '''\
def note(n: int) -> int:
    """Return 2n."""
    return 2 * n
'''

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


def _project(tmp_path: Path, synchronous: str | None) -> object:
    (tmp_path / "notes.yaml").write_text(PLAN)
    (tmp_path / "tools.py").write_text(TOOLS)
    durable = f'[durable]\nsynchronous = "{synchronous}"\n' if synchronous else ""
    (tmp_path / "flow.toml").write_text(
        '[tools]\nmodules = ["tools.py"]\nentry_points = false\n' + durable
    )
    return load_config(str(tmp_path / "flow.toml"))


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, synchronous: str | None) -> _Seen:
    monkeypatch.chdir(tmp_path)
    config = _project(tmp_path, synchronous)
    open_database(database_for(config), executor_id="test", queues=[])
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
