"""A ``--fleet`` map wider than ``[durable] map_batch`` runs as batch units taken by the
workers, its one-call items recorded as item records of their batch (docs/durable.md "Big maps
on a fleet"); a worker SIGKILLed in the middle of a batch leaves it to the other worker (the
run's process recovers it: liveness.py), which replays the items the batch had recorded and
runs only the one in flight again.  Real PostgreSQL, real ``flowc worker`` processes."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter

import psycopg
from click.testing import CliRunner
from support.fleet import (
    Workers,
    fleet_env,
    fleet_project,
    flowc,
    hanging_where_tools,
    where_log,
)

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

ITEMS = 40
BATCH = 8
HANGS = 20  # in batch 2 (items 16-23): its first call hangs, and its worker is killed

# concurrency 64: two batches at once (control.BATCH_CONCURRENCY = 32), and worker_concurrency
# 32 lets each worker hold one batch at a time: both workers take batches
PLAN = """\
version: 1
name: batched
input_schema: {type: object}
steps:
  - id: E1
    tool_name: map
    input:
      over: "{{ input.xs }}"
      concurrency: 64
      do:
        tool_name: user__where
        input: {x: "{{ item }}"}
finish: {mode: output, output: "{{ E1 }}"}
"""


def _query(url: str, sql: str, *args: object) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, args).fetchall()


def _units(url: str, run_id: str) -> dict[str, str]:
    rows = _query(
        url,
        "SELECT workflow_uuid, status FROM dbos.workflow_status WHERE workflow_uuid LIKE %s",
        run_id + "/%",
    )
    return {str(u)[len(run_id) + 1 :]: str(s) for u, s in rows}


def _recorded(url: str, unit: str) -> int:
    rows = _query(url, "SELECT count(*) FROM agentflow_items WHERE workflow_id = %s", unit)
    return int(rows[0][0])


def test_a_fleet_map_runs_in_batches_and_a_killed_workers_batch_is_taken_by_another(
    tmp_path, postgres
):
    project = fleet_project(
        tmp_path,
        plan=PLAN,
        tools=hanging_where_tools(HANGS, result="10 * x"),
        config="",
        database=postgres.url,
        durable=f"map_batch = {BATCH}\nworker_concurrency = 32\n",
    )
    log = project / "where.log"
    env = fleet_env(WHERE_LOG=str(log))
    run_id = "batched-1"
    with Workers(project, env) as workers:
        procs = {w.pid: w for w in (workers.start("w1"), workers.start("w2"))}
        workers.wait_alive(postgres.url, "w1", "w2")
        run = subprocess.Popen(
            flowc("run", "--durable", "--fleet", "--run-id", run_id, "plan.yaml",
                  "--input", json.dumps({"xs": list(range(ITEMS))})),
            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            # until item 20 hangs, every other batch has ended and the hung batch has recorded
            # its seven other items
            deadline = time.monotonic() + 90
            while not (
                ("start", HANGS) in {(w, x) for w, x, _ in where_log(log)}
                and sum(s == "SUCCESS" for s in _units(postgres.url, run_id).values()) == 4
                and _recorded(postgres.url, f"{run_id}/E1/batch.2") == BATCH - 1
            ):
                assert time.monotonic() < deadline, (where_log(log), _units(postgres.url, run_id))
                assert run.poll() is None and all(p.poll() is None for p in procs.values()), (
                    workers.errors()
                )
                time.sleep(0.05)
            hung = next(pid for w, x, pid in where_log(log) if (w, x) == ("start", HANGS))
            workers.kill(procs[hung])
            out, err = run.communicate(timeout=90)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
    try:
        shown = CliRunner().invoke(
            main, ["runs", "show", run_id, "--json", "--limit", "1000", "--database", postgres.url]
        )
    finally:
        shutdown()
    assert run.returncode == 0, err.decode()[-3000:] + workers.errors()
    assert json.loads(out) == [10 * x for x in range(ITEMS)]  # the plain run's output

    # five batch units and no unit per item: the items are rows of their batch
    units = _units(postgres.url, run_id)
    assert units == {f"E1/batch.{k}": "SUCCESS" for k in range(ITEMS // BATCH)}, units
    assert _query(postgres.url, "SELECT count(*) FROM agentflow_items")[0][0] == ITEMS

    entries = where_log(log)
    starts = Counter(x for w, x, _ in entries if w == "start")
    # every item called once, but the one in flight at the kill: once more, by the other worker
    assert starts == Counter({**{x: 1 for x in range(ITEMS)}, HANGS: 2}), entries
    other = next(pid for pid in procs if pid != hung)
    assert [(w, pid) for w, x, pid in entries if x == HANGS] == [
        ("start", hung),
        ("start", other),
        ("end", other),
    ]
    assert {pid for _, _, pid in entries} == set(procs)  # both workers ran items
    assert "worker w" in err.decode() and "is gone" in err.decode(), err.decode()

    # `runs show` names the items by their step paths, as an unbatched map's; the unit is the batch
    assert shown.exit_code == 0, shown.output
    steps = json.loads(shown.stdout)["steps"]
    by_path = {s["path"]: s for s in steps if s.get("path", "").startswith("E1/do.")}
    assert sorted(by_path) == sorted(f"E1/do.{i}" for i in range(ITEMS))
    assert by_path["E1/do.21"]["unit"] == "E1/batch.2"
    assert by_path["E1/do.21"]["operation"] == "E1/do.21/tool:user__where#1"
