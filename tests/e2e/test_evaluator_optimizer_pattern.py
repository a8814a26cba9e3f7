"""The evaluator-optimizer pattern (examples/patterns/evaluator-optimizer.flow, issue 27): a
critique loop in at most 25 lines that checks clean, passes its own `test` blocks with `flowc
test`, runs with `flowc run --model test`, shows its worst case as bound × body in `flowc cost`,
draws the loop's back edge in `flowc graph`, names each round in its events and its report
(`revise › round 2 › agent(critic)`), and replays its shipped cassette
(examples/patterns/evaluator-optimizer.cassette.jsonl, recorded with the other patterns' by
scripts/record_pattern_cassettes.py; tests/e2e/test_patterns.py checks it is current)."""

from __future__ import annotations

import json

from click.testing import CliRunner
from support.chat_server import answer
from support.paths import EXAMPLES

from agentflow import api
from agentflow.cli import main
from agentflow.compiler.api import check_file
from agentflow.runtime.events import CallbackSink

FLOW = EXAMPLES / "patterns" / "evaluator-optimizer.flow"
CASSETTE = EXAMPLES / "patterns" / "evaluator-optimizer.cassette.jsonl"
CONFIG = EXAMPLES / "patterns" / "flow.toml"


def test_it_replays_its_cassette_with_flowc_run(tmp_path):
    args = ["run", str(FLOW), "--input", '{"topic": "tea"}', "--replay", str(CASSETTE)]
    result = CliRunner().invoke(main, [*args, "--config", str(CONFIG), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)["output"]
    assert out == {
        "text": "A first draft on tea. (revised: make it shorter)",
        "approved": True,
        "rounds": 2,
    }


def test_the_critique_loop_is_at_most_25_lines_and_checks_clean():
    lines = FLOW.read_text(encoding="utf-8").split("\n")
    program = lines[: next(i for i, line in enumerate(lines) if line.startswith("test "))]
    while program and not program[-1].strip():
        program.pop()
    assert len(program) <= 25
    assert check_file(str(FLOW)).diagnostics == []


def test_its_tests_pass_with_flowc_test():
    result = CliRunner().invoke(main, ["test", "--no-cache", str(FLOW)])
    assert result.exit_code == 0, result.output
    assert "3 passed, 0 failed" in result.output


def test_it_runs_with_the_test_model():
    result = CliRunner().invoke(
        main, ["run", str(FLOW), "--model", "test", "--input", '{"topic": "tea"}']
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout[result.stdout.index("{") :])
    assert set(out) == {"text", "approved", "rounds"} and 1 <= out["rounds"] <= 4


def test_flowc_cost_shows_the_loop_as_bound_times_body():
    result = CliRunner().invoke(main, ["cost", str(FLOW)])
    assert result.exit_code == 0, result.output
    # each round: the critic and the writer, 8 rounds and 8 repairs each (agent defaults)
    assert (
        "  loop revise › loop (evaluator-optimizer.flow:12:3): "
        "up to 4 rounds × 32 per round = 128\n" in result.output
    )
    assert "  total   144\n" in result.output  # the first draft's 16 + the loop's 128


def test_flowc_graph_draws_the_back_edge_with_its_bound():
    text = api.graph(FLOW)
    assert "loop up to 4" in text and "each round, up to 4" in text
    assert "s_E1_do -.->|next round, ≤ 4| s_E1" in text
    # the body is drawn inside the loop's box, as the tutorial says (not a top-level group)
    from agentflow.api import load
    from agentflow.ir.graph import build_graph

    groups = {g.id: g for g in build_graph(load(FLOW)).groups}
    body = next(g for g in groups.values() if g.label.startswith("loop body of stage"))
    assert body.parent == "s_E1_body" and groups["s_E1_body"].label == "each round, up to 4"
    nested = text.split('subgraph s_E1_body["each round, up to 4"]', 1)[1]
    assert nested.index(f"subgraph {body.id}[") < nested.index("  end\n  end")


async def test_events_spans_and_the_report_name_each_round(tmp_path, chat_server, scripted_config):
    def model(body: dict) -> object:
        task = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if "Approve this draft" in task:
            return answer({"approved": "v2" in task, "notes": "shorter"})
        return answer({"text": "v2" if "Revise" in task else "v1"})

    chat_server.script(model)
    events: list = []
    trace = tmp_path / "trace.jsonl"
    result = await api.run(
        FLOW, {"topic": "tea"}, config=scripted_config, trace=trace,
        sinks=[CallbackSink(events.append)],
    )  # fmt: skip
    assert result.status == "ok", result.error
    assert result.output == {"text": "v2", "approved": True, "rounds": 2}
    labels = {e.data.get("label") for e in events if e.kind == "step_started"}
    assert {"revise › round 1 › agent(critic)", "revise › round 2 › agent(critic)"} <= labels
    assert "revise › round 1 › next = agent(writer)" in labels
    paths = {e.path for e in events if e.kind == "step_finished"}
    assert {"E1/round.1", "E1/round.2"} <= paths and "E1/round.3" not in paths
    html = api.report(trace, plan=FLOW)
    assert "revise › round 2 › agent(critic)" in html


def test_the_graph_coloured_by_a_run_counts_each_round_on_the_loop_body(tmp_path):
    from agentflow.ir.graph import outcomes_from_events

    trace = tmp_path / "trace.jsonl"
    args = ["run", str(FLOW), "--input", '{"topic": "tea"}', "--replay", str(CASSETTE)]
    result = CliRunner().invoke(main, [*args, "--config", str(CONFIG), "--trace", str(trace)])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    outcomes = outcomes_from_events(events, api.load(FLOW))
    assert outcomes["s_E1_do"].runs == 2 and outcomes["s_E1_do"].status == "ok"
