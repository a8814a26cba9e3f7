"""Two ``flowc resume`` of one run on PostgreSQL at once: one runs it, the other is refused
with ``run … is running in another process`` (the run's advisory lock, runtime/durable/
database.py ``run_lock``), and each step runs once.  Before, ``lock_path`` gave no lock for a
PostgreSQL URL and both processes ran every step."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from agentflow.runtime.durable import runs

PLAN = """\
version: 1
name: twice
input_schema: {type: object}
steps:
  - {id: E0, tool_name: user__note, input: {n: 0}}
  - {id: E1, tool_name: user__note, input: {n: 1}}
  - {id: E2, tool_name: user__note, input: {n: 2}}
finish: {mode: output, output: "{{ [E0, E1, E2] }}"}
"""

TOOLS = """\
import os, signal, time


def note(n: int) -> int:
    \"\"\"Note n; the first process dies at step 1; step 2 waits for the test's gate.\"\"\"
    if n == 1 and not os.path.exists(os.environ["KILLED"]):
        open(os.environ["KILLED"], "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    if n == 2:
        open(os.environ["HOLDING"], "a").close()
        deadline = time.monotonic() + 120
        while not os.path.exists(os.environ["GATE"]) and time.monotonic() < deadline:
            time.sleep(0.05)
    fd = os.open(os.environ["NOTE_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{os.getpid()} {n}\\n".encode())
    os.close(fd)
    return n
"""


def test_two_resumes_of_one_run_on_postgres_run_it_once(tmp_path: Path, postgres) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "plan.yaml").write_text(PLAN)
    (project / "tools.py").write_text(TOOLS)
    (project / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    log = project / "notes.log"
    env = {
        **os.environ,
        "NOTE_LOG": str(log),
        "KILLED": str(project / "killed"),
        "HOLDING": str(project / "holding"),
        "GATE": str(project / "gate"),
        "NO_COLOR": "1",
    }
    flowc = [sys.executable, "-m", "agentflow"]
    db = ["--database", postgres.url]
    first = subprocess.run(
        [*flowc, "run", "--durable", *db, "--run-id", "r1", "plan.yaml", "--input", "{}"],
        cwd=project, env=env, capture_output=True, timeout=180,
    )  # fmt: skip
    assert first.returncode == -9, first.stderr.decode()[-2000:]
    # its lock goes with its process: the server ends the dead client's session (and its
    # advisory lock) when it sees the connection closed, a moment after the kill
    gone = time.monotonic() + 30
    while runs.run_alive(postgres.url, "r1"):
        assert time.monotonic() < gone, "the killed run's lock was never released"
        time.sleep(0.05)
    before = len(log.read_text().splitlines())

    procs = [
        subprocess.Popen(
            [*flowc, "resume", *db, "r1"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for _ in range(2)
    ]
    try:
        # one resume holds the run (waiting at step 2) while the other is refused
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and all(p.poll() is None for p in procs):
            time.sleep(0.05)
        held = runs.run_alive(postgres.url, "r1")
    finally:
        (project / "gate").touch()
        outs = [p.communicate(timeout=180) for p in procs]
    codes = sorted(p.returncode for p in procs)
    errors = "\n".join(err.decode() for _out, err in outs)
    assert codes == [0, 1], errors[-3000:]
    assert held, "the resume that runs it holds the run's lock"
    assert "run r1 is running in another process" in errors
    notes = [line.split() for line in log.read_text().splitlines()[before:]]
    assert len({pid for pid, _n in notes}) == 1  # one process ran the steps left, …
    steps = Counter(int(n) for _pid, n in notes)
    assert steps[1] == 1 and steps[2] == 1 and set(steps.values()) == {1}  # … each once
    assert not runs.run_alive(postgres.url, "r1")
