"""A SQLite durable runs database damaged after it was opened fine (a table's page
overwritten: ``database disk image is malformed``) is one line from every durable command —
naming the file, SQLite's words and what to do — never a traceback (runtime/durable/
database.py ``database_problem``, applied by every command's ``on_engine`` dispatch)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow import api
from agentflow.cli import main
from agentflow.errors import ConfigError
from agentflow.runtime.durable.dbos_engine import shutdown

QUICK = "flow quick\nstage a -> int {\n  return 1\n}\n"


def _cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    shutdown()
    return result


def _damage(db: Path) -> None:
    """Overwrite the root page of the engine's ``workflow_status`` table (its schema stays)."""
    with sqlite3.connect(db) as conn:
        conn.execute("pragma wal_checkpoint(TRUNCATE)")
        (root,) = conn.execute(
            "select rootpage from sqlite_master where name = 'workflow_status'"
        ).fetchone()
        size = conn.execute("pragma page_size").fetchone()[0]
    data = bytearray(db.read_bytes())
    start = (root - 1) * size
    data[start + 8 : start + size] = b"Z" * (size - 8)
    db.write_bytes(bytes(data))


def test_every_durable_command_on_a_damaged_database_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "quick.flow").write_text(QUICK)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    done = _cli("run", "--durable", "--run-id", "a1", "quick.flow")
    assert done.exit_code == 0, done.output
    db = tmp_path / ".flowc" / "durable.sqlite"
    _damage(db)
    for command in (
        ["runs"], ["runs", "show", "a1"], ["resume", "a1"], ["answer", "a1", "x", "1"],
        ["cancel", "a1"], ["redrive", "a1"],
    ):  # fmt: skip
        result = _cli(*command)
        assert result.exit_code == 1, (command, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (command, result.stderr)
        assert lines[0].startswith(f"error: the durable runs database {db} cannot be used: ")
        assert "database disk image is malformed (hint: restore it from a backup" in lines[0]
        assert result.exception is None or isinstance(result.exception, SystemExit)
    with pytest.raises(ConfigError, match="cannot be used"):  # what `flowc ui` shows
        try:
            asyncio.run(api.list_durable_runs(f"sqlite:///{db}"))
        finally:
            shutdown()
