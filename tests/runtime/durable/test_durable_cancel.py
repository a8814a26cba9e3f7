"""`flowc cancel RUN` stops a durable run for good, from another process: the run's own process
ends with an ``aborted`` error (no traceback) and `flowc runs` lists the run as cancelled."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

#: Sixty questions of 1 s each: a cancel lands while one waits (the run notices it at its next
#: operation, within 1 s), long before the last would time out.
PLAN = "version: 1\nname: waiter\nsteps:\n" + "".join(
    f"  - id: E{i}\n    tool_name: ask\n"
    f'    input: {{question: "Go {i}?", when_unanswered: {{default: "no"}}}}\n'
    "    timeout: 1s\n"
    for i in range(60)
)


def _flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentflow", *args]


def _asked(db: Path, run_id: str) -> bool:
    if not db.exists():
        return False
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            row = conn.execute(
                "select 1 from workflow_events where workflow_uuid = ? and key like 'question:%'",
                (run_id,),
            ).fetchone()
    except sqlite3.OperationalError:  # the tables are not made yet
        return False
    return row is not None


def test_a_cancelled_run_stops_and_is_listed_as_cancelled(tmp_path: Path):
    (tmp_path / "plan.yaml").write_text(PLAN)
    run = subprocess.Popen(
        _flowc("run", "--durable", "--run-id", "c1", "plan.yaml"),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not _asked(tmp_path / ".flowc" / "durable.sqlite", "c1"):
        assert run.poll() is None, run.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, "the run never asked"
        time.sleep(0.05)

    cancelled = subprocess.run(_flowc("cancel", "c1"), cwd=tmp_path, capture_output=True)
    assert cancelled.returncode == 0, cancelled.stderr.decode()
    _, err = run.communicate(timeout=120)
    assert run.returncode == 1
    assert "cancelled" in err.decode() and "Traceback" not in err.decode()

    listed = subprocess.run(_flowc("runs", "--json"), cwd=tmp_path, capture_output=True)
    (info,) = json.loads(listed.stdout)
    assert (info["run_id"], info["status"]) == ("c1", "cancelled")

    unknown = subprocess.run(_flowc("cancel", "nope"), cwd=tmp_path, capture_output=True)
    assert unknown.returncode == 1
    assert "no durable run 'nope'" in unknown.stderr.decode()
