"""A durable run's process never loses SQLite's locks on its own database (issue 28: a
`flowc resume` died of SIGBUS when another process opened the database).

The class: a process's POSIX record locks on a file are all dropped when *any* descriptor of
that file is closed by the process.  A file tool of the run (`read_file`, `grep` over the
workspace, which holds `.flowc/`) that opened and closed the WAL index `durable.sqlite-shm`
dropped the lock by which SQLite tells other processes "this index is in use"; the next process
to open the database (`flowc answer`, `flowc runs`) then truncated the index under the run's
memory mapping, and the run died of SIGBUS at its next read.  Here a durable run's tools try
every way in; afterwards another process must still see the run's process holding its lock on
the `-shm` (F_GETLK on SQLite's DMS byte), and the tools must have been refused."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentflow
from agentflow.runtime.durable.database import lock_path
from agentflow.runtime.durable.dbos_engine import shutdown

PLAN = """\
version: 1
name: peek
steps:
  - id: E0
    tool_name: try
    input:
      do: {id: R, tool_name: builtin__read_file, input: {path: ".flowc/durable.sqlite-shm"}}
      catch: {id: C, tool_name: value, input: {value: "{{ error.message }}"}}
  - id: E1
    tool_name: builtin__grep
    input: {pattern: "zzz-not-there", path: "."}
  - id: E2
    tool_name: try
    input:
      do: {id: W, tool_name: builtin__write_file,
           input: {path: ".flowc/durable.sqlite-wal", content: "x"}}
      catch: {id: D, tool_name: value, input: {value: "{{ error.message }}"}}
  - id: E3
    tool_name: try
    input:
      do: {id: L, tool_name: builtin__read_file, input: {path: ".flowc/locks/LOCK"}}
      catch: {id: F, tool_name: value, input: {value: "{{ error.message }}"}}
finish:
  mode: output
  output: "{{ {read: E0, write: E2, lock: E3} }}"
"""

#: Another process's view of the lock SQLite holds on the WAL index's DMS byte (unix VFS:
#: byte 120 + 8 of the -shm) while it has the index mapped: "held" by a reader, or "free".
PROBE = """\
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
req = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 128, 1, 0)
kind = struct.unpack("hhqqi", fcntl.fcntl(fd, fcntl.F_GETLK, req))[0]
print("free" if kind == fcntl.F_UNLCK else "held")
"""


def test_a_durable_runs_tools_never_open_its_database_so_it_keeps_its_locks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = lock_path(f"sqlite:///{tmp_path}/.flowc/durable.sqlite", "peek-1")
    assert lock is not None
    (tmp_path / "plan.yaml").write_text(PLAN.replace("LOCK", lock.name))
    (tmp_path / "flow.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    try:
        result = asyncio.run(
            agentflow.run(
                tmp_path / "plan.yaml", {}, config=tmp_path / "flow.toml", durable=True,
                run_id="peek-1",
            )
        )  # fmt: skip
        assert result.status == "ok", result.error
        shm = tmp_path / ".flowc" / "durable.sqlite-shm"
        assert shm.exists() and os.path.getsize(shm) > 3
        # the engine still has the database open here: its lock must still be seen from outside
        probe = subprocess.run(
            [sys.executable, "-c", PROBE, str(shm)], capture_output=True, text=True, check=True
        )
        assert probe.stdout.strip() == "held", "the run's process lost its lock on the -shm"
        assert result.output["read"].startswith("'.flowc/durable.sqlite-shm' is the durable runs")
        assert "never read or write it" in result.output["write"]
        assert "a durable run's lock" in result.output["lock"]
    finally:
        shutdown()


def test_a_guarded_file_is_refused_through_a_link_too_and_free_again_once_unguarded(
    tmp_path: Path,
) -> None:
    from agentflow.runtime.tools import confined

    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "x.sqlite-shm").write_bytes(b"\0" * 64)
    (tmp_path / "alias").symlink_to("db")
    confined.guard(tmp_path / "db", ["x.sqlite-shm"], "the durable runs database")
    with confined.open_workspace(tmp_path) as ws:
        try:
            for parts in (("db", "x.sqlite-shm"), ("alias", "x.sqlite-shm")):
                with pytest.raises(confined.Guarded):
                    confined.resolve(ws, parts, final="open")
            with confined.resolve(ws, ("db",), final="dir") as loc:
                with pytest.raises(confined.Guarded):
                    confined.open_entry(loc.fd, "x.sqlite-shm")
                with pytest.raises(confined.Guarded):
                    confined.write_atomic(loc.fd, "x.sqlite-shm", b"x", None)
        finally:
            confined.unguard(tmp_path / "db")
        with confined.resolve(ws, ("alias", "x.sqlite-shm"), final="open") as loc:
            assert loc.fd >= 0
