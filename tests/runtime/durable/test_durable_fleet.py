"""A fleet of `flowc worker` processes on one PostgreSQL (the distribution's server, started in
a temporary directory: tests/support/postgres.py; if it cannot start, this test fails) shares
a durable run's map items, and a model's fleet-wide rate limit holds across them."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections import Counter

from support.chat_server import TEST_API_KEY, answer
from support.fleet import (
    Workers,
    fleet_env,
    fleet_project,
    flowc,
    labelled_items_plan,
)

ITEMS = 20  # at 5 model requests a second: 4 s at least, with both workers busy

PLAN = labelled_items_plan("fleet")

TOOLS = """\
import os, time


def where(x: int) -> int:
    \"\"\"Log which process ran item x.\"\"\"
    with open(os.environ["WHERE_LOG"], "a") as f:
        f.write(f"{x} {os.getpid()}\\n")
    time.sleep(0.05)
    return x
"""


def test_two_workers_split_a_map_and_a_fleet_wide_model_rate_limit_holds(
    tmp_path, chat_server, postgres
):
    config = chat_server.config_text(retries=4).replace(
        'default = "scripted:test-model"', 'default = "limited"'
    )
    config += (
        '\n[models.named.limited]\nprovider = "scripted"\nmodel = "test-model"\nrate_limit = 5\n'
    )
    project = fleet_project(
        tmp_path,
        plan=PLAN,
        tools=TOOLS,
        config=config,
        database=postgres.url,
        durable="worker_concurrency = 4\n",  # of the map's 8 items at once, one worker runs 4
    )
    env = fleet_env(SCRIPTED_API_KEY=TEST_API_KEY, WHERE_LOG=str(project / "where.log"))
    stamps: list[float] = []
    lock = threading.Lock()

    def labeller(body: dict) -> object:
        with lock:
            stamps.append(time.monotonic())
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return answer({"x": int(re.search(r"item (\d+)", user).group(1))})

    chat_server.script(labeller)
    with Workers(project, env) as workers:
        procs = [workers.start(name) for name in ("w1", "w2")]
        workers.wait_alive(postgres.url, "w1", "w2")  # both up before the run: both get items
        run = subprocess.run(
            flowc("run", "--durable", "--fleet", "--run-id", "fleet-1", "plan.yaml",
                  "--input", json.dumps({"xs": list(range(ITEMS))})),
            cwd=project, env=env, capture_output=True, timeout=400,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr.decode()[-3000:] + workers.errors()
    assert json.loads(run.stdout) == [{"x": x, "label": x} for x in range(ITEMS)]

    ran = [line.split() for line in (project / "where.log").read_text().splitlines()]
    by_pid = Counter(pid for _, pid in ran)
    worker_pids = {str(w.pid) for w in procs}
    assert set(by_pid) <= worker_pids  # the items ran on the workers ...
    assert len(by_pid) == 2, by_pid  # ... both of them: neither did all
    assert sorted(int(x) for x, _ in ran) == list(range(ITEMS))

    assert len(stamps) == ITEMS
    stamps.sort()
    busiest = max(sum(1 for t in stamps if s <= t < s + 1.0) for s in stamps)
    assert busiest <= 5, str([round(t - stamps[0], 2) for t in stamps])  # never > 5 in any 1 s
