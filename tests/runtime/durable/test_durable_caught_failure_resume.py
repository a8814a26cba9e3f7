"""A caught failure in a durable run is a finished step (docs/reference/errors-as-values.md, "In the
plan: the `try` step"): a real `flowc run --durable` of a `.flow` whose tool call fails and is
caught, killed with SIGKILL in a later step, then `flowc resume` — the fallback's value is reused,
and neither the failing tool nor the fallback's own tool call runs again."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

FLOW = """\
extern tool user__fetch(n: int) -> text
extern tool user__mark(n: int) -> int
extern tool user__wait(n: int) -> int
stage report -> text {
  let page = user__fetch(n: 1) catch on [tool_error] as e {
    "fallback ${e.code} ${e.where.line ?? 0} ${user__mark(n: 2)}"
  }
  let pages = try {
    let again = user__fetch(n: 3)
    "${again}!"
  } catch as e { "block ${e.code} ${user__mark(n: 4)}" }
  let waited = user__wait(n: 5)
  return "${page} / ${pages} / ${waited}"
}
"""

TOOLS = """\
import os, time


def _log(line: str) -> None:
    with open(os.environ["CALL_LOG"], "a") as f:
        f.write(line + "\\n")


def fetch(n: int) -> str:
    \"\"\"Always fails.\"\"\"
    _log(f"fetch {n}")
    raise RuntimeError(f"cannot fetch {n}")


def mark(n: int) -> int:
    \"\"\"A side effect of a fallback.\"\"\"
    _log(f"mark {n}")
    return 10 * n


def wait(n: int) -> int:
    \"\"\"Slow the first time (the test kills the run here).\"\"\"
    _log(f"wait {n}")
    time.sleep(float(os.environ.get("WAIT_SLEEP", "0")))
    return n
"""


def _recorded_marks(project: Path) -> int:
    """How many calls of ``user__mark`` the run's database has recorded (item records)."""
    db = project / ".flowc" / "durable.sqlite"
    if not db.exists():
        return 0
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)) as conn:
        tables = {row[0] for row in conn.execute("select name from sqlite_master")}
        if "agentflow_items" not in tables:
            return 0
        query = "select count(*) from agentflow_items where name like '%/tool:user__mark#%'"
        return int(conn.execute(query).fetchone()[0])


def test_a_caught_failure_is_not_run_again_after_a_kill_and_resume(tmp_path: Path):
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "report.flow").write_text(FLOW)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    log = tmp_path / "calls.log"
    env = {**os.environ, "CALL_LOG": str(log), "NO_COLOR": "1", "WAIT_SLEEP": "60"}
    flowc = [sys.executable, "-m", "agentflow"]
    run = subprocess.Popen(
        [*flowc, "run", "--durable", "--run-id", "caught-1", "report.flow"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while run.poll() is None and time.monotonic() < deadline:
        if log.exists() and "wait 5" in log.read_text():
            break
        time.sleep(0.02)
    assert log.exists() and "wait 5" in log.read_text(), run.communicate()[1].decode()[-3000:]
    # a call's record is written behind it (docs/decisions.md "write-behind"): the kill comes
    # once the fallback's `mark 4` is recorded, so it is a recorded call that must not run again
    while _recorded_marks(tmp_path) < 2 and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _recorded_marks(tmp_path) == 2
    run.send_signal(signal.SIGKILL)
    run.wait()
    before = log.read_text().splitlines()
    assert before == ["fetch 1", "mark 2", "fetch 3", "mark 4", "wait 5"]

    resumed = subprocess.run(
        [*flowc, "resume", "caught-1", "--json"],
        cwd=tmp_path,
        env={**env, "WAIT_SLEEP": "0"},
        capture_output=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    result = json.loads(resumed.stdout)
    assert result["output"] == "fallback tool_error 5 20 / block tool_error 40 / 5"
    # only the step in flight at the kill ran again; the caught failures and fallbacks did not
    assert log.read_text().splitlines()[len(before) :] == ["wait 5"]
