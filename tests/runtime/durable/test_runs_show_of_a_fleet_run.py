"""``flowc runs show RUN`` of a ``--fleet`` run says which worker holds which unfinished unit
and whether that worker is alive (its liveness lock: runtime/durable/liveness.py), so a stuck
fleet shows at a glance: a unit held by a dead worker, with the command that puts it back
(real PostgreSQL, real ``flowc worker`` and ``flowc run --fleet`` processes, SIGKILL;
``flowc runs show`` through click)."""

from __future__ import annotations

import json
import subprocess

from click.testing import CliRunner
from support.fleet import (
    Workers,
    fleet_env,
    fleet_project,
    flowc,
    hanging_where_tools,
    map_plan,
    wait_for_the_hang,
)

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

ITEMS = 3
HANGS = 1  # the item whose tool call hangs (its worker holds it until killed)

PLAN = map_plan("stuck", "user__where")


def _show(database: str, *args: str) -> str:
    try:
        shown = CliRunner().invoke(main, ["runs", "show", "stuck-1", "--database", database, *args])
    finally:
        shutdown()
    assert shown.exit_code == 0, shown.output
    return shown.stdout


def test_runs_show_names_the_worker_holding_each_unit_and_whether_it_lives(tmp_path, postgres):
    tools = hanging_where_tools(HANGS, result="10 * x")
    project = fleet_project(tmp_path, plan=PLAN, tools=tools, config="", database=postgres.url)
    log = project / "where.log"
    env = fleet_env(WHERE_LOG=str(log))
    with Workers(project, env) as workers:
        w1 = workers.start("w1")
        run = subprocess.Popen(
            flowc("run", "--durable", "--fleet", "--run-id", "stuck-1", "plan.yaml",
                  "--input", json.dumps({"xs": list(range(ITEMS))})),
            cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            wait_for_the_hang(
                log, postgres.url, "stuck-1", hangs=HANGS, items=ITEMS, procs=[run, w1],
                workers=workers,
            )  # fmt: skip
            alive = _show(postgres.url)
            info = json.loads(_show(postgres.url, "--json"))
        finally:
            run.kill()  # no process of the run left to recover the unit of a dead worker
            run.wait()
        workers.kill(w1)
        gone = _show(postgres.url)
    assert "worker w1 (alive) holds 1 unit(s): E1/do.1" in alive, alive
    held = [h for h in info["workers"] if h.get("worker") == "w1"]
    assert held == [
        {"executor": "worker:w1", "units": ["E1/do.1"], "worker": "w1", "alive": True}
    ], info["workers"]
    assert "worker w1 (gone: its process ended) holds 1 unit(s): E1/do.1" in gone, gone
    assert "flowc resume stuck-1 puts them back" in gone, gone
