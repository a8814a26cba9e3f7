"""``flowc redrive RUN`` of a run that has not ended — still running in its process, or stopped
(its process died) — is refused with what to do instead (``flowc resume RUN``, or ``flowc cancel
RUN`` first), exit 1, and starts nothing: redrive would run a second copy of a run that may
still finish.  Once cancelled, the run may be redriven.  (A real ``flowc run --durable``
subprocess waiting on a question, SIGKILLed; ``flowc redrive`` / ``cancel`` through click.)"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.durable_questions import wait_asked

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
flow hold "Hold"
input { n: int }

stage wait -> bool {
  return ask "Go on?" expect bool default false
}
"""


def _runs(db: Path) -> set[str]:
    """The ids of the runs recorded in ``db`` (empty before its tables exist)."""
    if not db.exists():
        return set()
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            rows = conn.execute("select workflow_uuid from workflow_status").fetchall()
    except sqlite3.OperationalError:
        return set()
    return {r[0] for r in rows}


def _redrive() -> tuple[int, str]:
    done = CliRunner().invoke(main, ["redrive", "hold-1"])
    return done.exit_code, done.stderr


@pytest.mark.timeout(120)  # a redrive accepted by mistake would wait on the question
def test_redrive_refuses_a_running_then_stopped_run_and_takes_it_once_cancelled(
    tmp_path: Path, monkeypatch
) -> None:
    (tmp_path / "hold.flow").write_text(FLOW)
    config = tmp_path / "flow.toml"
    config.write_text('[durable]\nask_timeout = "1h"\n')
    monkeypatch.chdir(tmp_path)
    db = tmp_path / ".flowc" / "durable.sqlite"
    env = {**os.environ, "NO_COLOR": "1"}
    run = subprocess.Popen(
        [sys.executable, "-m", "agentflow", "run", "hold.flow", "--durable", "--run-id",
         "hold-1", "--input", '{"n": 1}'],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_asked(db, "hold-1", run)
        try:
            code, said = _redrive()
            assert code == 1, said
            assert "run hold-1 is still running: nothing to redrive" in said, said
            assert "flowc resume hold-1" in said and "flowc cancel hold-1" in said, said
        finally:
            shutdown()
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=60)
    try:
        code, said = _redrive()
        assert code == 1, said
        assert "run hold-1 has not ended (its process stopped before it finished)" in said, said
        assert "flowc resume hold-1" in said, said
        assert _runs(db) == {"hold-1"}  # refused before starting anything
        cancelled = CliRunner().invoke(main, ["cancel", "hold-1"])
        assert cancelled.exit_code == 0, cancelled.stderr
        # cancelled, it has ended: redrive runs it again as a new run, which asks again
        # (and, now that the configuration says so, soon takes the default)
        config.write_text('[durable]\nask_timeout = "100ms"\n')
        code, said = _redrive()
        assert "redrive of hold-1" in said, said
        assert code == 0, said
        assert len(_runs(db)) == 2
    finally:
        shutdown()
