"""A durable `sleep` is a durable timer (docs/durable.md "Sleeping"): a real `flowc run
--durable` killed with SIGKILL during its sleep shows in `flowc runs show` as `sleeping` with
the recorded wake-up time, and its resume wakes at that time — it sleeps only what was left,
not the whole duration again; `flowc cancel` from another process ends a long sleep promptly."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from click.testing import CliRunner
from support.durable_questions import start_flowc
from support.timing import Stretch

import agentflow
from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.runtime.events import CallbackSink

#: the sleep: long enough that a resume sleeping it all again is told from one sleeping the rest
SLEEP_S = 4.0
FLOW = f"""\
stage nap -> int {{
  sleep {int(SLEEP_S * 1000)}ms
  return 7
}}
"""


#: killed in its first sleep, resumed after it would have woken
TWO = "stage two -> int {\n  sleep 1500ms\n  sleep 1ms\n  return 2\n}\n"


def _operations(project: Path, run_id: str) -> list[str]:
    """The operations run ``run_id``'s root recorded so far (DBOS's SQLite database)."""
    db = project / ".flowc" / "durable.sqlite"
    if not db.exists():
        return []
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            rows = conn.execute(
                "select function_name from operation_outputs where workflow_uuid = ?", (run_id,)
            ).fetchall()
    except sqlite3.OperationalError:  # the engine is creating its tables
        return []
    return [r[0] for r in rows]


def _wait_asleep(project: Path, procs: dict[str, subprocess.Popen], limit: float = 120) -> None:
    """Wait until each run of ``procs`` sleeps: its wake-up time and DBOS's timer recorded."""
    deadline = time.monotonic() + limit
    for run_id, proc in procs.items():
        while "DBOS.sleep" not in _operations(project, run_id):
            if proc.poll() is not None:
                raise AssertionError(proc.communicate()[1].decode()[-2000:])
            assert time.monotonic() < deadline, f"{run_id} never slept"
            time.sleep(0.02)
        assert _operations(project, run_id)[0] == "E0/sleep#1"


def _sleep_step(run_id: str) -> dict:
    info = asyncio.run(agentflow.api.show_durable_run(agentflow.api.durable_database(), run_id))
    [step] = [s for s in info.steps if s.get("wakes_at") is not None]
    return step


def test_a_killed_sleep_resumes_with_what_is_left_and_cancel_ends_a_long_one(tmp_path, monkeypatch):
    (tmp_path / "nap.flow").write_text(FLOW)
    (tmp_path / "long.flow").write_text("stage s -> int {\n  sleep 1h\n  return 1\n}\n")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "two.flow").write_text(TWO)
    procs = {
        "nap-1": start_flowc(tmp_path, "run", "--durable", "--run-id", "nap-1", "nap.flow"),
        "long-1": start_flowc(tmp_path, "run", "--durable", "--run-id", "long-1", "long.flow"),
        "two-1": start_flowc(tmp_path, "run", "--durable", "--run-id", "two-1", "two.flow"),
    }
    _wait_asleep(tmp_path, procs)
    procs["two-1"].send_signal(signal.SIGKILL)  # resumed once its time has passed (below)
    procs["two-1"].wait()
    time.sleep(1.0)  # a part of the nap slept in the first process
    procs["nap-1"].send_signal(signal.SIGKILL)
    procs["nap-1"].wait()
    try:
        asleep = _sleep_step("nap-1")
        wakes = asleep["wakes_at"]
        shown_nap = CliRunner().invoke(main, ["runs", "show", "nap-1"]).stdout
        events: list = []
        resumed = asyncio.run(
            agentflow.api.resume_run("nap-1", sinks=[CallbackSink(events.append)])
        )
        woke = time.time()
        done = _sleep_step("nap-1")

        # `flowc cancel` (another process than the sleeping one) ends the hour's sleep at once
        with Stretch() as stretch:
            cancelled = CliRunner().invoke(main, ["cancel", "long-1"])
            assert cancelled.exit_code == 0, cancelled.output
            start = time.monotonic()
            try:
                _, err = procs["long-1"].communicate(timeout=60)
            except subprocess.TimeoutExpired:
                procs["long-1"].kill()
                raise AssertionError("the sleeping process did not notice the cancel") from None
            took = time.monotonic() - start
        assert took < stretch.bound(5.0), f"the sleeping process took {took:.1f} s to notice"
        text = err.decode()
        assert "sleeping until" in text and "cancelled" in text, text[-2000:]
        assert "Traceback" not in text, text[-2000:]
        shown_long = CliRunner().invoke(main, ["runs", "show", "long-1"]).stdout

        # resumed after its wake-up time: no wait, and the operation after it (a second sleep)
        # meets the record where it was made (DBOS's sleep row is positional)
        time.sleep(max(0.0, _sleep_step("two-1")["wakes_at"] - time.time()))
        late = asyncio.run(agentflow.api.resume_run("two-1"))
    finally:
        shutdown()
    assert "interrupted" in shown_long and "s › sleep · was to wake at " in shown_long, shown_long
    assert asleep["label"] == "nap › sleep"
    # sleeping while its time is ahead (a loaded machine may show it after: it woke then)
    state = "sleeping" if asleep["status"] == "sleeping" else "done"
    assert f"nap › sleep · {'wakes' if state == 'sleeping' else 'woke'} at " in shown_nap, shown_nap
    assert resumed.status == "ok", resumed.error
    assert resumed.output == 7
    assert late.status == "ok", late.error
    assert late.output == 2
    assert woke >= wakes  # never before the recorded time …
    finished = [e for e in events if e.kind == "step_finished" and e.path == "E0"]
    assert finished, [(e.kind, e.path) for e in events]
    # … and not the whole sleep again (≥ 4 s, however fast): what was left of it (less,
    # however slow the resume: the later it reaches the sleep, the less is left)
    assert finished[0].data["elapsed_ms"] < (SLEEP_S - 0.4) * 1000, finished[0].data
    assert done["status"] == "done" and done["finished_at"] == wakes
