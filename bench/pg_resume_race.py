"""Battery: two ``flowc resume`` of one stopped run on PostgreSQL at the same moment, N times.

Each try: a fresh database on a throwaway PostgreSQL server (tests/support/postgres.py), a run
of three tool steps whose process dies (SIGKILL) at step 1, then two ``flowc resume`` started
together.  Checked each time: exactly one ends ``ok``, the other is refused with ``run … is
running in another process`` (the run's advisory lock, runtime/durable/database.py), and every
step left ran in one process, once.  Prints the tries that ran a step twice (before the lock:
5 of 7) and the refused resume's time to its refusal.  A small version is
tests/runtime/durable/test_two_resumes_of_one_run_on_postgres.py.

    .venv/bin/python bench/pg_resume_race.py [N]   # default 10
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.postgres import PostgresServer  # noqa: E402

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
    \"\"\"Note n (with this process's id); the first process dies at step 1.\"\"\"
    if n == 1 and not os.path.exists(os.environ["KILLED"]):
        open(os.environ["KILLED"], "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.5)  # long enough for the two resumes to overlap
    fd = os.open(os.environ["NOTE_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{os.getpid()} {n}\\n".encode())
    os.close(fd)
    return n
"""


def one(pg: PostgresServer, k: int) -> tuple[bool, float]:
    """One try: (a step ran twice or both resumes ran, seconds to the refusal)."""
    url = pg.new_database(f"race{k}")
    project = Path(tempfile.mkdtemp(prefix="pg-race-"))
    (project / "plan.yaml").write_text(PLAN)
    (project / "tools.py").write_text(TOOLS)
    (project / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    log = project / "notes.log"
    env = {**os.environ, "NOTE_LOG": str(log), "KILLED": str(project / "killed"), "NO_COLOR": "1"}
    flowc = [sys.executable, "-m", "agentflow"]
    first = subprocess.run(
        [*flowc, "run", "--durable", "--database", url, "--run-id", "r", "plan.yaml"],
        cwd=project, env=env, capture_output=True, timeout=300,
    )  # fmt: skip
    assert first.returncode == -9, first.stderr.decode()[-2000:]
    before = len(log.read_text().splitlines())
    start = time.monotonic()
    procs = [
        subprocess.Popen(
            [*flowc, "resume", "--database", url, "r"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for _ in range(2)
    ]
    refused_at = 0.0
    while None in [p.poll() for p in procs]:  # every one polled
        if not refused_at and any(p.returncode == 1 for p in procs):
            refused_at = time.monotonic() - start
        time.sleep(0.02)
    errors = [p.communicate()[1].decode() for p in procs]
    notes = [line.split() for line in log.read_text().splitlines()[before:]]
    steps = Counter(n for _pid, n in notes)
    twice = (
        sorted(p.returncode for p in procs) != [0, 1]
        or len({pid for pid, _n in notes}) != 1
        or any(c > 1 for c in steps.values())
        or not any("is running in another process" in e for e in errors)
    )
    return twice, refused_at


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    bad = 0
    times = []
    with PostgresServer() as pg:
        for k in range(n):
            twice, refused_at = one(pg, k)
            bad += twice
            times.append(refused_at)
            print(f"try {k + 1}: {'TWICE' if twice else 'once'} (refused after {refused_at:.2f} s)")
    print(f"{bad} of {n} tries ran the run in both resumes; the refusal came after "
          f"{min(times):.2f}–{max(times):.2f} s (process start included)")  # fmt: skip
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
