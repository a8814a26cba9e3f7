"""Starting a real ``flowc`` process and waiting, from outside, for a durable run to ask its
question: the tests of cancel, redrive, answers and tampered rows, and the answer-race battery,
share this."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def flowc(*args: str) -> list[str]:
    """The argv of ``flowc ARGS`` run by this interpreter."""
    return [sys.executable, "-m", "agentflow", *args]


def asked(db: Path, run_id: str, path: str | None = None) -> bool:
    """True once the SQLite database ``db`` records a question of ``run_id`` (the one at step
    ``path`` when given, any otherwise); False while the database or its tables are not made."""
    if not db.exists():
        return False
    if path is None:
        query, args = "key like 'question:%'", (run_id,)
    else:
        query, args = "key = ?", (run_id, f"question:{path}")
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            row = conn.execute(
                f"select 1 from workflow_events where workflow_uuid = ? and {query}", args
            ).fetchone()
    except sqlite3.OperationalError:  # the tables are not made yet
        return False
    return row is not None


def wait_asked(
    db: Path,
    run_id: str,
    proc: subprocess.Popen[bytes],
    path: str | None = None,
    *,
    poll: float = 0.05,
    limit: float = 120.0,
) -> None:
    """Wait until ``run_id`` asked (see :func:`asked`); AssertionError with the process's
    stderr when it ended first, or when ``limit`` seconds passed."""
    deadline = time.monotonic() + limit
    while not asked(db, run_id, path):
        if proc.poll() is not None:
            raise AssertionError(proc.communicate()[1].decode()[-2000:])
        if time.monotonic() > deadline:
            raise AssertionError(f"the run never asked {path or 'its question'}")
        time.sleep(poll)


def start_flowc(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """A ``flowc ARGS`` process started in ``cwd`` (stdin empty, stdout and stderr piped)."""
    return subprocess.Popen(
        flowc(*args),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


#: a flow that naps in the tool ``user__nap`` (of a `tools.py` the test writes), then asks
#: its agent ``helper`` for a ``Note``: a run to kill mid-tool (:func:`kill_when_started`)
NAPPING = """\
flow kt "t"
extern tool user__nap(s: number) -> text
use agent "helper" as helper
type Note { note: text }
stage s -> Note {
  let a = user__nap(s: 120.0)
  return agent(helper) { task "say ${a}" tools none expect Note }
}
"""


def kill_when_started(
    cwd: Path, marker: str, *args: str, env: dict[str, str] | None = None
) -> None:
    """Start ``flowc ARGS`` in ``cwd``, wait (up to 120 s) for its tool to write the file
    ``marker`` there, then kill the process: the run is left mid-tool.  A process that exits
    first fails the test with its stderr."""
    proc = start_flowc(cwd, *args, env=env)
    try:
        deadline = time.monotonic() + 120
        while not (cwd / marker).exists():
            assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline, "the tool never started"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.communicate()


def recorded_operations(project: Path) -> list[str]:
    """The names of the operations the SQLite database of ``project`` (DBOS) records so far:
    its steps' and agentflow's item records'; [] before the engine made its tables."""
    db = project / ".flowc" / "durable.sqlite"
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            tables = {row[0] for row in conn.execute("select name from sqlite_master")}
            names = [r[0] for r in conn.execute("select function_name from operation_outputs")]
            if "agentflow_items" in tables:
                names += [r[0] for r in conn.execute("select name from agentflow_items")]
    except sqlite3.OperationalError:  # the engine is creating its tables
        return []
    return names


def model_records(project: Path) -> int:
    """How many model calls the durable database of ``project`` (``.flowc/durable.sqlite``)
    has recorded as item records (0 before it exists)."""
    db = project / ".flowc" / "durable.sqlite"
    if not db.exists():
        return 0
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as conn:
        tables = {row[0] for row in conn.execute("select name from sqlite_master")}
        if "agentflow_items" not in tables:
            return 0
        query = "select count(*) from agentflow_items where name like '%/model:%'"
        return int(conn.execute(query).fetchone()[0])


def flowc_in(cwd: Path, *args: str) -> Any:
    """:func:`flowc_in_process` run with ``cwd`` as the current directory (then the old one
    again): a command that finds its project where it is run (``runs``, ``answer``, ``cancel``)."""
    with contextlib.chdir(cwd):
        return flowc_in_process(*args)


def flowc_in_process(*args: str) -> Any:
    """``flowc ARGS`` run in this process through click's runner (its ``Result``: exit code,
    stdout, stderr), the durable engine it launched shut down after it."""
    from click.testing import CliRunner

    from agentflow.cli import main
    from agentflow.runtime.durable.dbos_engine import shutdown

    try:
        return CliRunner().invoke(main, list(args))
    finally:
        shutdown()


def cli_in_process(*args: str) -> Any:
    """``flowc ARGS`` run in this process (click's ``CliRunner``), DBOS shut down after it so
    the next command opens its database afresh; click's ``Result``."""
    from click.testing import CliRunner

    from agentflow.cli import main
    from agentflow.runtime.durable.dbos_engine import shutdown

    result = CliRunner().invoke(main, list(args))
    shutdown()
    return result


def run_status(run_id: str) -> str:
    """The status ``flowc runs --json`` (in this process) gives durable run ``run_id``."""
    import json

    listed = json.loads(cli_in_process("runs", "--json").stdout)
    (run,) = [r for r in listed if r["run_id"] == run_id]
    return str(run["status"])
