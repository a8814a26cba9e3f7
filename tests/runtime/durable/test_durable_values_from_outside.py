"""A durable run records whatever a host hands it (issue 28, item 11): an input holding a lone
surrogate reaches a tool step, whose durable record (keyed by a digest of its
arguments) and result are written and read back; the trace reads back whole."""

from __future__ import annotations

import agentflow
from agentflow.runtime.events import read_trace

FLOW = """flow g
input { said: text }

stage s -> int {
  let hits = grep(pattern: input.said, path: ".")
  return hits.count
}
"""


async def test_a_durable_run_records_an_input_holding_a_lone_surrogate(tmp_path):
    (tmp_path / "g.flow").write_text(FLOW, encoding="utf-8")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("x\ny\n", encoding="utf-8")
    trace = tmp_path / "t.jsonl"
    result = await agentflow.run(
        str(tmp_path / "g.flow"),
        {"said": "\udcd9|y"},
        workspace=str(ws),
        durable=True,
        database=str(tmp_path / "db.sqlite"),
        trace=str(trace),
    )
    assert result.status == "ok", result.error
    assert result.output == 1  # the line of "y" matched
    kinds = [e["kind"] for e in read_trace(trace)]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"


async def test_a_durable_runs_int_input_given_as_3_0_is_the_int_3(tmp_path):
    # round 41: the durable engine validates the input (and makes `int`s ints) before it
    # records it, so a resumed or reused run reads the int too
    (tmp_path / "i.flow").write_text(
        'flow i "i"\ninput { a: int }\n'
        'stage s -> text { return "item ${input.a} of ${[10,20,30,40][input.a]}" }\n'
    )
    result = await agentflow.run(
        str(tmp_path / "i.flow"),
        {"a": 3.0},
        workspace=str(tmp_path),
        durable=True,
        database=str(tmp_path / "db.sqlite"),
    )
    assert result.status == "ok", result.error
    assert result.output == "item 3 of 40"
