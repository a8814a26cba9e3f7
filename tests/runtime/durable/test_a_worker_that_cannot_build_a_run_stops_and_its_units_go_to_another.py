"""A `flowc worker` that cannot build a fleet run it takes up — here its environment lacks the
API key of the model the run's items call — neither ends the run nor keeps the units it took:
it says once on stderr why (the run, the key, what to do) and stops (exit 1), so its liveness
lock is freed and the run's own process puts its units back on their queues; a worker that can
build the run takes them up and the run ends with the output of an uninterrupted run
(docs/durable.md "A fleet on PostgreSQL"). Before, the worker held them, pending, until someone
stopped it — the fleet's other workers never got them."""

from __future__ import annotations

import json
import re
import subprocess

from support.chat_server import TEST_API_KEY, answer
from support.fleet import Workers, fleet_env, fleet_project, flowc, labelled_items_plan

ITEMS = 3
TOOLS = "def where(x: int) -> int:\n    return x\n"


def _held_by(url: str, run_id: str, executor: str) -> dict[str, int]:
    """Status → how many units of ``run_id`` the executor ``executor`` holds."""
    import psycopg

    with psycopg.connect(url) as conn:
        if conn.execute("SELECT to_regclass('dbos.workflow_status')").fetchone() == (None,):
            return {}  # not made yet
        rows = conn.execute(
            "SELECT status, count(*) FROM dbos.workflow_status"
            " WHERE workflow_uuid LIKE %s AND executor_id = %s GROUP BY status",
            (run_id + "/%", executor),
        ).fetchall()
    return {str(status): int(n) for status, n in rows}


def test_a_worker_without_the_key_stops_and_a_worker_with_it_takes_its_units(
    tmp_path, chat_server, postgres
):
    project = fleet_project(
        tmp_path,
        plan=labelled_items_plan("nokey"),
        tools=TOOLS,
        config=chat_server.config_text(),
        database=postgres.url,
    )
    chat_server.script(
        lambda body: answer(
            {"x": int(re.search(r"item (\d+)", str(body["messages"])).group(1))}  # type: ignore[union-attr]
        )
    )
    keyless = fleet_env()
    keyless.pop("SCRIPTED_API_KEY", None)
    env = fleet_env(SCRIPTED_API_KEY=TEST_API_KEY)
    with Workers(project, keyless) as bad, Workers(project, env) as good:
        first = bad.start("w1")
        bad.wait_alive(postgres.url, "w1")
        run = subprocess.Popen(
            flowc("run", "--durable", "--fleet", "--run-id", "nokey-1", "plan.yaml",
                  "--input", json.dumps({"xs": list(range(ITEMS))})),
            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            assert first.wait(timeout=120) == 1  # it stops by itself, not when stopped
            bad.stop()  # collects what it said
            said = bad.errors()
            message = "worker w1 stopped: run nokey-1 cannot be taken up by this process"
            assert said.count(message) == 1, said
            assert "SCRIPTED_API_KEY" in said, said
            assert "flowc resume nokey-1" in said, said
            assert "flowc worker --name w1" in said, said
            assert "Traceback" not in said, said
            held = _held_by(postgres.url, "nokey-1", "worker:w1")
            assert "ERROR" not in held and "SUCCESS" not in held, held  # nothing ended
            assert run.poll() is None  # the run goes on waiting
            good.start("w2")
            out, err = run.communicate(timeout=120)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
    assert run.returncode == 0, err.decode()[-3000:] + good.errors()
    assert json.loads(out) == [{"x": x, "label": x} for x in range(ITEMS)]
    assert _held_by(postgres.url, "nokey-1", "worker:w1") == {}  # every unit went to w2
