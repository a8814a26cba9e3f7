"""`flowc graph` and the plan's texts of a `match` (docs/reference/expressions.md "match"): the
agent step that is a `match`'s subject is not named for the `let` holding the `match`; a
`meta.lets` entry of a let reading a step holds the `.flow`'s text (the plan's printing beside
it, which the executor matches an error against); an effectful arm's `decide` is titled
`match <subject>` with the subject short as written (`match agent(triage).kind`, not the agent's
whole block) and its branches labelled with the arms' patterns (`"bug"`, `"feature" |
"question"`, `_`), never the compiled `match … => true, _ => false` or a name the compiler made
up (`match_subject_…`)."""

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
    assert "agent(w)" in titles and not any(t.startswith("r = agent") for t in titles)
    # `r` is drawn as the value it computes: the match, as written
    assert any(t.startswith('r = match (agent(w) { task "sev?"') for t in titles), titles
    assert "match k" in titles
    assert not any("=> true" in t for t in titles)
    edges = {e.label for e in g.edges if e.kind == "branch"}
    assert {'"note" | "todo"', "_"} <= edges


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


TRIAGE = """\
use agent "triager" as triage
type Kind { kind: "bug" | "feature" | "question" | "other" }
extern tool user__file_bug(title: text) -> text
extern tool user__log(title: text) -> text
input { title: text }

stage route -> text {
  let r = match agent(triage) { task "Classify ${input.title}" expect Kind }.kind {
    "bug" => user__file_bug(title: input.title),
    "feature" | "question" => agent(triage) { task "Answer ${input.title}" expect text },
    "other" => "x: ${user__log(title: input.title)}",
    _ => "none",
  }
  return r
}
"""


def _graph_of(source: str, tmp_path, fmt: str) -> str:
    path = tmp_path / "triage.flow"
    path.write_text(source, encoding="utf-8")
    return api.graph(path, format=fmt)


def test_a_match_on_an_agent_call_is_titled_with_its_short_subject(tmp_path):
    text = _graph_of(TRIAGE, tmp_path, "mermaid")
    assert '{"<b>r = match agent(triage).kind</b>"}' in text
    # every decide of the chain (the arms left are outlined) says the same
    assert text.count("match agent(triage).kind</b>") == 3
    assert "Classify" not in text  # the agent's block is not spelt out


def test_each_branch_of_an_effectful_match_is_labelled_with_its_arms_patterns(tmp_path):
    mermaid = _graph_of(TRIAGE, tmp_path, "mermaid")
    assert "s_E1 -->|#quot;bug#quot;| s_E1_then" in mermaid
    # a `|` between patterns cannot end Mermaid's edge label
    assert "-->|#quot;feature#quot; #124; #quot;question#quot;| " in mermaid
    assert "-->|#quot;other#quot;| " in mermaid and "-->|_| " in mermaid
    dot = _graph_of(TRIAGE, tmp_path, "dot")
    assert 's_E1 -> s_E1_then [label="\\"bug\\""];' in dot
    assert '[label="\\"feature\\" | \\"question\\""]' in dot
    assert '[label="_"]' in dot


def test_an_arm_is_drawn_as_written_with_no_name_the_compiler_made_up():
    g = build_graph(api.plan_from_data(compile_source(TRIAGE, "triage.flow").plan, "t.flow"))
    texts = [n.title for n in g.nodes] + [d for n in g.nodes for d in n.details]
    texts += [e.label for e in g.edges] + [gr.label for gr in g.groups]
    assert not any("match_subject" in t or "=> true" in t or t == "if" for t in texts)
    titles = [n.title for n in g.nodes]
    # the last arm is its value; the arms left are a box named for them
    assert '"none"' in titles and "user__file_bug(title)" in titles
    assert "match arms" in titles and "match arms of stage route" in [gr.label for gr in g.groups]
    # an outlined chain's value is the match's, not an `if`
    outputs = [n for n in g.nodes if n.kind == "finish" and n.id != "finish"]
    assert outputs and all(n.details == ["match"] for n in outputs)


def test_the_plan_keeps_the_subject_and_patterns_as_written():
    plan = compile_source(TRIAGE, "triage.flow").plan
    (decide,) = [s for s in plan["steps"] if s["tool_name"] == "decide"]
    assert decide["meta"]["match"] == {"subject": "agent(triage).kind", "then": '"bug"'}
    assert "when" not in decide["meta"]
    last = plan["plans"]["triage__route_1"]["steps"][0]
    assert last["meta"]["match"] == {
        "subject": "agent(triage).kind",
        "then": '"other"',
        "else": "_",
    }
    assert last["input"]["else"]["input"] == {"value": '{{ "none" }}'}
