"""A restarted worker takes over its predecessor's work: `flowc worker --name w1` killed with
SIGKILL while it runs a fleet run's map item (its tool mid-call, other items finished), then a
new `flowc worker --name w1` started on the same PostgreSQL (tests/support/postgres.py).  The
run (its own process waiting all along) ends with the output of an uninterrupted run; no
finished item's tool call or model call runs again, only the one in flight at the kill.  With
`--otel` on every process (a real OTLP/HTTP receiver on loopback: tests/support/otlp_receiver.py)
the run's trace stays whole across the kill."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter

from support.chat_server import TEST_API_KEY, answer
from support.fleet import (
    Workers,
    fleet_env,
    fleet_project,
    flowc,
    hanging_where_tools,
    labelled_items_plan,
    wait_for_the_hang,
    where_log,
)
from support.otlp_receiver import OtlpReceiver

ITEMS = 6
HANGS = 3  # the item whose tool call hangs the first time (the kill comes then)

PLAN = labelled_items_plan("restart")

TOOLS = hanging_where_tools(HANGS)


def test_a_worker_restarted_under_its_name_finishes_its_predecessors_items(
    tmp_path, chat_server, postgres
):
    project = fleet_project(
        tmp_path, plan=PLAN, tools=TOOLS, config=chat_server.config_text(), database=postgres.url
    )
    log = project / "where.log"
    env = fleet_env(SCRIPTED_API_KEY=TEST_API_KEY, WHERE_LOG=str(log))
    labelled: list[int] = []

    def labeller(body: dict) -> object:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        x = int(re.search(r"item (\d+)", user).group(1))
        labelled.append(x)
        return answer({"x": x})

    chat_server.script(labeller)
    with OtlpReceiver() as receiver, Workers(project, env) as workers:
        first = workers.start("w1", "--otel", receiver.url)
        run = subprocess.Popen(
            flowc("run", "--durable", "--fleet", "--run-id", "restart-1", "plan.yaml",
                  "--input", json.dumps({"xs": list(range(ITEMS))}), "--otel", receiver.url),
            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            # every other item's result recorded, the hanging one in its tool call: kill
            wait_for_the_hang(
                log, postgres.url, "restart-1", hangs=HANGS, items=ITEMS, procs=[run, first],
                workers=workers,
            )  # fmt: skip
            workers.kill(first)
            second = workers.start("w1", "--otel", receiver.url)
            out, err = run.communicate(timeout=60)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        workers.stop()  # the new worker's last spans exported as it stops
        spans = receiver.spans()
    assert run.returncode == 0, err.decode()[-3000:] + workers.errors()
    assert json.loads(out) == [{"x": x, "label": x} for x in range(ITEMS)]

    entries = where_log(log)
    starts = Counter(x for w, x, _ in entries if w == "start")
    # the call in flight at the kill ran again (at-least-once); no finished one did
    assert starts == Counter({**{x: 1 for x in range(ITEMS)}, HANGS: 2}), entries
    assert {pid for w, x, pid in entries if w == "start" and x != HANGS} == {first.pid}
    # the hanging item was finished by the new worker
    assert [(w, pid) for w, x, pid in entries if x == HANGS] == [
        ("start", first.pid),
        ("start", second.pid),
        ("end", second.pid),
    ]
    assert sorted(labelled) == list(range(ITEMS))  # one model call per item: none repeated

    # the trace is whole: the killed worker exported each finished item's spans before its
    # result was recorded; what it held (the item, its tool call in flight) the new one
    # exported under the same pinned ids; nothing twice
    assert len({s.trace_id for s in spans}) == 1
    ids = {s.span_id for s in spans}
    assert len(ids) == len(spans)
    assert not [s.name for s in spans if s.parent_span_id and s.parent_span_id not in ids]
    (the_map,) = (s for s in spans if s.name == "map E1")
    items = sorted((s for s in spans if s.name.startswith("plan__item ")), key=lambda s: s.name)
    assert [s.name for s in items] == [f"plan__item E1/do.{i}" for i in range(ITEMS)]
    assert all(s.parent_span_id == the_map.span_id for s in items)
    calls = Counter(
        s.attributes["agentflow.step.path"] for s in spans if s.name == "execute_tool user__where"
    )
    assert calls == Counter(f"E1/do.{i}/S0" for i in range(ITEMS))  # the killed call: not exported
