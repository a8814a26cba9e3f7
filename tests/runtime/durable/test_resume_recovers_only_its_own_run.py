"""``flowc resume RUN`` continues RUN and nothing else, in its own process: two durable runs
started in one process (``agentflow.run(durable=True)`` twice, concurrently) are killed with
SIGKILL together; resuming one of them leaves the other untouched (not run, its workflows as the
killed process left them, for its own ``flowc resume``), and the resumed run is run by the
resuming process — not by another run's process alive on the same database, which polls the
engine's shared queue too."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

PLAN = """\
version: 1
name: pair
input_schema: {type: object}
steps:
  - id: E0
    tool_name: map
    input:
      over: "{{ input.xs }}"
      concurrency: 2
      do:
        tool_name: plan__item
        input: {x: "{{ item }}", tag: "{{ input.tag }}"}
finish: {mode: output, output: "{{ E0 }}"}
plans:
  item:
    name: item
    steps:
      - id: S0
        tool_name: user__note
        input: {tag: "{{ input.tag }}", n: "{{ input.x }}"}
      - id: S1
        tool_name: user__note
        input: {tag: "{{ input.tag }}", n: "{{ 100 + input.x }}"}
    finish: {mode: output, output: "{{ S1 }}"}
"""

TOOLS = """\
import os, time

with open(os.environ["IMPORT_LOG"], "a") as f:  # each build of a run's catalog imports it
    f.write(f"{os.getpid()}\\n")


def note(tag: str, n: int) -> str:
    \"\"\"Log the call (with the process id) and return tag:n.\"\"\"
    with open(os.environ["NOTE_LOG"], "a") as f:
        f.write(f"{os.getpid()} {tag} {n}\\n")
    time.sleep(float(os.environ.get("NOTE_SLEEP", "0.1")))
    return f"{tag}:{n}"
"""

TWO_RUNS = """\
import asyncio, sys
import agentflow


async def main():
    runs = [
        agentflow.run("plan.yaml", {"tag": tag, "xs": list(range(1, 5))}, config="flow.toml",
                      durable=True, run_id=f"pair-{tag}")
        for tag in ("a", "b")
    ]
    await asyncio.gather(*runs)


asyncio.run(main())
"""


def _log(project: Path) -> list[tuple[int, str, int]]:
    path = project / "notes.log"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        pid, tag, n = line.split()
        out.append((int(pid), tag, int(n)))
    return out


def _workflows(db: Path, run_id: str) -> dict[str, tuple[str, str]]:
    """``{workflow id: (status, executor id)}`` of run ``run_id`` and its child units."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "select workflow_uuid, status, executor_id from workflow_status "
            "where workflow_uuid = ? or workflow_uuid like ?",
            (run_id, run_id + "/%"),
        ).fetchall()
    return {wid: (status, executor) for wid, status, executor in rows}


WAITING = """\
version: 1
name: waiting
input_schema: {type: object}
steps:
  - id: E0
    tool_name: ask
    input:
      question: "Go on?"
      choices: ["yes", "no"]
finish: {mode: output, output: "{{ E0.answer }}"}
"""


def test_resume_runs_its_own_run_alone_in_its_own_process(tmp_path):
    project = tmp_path
    (project / "plan.yaml").write_text(PLAN)
    (project / "waiting.yaml").write_text(WAITING)
    (project / "tools.py").write_text(TOOLS)
    (project / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    (project / "two_runs.py").write_text(TWO_RUNS)
    env = {
        **os.environ,
        "NOTE_LOG": str(project / "notes.log"),
        "IMPORT_LOG": str(project / "imports.log"),
        "NO_COLOR": "1",
    }
    db = project / ".flowc" / "durable.sqlite"

    # another run's process, alive on the same database (waiting on its question)
    waiting = subprocess.Popen(
        [sys.executable, "-m", "agentflow", "run", "--durable", "--run-id", "other",
         "waiting.yaml"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    # one process running two runs, killed while both run
    pair = subprocess.Popen(
        [sys.executable, "two_runs.py"], cwd=project, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and pair.poll() is None:
            tags = {tag for _, tag, _ in _log(project)}
            if tags == {"a", "b"} and len(_log(project)) >= 4:
                break
            time.sleep(0.02)
        assert pair.poll() is None, pair.communicate()[1].decode()[-3000:]
        pair.send_signal(signal.SIGKILL)
        pair.wait()
        while time.monotonic() < deadline and "other" not in _workflows(db, "other"):
            time.sleep(0.05)
        assert waiting.poll() is None, waiting.communicate()[1].decode()[-3000:]
        other_executor = _workflows(db, "other")["other"][1]
        before_b = _workflows(db, "pair-b")
        assert before_b["pair-b"][0] == "PENDING"
        b_calls = [c for c in _log(project) if c[1] == "b"]

        resumed = subprocess.Popen(
            [sys.executable, "-m", "agentflow", "resume", "pair-a"], cwd=project, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        out, err = resumed.communicate(timeout=180)
        assert resumed.returncode == 0, err.decode()[-3000:]
        assert json.loads(out) == [f"a:{100 + x}" for x in range(1, 5)]

        # run b: not one more tool call, its workflows as the killed process left them
        assert [c for c in _log(project) if c[1] == "b"] == b_calls
        assert _workflows(db, "pair-b") == before_b
        # run a: run by the resuming process, not by the other run's live one
        assert other_executor not in {executor for _, executor in _workflows(db, "pair-a").values()}
        assert waiting.pid not in {pid for pid, _, _ in _log(project)}
        # the resuming process built the run's runtime (catalog, tool modules, models) once,
        # not once per recovered unit: builds hold the event loop that reads model replies
        imports = (project / "imports.log").read_text().split()
        assert imports.count(str(resumed.pid)) == 1, imports
    finally:
        waiting.kill()
        waiting.wait()
