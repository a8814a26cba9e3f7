"""A fleet run's spans form one trace across its processes: `flowc run --durable --fleet --otel`
hands its map items to a `flowc worker --otel` on one PostgreSQL (tests/support/postgres.py),
both exporting to a real OTLP/HTTP receiver on loopback (tests/support/otlp_receiver.py).
Checked: one trace id, no span id exported twice, no parent id that neither process exported,
the worker's spans of each item under the map step the run's process exported, and the run
span exported once (by the run's process, which saw the run end)."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter

from support.chat_server import TEST_API_KEY, answer
from support.fleet import Workers, fleet_env, fleet_project, flowc
from support.otlp_receiver import OtlpReceiver

ITEMS = 4

PLAN = """\
version: 1
name: traced
input_schema: {type: object}
steps:
  - id: E0
    tool_name: user__where
    input: {x: -1}
    meta: {stage: prepare}
  - id: E1
    tool_name: map
    meta: {stage: labels}
    input:
      over: "{{ input.xs }}"
      concurrency: 4
      do:
        tool_name: plan__item
        input: {x: "{{ item }}"}
finish: {mode: output, output: "{{ E1 }}"}
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

TOOLS = """\
def where(x: int) -> int:
    \"\"\"Return x.\"\"\"
    return x
"""


def test_a_workers_spans_of_fleet_items_join_the_runs_one_trace(tmp_path, chat_server, postgres):
    config = chat_server.config_text() + '\n[telemetry]\nservice_name = "fleet-run"\n'
    project = fleet_project(tmp_path, plan=PLAN, tools=TOOLS, config=config, database=postgres.url)
    # the worker's own flow.toml: the same database and tools, another service name (so the
    # test can tell which process exported a span)
    (project / "worker.toml").write_text(
        (project / "flow.toml").read_text().replace('"fleet-run"', '"fleet-worker"')
    )
    env = fleet_env(SCRIPTED_API_KEY=TEST_API_KEY)

    def labeller(body: dict) -> object:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return answer({"x": int(re.search(r"item (\d+)", user).group(1))})

    chat_server.script(labeller)
    with OtlpReceiver() as receiver:
        with Workers(project, env) as workers:
            workers.start("w1", "--config", "worker.toml", "--otel", receiver.url)
            run = subprocess.run(
                flowc("run", "--durable", "--fleet", "--run-id", "traced-1", "plan.yaml",
                      "--input", json.dumps({"xs": list(range(ITEMS))}), "--otel", receiver.url),
                cwd=project, env=env, capture_output=True, timeout=120,
            )  # fmt: skip
        # the worker stopped (Ctrl-C): what it had not exported yet went out as it stopped
        assert run.returncode == 0, run.stderr.decode()[-3000:] + workers.errors()
        assert json.loads(run.stdout) == [{"x": x, "label": x} for x in range(ITEMS)]
        spans = receiver.spans()

    by_service = Counter(s.service for s in spans)
    assert set(by_service) == {"fleet-run", "fleet-worker"}, by_service
    assert len({s.trace_id for s in spans}) == 1  # one trace across both processes
    ids = [s.span_id for s in spans]
    assert len(ids) == len(set(ids)), Counter(ids).most_common(3)  # no span exported twice
    by_id = {s.span_id: s for s in spans}
    runs = [s for s in spans if s.name == "run traced"]
    assert len(runs) == 1 and runs[0].parent_span_id == "" and runs[0].service == "fleet-run"
    run_span = runs[0]
    assert run_span.attributes["agentflow.run.status"] == "ok"
    orphans = [
        (s.name, s.service) for s in spans if s is not run_span and s.parent_span_id not in by_id
    ]
    assert not orphans, orphans  # a complete tree: every parent was exported

    def ancestors(span):
        while span.parent_span_id:
            span = by_id[span.parent_span_id]
            yield span

    # the map step and its stage: exported once, by the run's process
    path = {s.span_id: s.attributes.get("agentflow.step.path") for s in spans}
    maps = [s for s in spans if s.name == "map" and path[s.span_id] == "E1"]
    assert len(maps) == 1 and maps[0].service == "fleet-run"
    the_map = maps[0]
    assert by_id[the_map.parent_span_id].name == "stage labels"

    worker = [s for s in spans if s.service == "fleet-worker"]
    # each item: a child of the map, exported by the worker that ran it
    items = sorted(
        (s for s in spans if s.attributes.get("agentflow.step.tool") == "plan__item"),
        key=lambda s: path[s.span_id],
    )
    assert [path[s.span_id] for s in items] == [f"E1/do.{i}" for i in range(ITEMS)]
    # a hand-written plan's body step has no stage of its own, and on the worker its map
    # (whose stage it would take) is not running: no `.flow` names, so its tool and path
    assert [s.name for s in items] == [f"plan__item E1/do.{i}" for i in range(ITEMS)]
    assert all(s.parent_span_id == the_map.span_id and s.service == "fleet-worker" for s in items)
    # every worker span sits in the map's subtree (the worker runs nothing but items)
    for span in worker:
        assert the_map in list(ancestors(span)), (span.name, [a.name for a in ancestors(span)])
    # each item's tool call, agent and model call ran on the worker, once
    tools = [s for s in worker if s.name == "execute_tool user__where"]
    assert len(tools) == ITEMS
    assert Counter(s.name for s in worker if s.name.startswith("chat "))["chat test-model"] == ITEMS
    assert sum(1 for s in worker if s.name.startswith("invoke_agent")) == ITEMS
    # the run's process exported none of the items' work
    assert not [s for s in spans if s.service == "fleet-run" and s.name.startswith("chat ")]
    assert [
        s.name for s in spans if s.service == "fleet-run" and s.name.startswith("execute_tool")
    ] == ["execute_tool user__where"]  # E0's
    assert all(run_span.start <= s.start and s.end <= run_span.end for s in spans)
