"""A worker that dies and never comes back under its name: its units are recovered by the
process waiting on the run — the run's own process, or `flowc resume RUN` — and run by
another live worker of the fleet (real PostgreSQL: tests/support/postgres.py, real `flowc
worker` processes, SIGKILL).  The run ends with the output of an uninterrupted run; finished
items are not run again, only the one in flight at the kill.  A second live worker under a
name already running is refused."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter

from support.fleet import (
    Workers,
    fleet_env,
    fleet_project,
    flowc,
    hanging_where_tools,
    map_plan,
    wait_for_the_hang,
    where_log,
)

from agentflow.runtime.durable.liveness import worker_alive

ITEMS = 4
HANGS = 2  # the item whose tool call hangs the first time (its worker is killed then)

PLAN = map_plan("gone", "user__where")

TOOLS = hanging_where_tools(HANGS, result="10 * x")


def _setup(tmp_path, postgres):
    project = fleet_project(tmp_path, plan=PLAN, tools=TOOLS, config="", database=postgres.url)
    log = project / "where.log"
    return project, log, fleet_env(WHERE_LOG=str(log))


def _run(run_id: str) -> list[str]:
    return flowc("run", "--durable", "--fleet", "--run-id", run_id, "plan.yaml",
                 "--input", json.dumps({"xs": list(range(ITEMS))}))  # fmt: skip


def _check_items_ran_once_but_the_killed_one(log, dead_pid: int, other_pid: int) -> None:
    entries = where_log(log)
    starts = Counter(x for w, x, _ in entries if w == "start")
    assert starts == Counter({**{x: 1 for x in range(ITEMS)}, HANGS: 2}), entries
    assert [(w, pid) for w, x, pid in entries if x == HANGS] == [
        ("start", dead_pid),
        ("start", other_pid),
        ("end", other_pid),
    ]


def test_the_runs_process_recovers_the_units_of_a_worker_that_died_for_good(tmp_path, postgres):
    project, log, env = _setup(tmp_path, postgres)
    with Workers(project, env) as workers:
        first = workers.start("w1")
        run = subprocess.Popen(_run("gone-1"), cwd=project, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        try:
            wait_for_the_hang(
                log,
                postgres.url,
                "gone-1",
                hangs=HANGS,
                items=ITEMS,
                procs=[run, first],
                workers=workers,
            )
            workers.kill(first)
            other = workers.start("w2")  # another name: w1 never comes back
            out, err = run.communicate(timeout=60)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
    assert run.returncode == 0, err.decode()[-3000:] + workers.errors()
    assert json.loads(out) == [10 * x for x in range(ITEMS)]
    _check_items_ran_once_but_the_killed_one(log, first.pid, other.pid)
    said = err.decode()
    assert "worker w1 is gone" in said and "1 unit(s) of run gone-1" in said, said


def test_flowc_resume_recovers_the_units_of_a_dead_worker_after_the_run_process_died(
    tmp_path, postgres
):
    project, log, env = _setup(tmp_path, postgres)
    with Workers(project, env) as workers:
        first = workers.start("w1")
        run = subprocess.Popen(_run("gone-2"), cwd=project, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        wait_for_the_hang(
            log,
            postgres.url,
            "gone-2",
            hangs=HANGS,
            items=ITEMS,
            procs=[run, first],
            workers=workers,
        )
        run.kill()  # the run's process and its worker both die
        run.wait()
        workers.kill(first)
        other = workers.start("w2")
        resumed = subprocess.run(flowc("resume", "gone-2"), cwd=project, env=env,
                                 capture_output=True, timeout=60)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:] + workers.errors()
    assert json.loads(resumed.stdout) == [10 * x for x in range(ITEMS)]
    _check_items_ran_once_but_the_killed_one(log, first.pid, other.pid)
    assert "worker w1 is gone" in resumed.stderr.decode()


def test_a_second_live_worker_under_a_running_workers_name_is_refused(tmp_path, postgres):
    project, _log_path, env = _setup(tmp_path, postgres)
    with Workers(project, env) as workers:
        first = workers.start("w1")
        deadline = time.monotonic() + 30
        while not worker_alive(postgres.url, "w1"):  # it holds its name's lock
            assert time.monotonic() < deadline and first.poll() is None, workers.errors()
            time.sleep(0.05)
        second = subprocess.run(flowc("worker", "--name", "w1"), cwd=project,
                                env={**env, "AGENTFLOW_WORKER_WAIT_S": "0.5"},
                                capture_output=True, timeout=60)  # fmt: skip
        assert first.poll() is None
    assert second.returncode == 1
    assert "a worker named 'w1' is already running" in second.stderr.decode()
    assert "Traceback" not in second.stderr.decode()
