"""A `flowc worker` that cannot build a fleet run it takes up — here its environment lacks the
API key of the model the run's items call — leaves the run's work pending rather than ending
the run: it says so once on stderr (the run, why, and what to do), records nothing, and the
run's own process keeps waiting.  Once that worker is stopped, a worker that can build the
run takes the work up and the run ends with the output of an uninterrupted run (docs/durable.md
"A fleet on PostgreSQL").  Before, the worker's build failure ended the unit, and with it the
run, `error` for good."""

from __future__ import annotations

import json
import re
import subprocess
import time

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


def test_a_worker_without_the_key_leaves_the_items_pending_for_a_worker_with_it(
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
            deadline = time.monotonic() + 60
            while _held_by(postgres.url, "nokey-1", "worker:w1").get("PENDING", 0) < 1:
                assert time.monotonic() < deadline, bad.errors()
                assert run.poll() is None and first.poll() is None, bad.errors()
                time.sleep(0.1)
            time.sleep(1.0)  # time to end the units, were they ended
            held = _held_by(postgres.url, "nokey-1", "worker:w1")
            assert "ERROR" not in held and "SUCCESS" not in held, held
            assert run.poll() is None  # the run goes on waiting
            bad.stop()
            said = bad.errors()
            assert "run nokey-1 cannot be taken up by this process" in said, said
            assert "SCRIPTED_API_KEY" in said, said
            assert "flowc resume nokey-1" in said, said
            assert "Traceback" not in said, said
            good.start("w2")
            out, err = run.communicate(timeout=120)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
    assert run.returncode == 0, err.decode()[-3000:] + good.errors()
    assert json.loads(out) == [{"x": x, "label": x} for x in range(ITEMS)]
