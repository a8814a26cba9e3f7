"""A fleet of durable-run processes for the tests: ``flowc run --durable --fleet`` and ``flowc
worker`` as real subprocesses on one PostgreSQL (tests/support/postgres.py), in a project
directory under the test's ``tmp_path``.

    project = fleet_project(tmp_path, plan=PLAN, tools=TOOLS, config=..., database=pg.url)
    with Workers(project, env) as workers:
        w1 = workers.start("w1")              # flowc worker --name w1 (more arguments may follow)
        run = subprocess.run(flowc("run", "--durable", "--fleet", ...), cwd=project, env=env)
    workers.errors()                            # every worker's stderr, for a failure message
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def flowc(*args: str) -> list[str]:
    """The command line of ``flowc ARGS`` with this interpreter."""
    return [sys.executable, "-m", "agentflow", *args]


def fleet_project(
    tmp_path: Path, *, plan: str, tools: str, config: str, database: str, durable: str = ""
) -> Path:
    """``tmp_path/project`` with ``plan.yaml``, ``tools.py`` and a ``flow.toml`` of ``config``
    plus the fleet's database (and ``durable``, more lines of its ``[durable]`` table) and the
    tools module; returns the directory."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "plan.yaml").write_text(plan)
    (project / "tools.py").write_text(tools)
    config += f'\n[durable]\ndatabase = "{database}"\n{durable}\n[tools]\nmodules = ["tools.py"]\n'
    (project / "flow.toml").write_text(config)
    return project


def fleet_env(**extra: str) -> dict[str, str]:
    """The environment of the fleet's processes: this one's without a ``TRACEPARENT`` (a run
    must start its own trace), uncoloured, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "TRACEPARENT"}
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


class Workers:
    """``flowc worker`` processes of one project (a context manager: on exit each still
    running gets SIGINT — a worker's Ctrl-C, which flushes its telemetry — and is killed
    when it has not stopped within 30 s)."""

    def __init__(self, project: Path, env: dict[str, str]):
        self.project = project
        self.env = env
        self.procs: list[subprocess.Popen[bytes]] = []
        self._stderr: list[str] = []

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        """Start ``flowc worker --name NAME ARGS`` (stderr kept for :meth:`errors`)."""
        proc = subprocess.Popen(
            flowc("worker", "--name", name, *args),
            cwd=self.project,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.procs.append(proc)
        return proc

    def wait_alive(self, database: str, *names: str, timeout: float = 60.0) -> None:
        """Wait until each worker ``names`` holds its liveness lock on ``database`` (it has
        started: runtime/durable/liveness.py), so a run started next finds them all."""
        from agentflow.runtime.durable.liveness import worker_alive

        deadline = time.monotonic() + timeout
        for name in names:
            while not worker_alive(database, name):
                if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                    raise AssertionError(f"worker {name} did not start\n" + self.errors())
                time.sleep(0.1)

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL ``proc`` (a crash: nothing of it runs afterwards) and reap it."""
        proc.send_signal(signal.SIGKILL)
        self._collect(proc)

    def stop(self) -> None:
        """Stop every worker still running (SIGINT, then SIGKILL after 30 s)."""
        running = [p for p in self.procs if p.poll() is None]
        for proc in running:
            proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
            self._collect(proc)

    def _collect(self, proc: subprocess.Popen[bytes]) -> None:
        proc.wait()
        if proc.stderr is not None and not proc.stderr.closed:
            self._stderr.append(proc.stderr.read().decode(errors="replace")[-6000:])
            proc.stderr.close()

    def errors(self) -> str:
        """What the stopped workers wrote on stderr (for an assertion's message)."""
        return "\n".join(self._stderr)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def map_plan(name: str, do: str) -> str:
    """A plan ``name``: a fleet run's map over ``input.xs`` (concurrency 8) calling the tool
    ``do`` with ``{x: item}`` on each item; its output is the map's list."""
    return f"""\
version: 1
name: {name}
input_schema: {{type: object}}
steps:
  - id: E1
    tool_name: map
    input:
      over: "{{{{ input.xs }}}}"
      concurrency: 8
      do:
        tool_name: {do}
        input: {{x: "{{{{ item }}}}"}}
finish: {{mode: output, output: "{{{{ E1 }}}}"}}
"""


def labelled_items_plan(name: str) -> str:
    """:func:`map_plan` whose item is a sub-plan that logs where it runs (``user__where``) then
    asks the model for a label: ``{x, label}`` per item."""
    return (
        map_plan(name, "plan__item")
        + """\
plans:
  item:
    name: item
    steps:
      - id: S0
        tool_name: user__where
        input: {x: "{{ input.x }}"}
      - id: S1
        tool_name: agent
        input:
          prompt: "Label item {{ input.x }}."
          tools: none
          output_schema: {type: object, properties: {x: {type: integer}}, required: [x]}
    finish: {mode: output, output: "{{ {x: input.x, label: S1.output.x} }}"}
"""
    )


def hanging_where_tools(hangs: int, result: str = "x") -> str:
    """A tools module whose ``where(x)`` logs ``start X PID`` / ``end X PID`` lines to
    ``$WHERE_LOG`` and returns ``result`` (a Python expression of ``x``); its first call for
    item ``hangs`` hangs (the test kills its worker there)."""
    return f"""\
import os, time
from pathlib import Path


def where(x: int) -> int:
    \"\"\"Log the start and end of item x's call with this process's id; the first call for
    item {hangs} hangs (its worker is killed there).\"\"\"
    log = Path(os.environ["WHERE_LOG"])
    with log.open("a") as f:
        f.write(f"start {{x}} {{os.getpid()}}\\n")
    marker = log.with_name("hung")
    if x == {hangs} and not marker.exists():
        marker.write_text("")
        time.sleep(120)
    with log.open("a") as f:
        f.write(f"end {{x}} {{os.getpid()}}\\n")
    return {result}
"""


def wait_for_the_hang(
    log: Path, url: str, run_id: str, *, hangs: int, items: int, procs: list, workers: Workers
) -> None:
    """Until item ``hangs`` is in its (hanging) tool call and the engine has recorded every
    other item's unit of ``run_id`` as finished; fails when 60 s pass first or when one of
    ``procs`` ends (with the workers' stderr)."""
    deadline = time.monotonic() + 60
    while not (
        ("start", hangs) in {(w, x) for w, x, _ in where_log(log)}
        and finished_units(url, run_id) == items - 1
    ):
        assert time.monotonic() < deadline, where_log(log)
        assert all(p.poll() is None for p in procs), workers.errors()
        time.sleep(0.05)


def where_log(path: Path) -> list[tuple[str, int, int]]:
    """The ``(start|end, item, pid)`` lines :func:`hanging_where_tools` wrote to ``path``."""
    if not path.exists():
        return []
    return [
        (w, int(x), int(pid)) for w, x, pid in (ln.split() for ln in path.read_text().splitlines())
    ]


def finished_units(url: str, run_id: str) -> int:
    """How many units of ``run_id`` the engine has recorded as finished (DBOS's own table)."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM dbos.workflow_status"
            " WHERE workflow_uuid LIKE %s AND status = 'SUCCESS'",
            (run_id + "/%",),
        ).fetchone()
    return int(row[0]) if row else 0
