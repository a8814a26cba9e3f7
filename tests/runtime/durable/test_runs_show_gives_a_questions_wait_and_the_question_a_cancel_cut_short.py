"""`flowc runs show` of a run with a question: an answered one's step starts when it was asked
(its duration is the wait, as the run's progress line showed it: `✓ s › c = ask … 5.03s`), not
when its answer was recorded (`0.00s`); and the question a run was waiting on when it was
cancelled is listed, `interrupted` with the run's `aborted`, as the console showed it (`✗ s ›
c = ask … aborted: the run was cancelled`) — it was missing (docs/durable.md "Looking at a
run")."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.durable_questions import start_flowc, wait_asked

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.runtime.durable.dbos_system import system_database
from agentflow.runtime.durable.runs import open_database

FLOW = """\
type Choice = "ship" | "hold"
stage s -> Choice {
  let c = ask "Ship?" expect Choice
  return c
}
"""


def _cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    shutdown()
    return result


@pytest.fixture
def asking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``start(run_id)``: a `flowc run --durable` of q.flow, returned once it asked."""
    (tmp_path / "q.flow").write_text(FLOW)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    procs = []

    def start(run_id: str):
        proc = start_flowc(tmp_path, "run", "--durable", "--run-id", run_id, "q.flow")
        procs.append(proc)
        wait_asked(tmp_path / ".flowc" / "durable.sqlite", run_id, proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    shutdown()


def test_an_answered_question_is_shown_with_its_wait(asking) -> None:
    proc = asking("q1")
    answered_at = time.time()  # after it was asked, before it was answered
    assert _cli("answer", "q1", "c", "ship").exit_code == 0
    assert proc.wait() == 0
    (step,) = json.loads(_cli("runs", "show", "q1", "--json").stdout)["steps"]
    assert step["label"] == "s › c = ask" and step["status"] == "done"
    assert step["started_at"] < answered_at <= step["finished_at"]
    (line,) = [ln for ln in _cli("runs", "show", "q1").stdout.splitlines() if "c = ask" in ln]
    took = float(re.search(r"(\d+\.\d\d)s", line).group(1))
    assert took == pytest.approx(step["finished_at"] - step["started_at"], abs=0.01)


def test_the_question_a_cancel_cut_short_is_listed_interrupted(asking) -> None:
    proc = asking("q2")
    assert _cli("cancel", "q2").exit_code == 0
    proc.wait()
    shown = json.loads(_cli("runs", "show", "q2", "--json").stdout)
    assert shown["status"] == "cancelled"
    (step,) = shown["steps"]
    assert (step["label"], step["status"], step["kind"]) == ("s › c = ask", "interrupted", "ask")
    assert step["error"]["code"] == "aborted"
    assert step["started_at"] <= step["finished_at"]
    text = _cli("runs", "show", "q2").stdout
    assert re.search(r"^  interrupted \S+ +\d+\.\d\ds  s › c = ask  \[aborted\]$", text, re.M), text


def test_the_end_the_engine_records_on_sqlite_is_to_the_millisecond(tmp_path: Path) -> None:
    # the time DBOS writes as a workflow ends or is cancelled (its ``updated_at``, which
    # `runs show` gives as the end of a question the run's end cut short) was whole seconds on
    # SQLite (its clock in SQL, on Python < 3.12): up to a second early.  Read in the second
    # half of a second, where a whole second is 0.5 s early or more.
    import sqlalchemy as sa

    open_database(f"sqlite:///{tmp_path / 'd.sqlite'}", executor_id="clock", queues=[])
    try:
        sys_db = system_database()
        while time.time() % 1 < 0.5:
            time.sleep(0.01)
        before = time.time()
        with sys_db.engine.connect() as conn:
            now_ms = conn.execute(sa.select(sys_db._now_ms_sql())).scalar()
    finally:
        shutdown()
    assert now_ms / 1000 >= before - 0.002
