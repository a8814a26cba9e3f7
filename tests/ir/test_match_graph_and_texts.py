"""`flowc graph` and the plan's texts of a `match` (docs/reference/expressions.md "match"): the
agent step that is a `match`'s subject is not named for the `let` holding the `match`; a
`meta.lets` entry of a let reading a step holds the `.flow`'s text (the plan's printing beside
it, which the executor matches an error against); an effectful arm's `decide` is titled with
its test as written (`k == "note"`), not the compiled `match … => true, _ => false`."""

from __future__ import annotations

from agentflow import api
from agentflow.api import compile_source
from agentflow.ir.graph import build_graph

FLOW = """\
type Sev = "low" | "high"
use agent "w" as w
extern tool read_file(path: path) -> text
input { t: text, kinds: text[] }

stage s -> int {
  let r = match (agent(w) { task "sev?" expect Sev }) {
    "low" => parse_int(input.t) + 1,
    "high" => 2,
  }
  let notes = map input.kinds as k {
    match k { "note" | "todo" => read_file(path: "a"), _ => "x" }
  }
  return r * 2 + notes.count
}

test "an error of the let is placed at the let" {
  input { t: "x", kinds: [] }
  stub agent w returns "low"
  expect output == 2
}
"""


def _compiled():
    return compile_source(FLOW, "m.flow").plan


def test_the_subject_agent_is_not_named_for_the_let_of_the_match():
    g = build_graph(api.plan_from_data(_compiled(), "m.flow"))
    titles = [n.title for n in g.nodes]
    assert "agent(w)" in titles and not any(t.startswith("r = ") for t in titles)
    assert 'if k in ["note", "todo"]' in titles
    assert not any("=> true" in t for t in titles)


def test_a_let_reading_a_step_keeps_the_flows_text_and_its_error_is_placed_there(tmp_path):
    (entry,) = _compiled()["finish"]["meta"]["lets"]
    assert entry["name"] == "r" and entry["source"] == "m.flow:7:11"
    assert entry["text"] == (
        'match (agent(w) { task "sev?" expect Sev }) {\n'
        '  "low" => parse_int(input.t) + 1,\n  "high" => 2,\n}'
    )
    assert "E0" not in entry["text"] and entry["expr"].startswith("match E0 {")
    (tmp_path / "m.flow").write_text(FLOW, encoding="utf-8")
    (outcome,) = api.run_tests(tmp_path).outcomes
    assert not outcome.passed
    assert any(
        "is not an integer (at " in str(f) and str(f).endswith("m.flow:7:11)")
        for f in outcome.failures
    )
