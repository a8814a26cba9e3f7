"""The graph of a plan (ir/graph.py): what each kind of step looks like, data dependencies,
sub-plans, outcome colouring from a trace, and DOT output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentflow import api
from agentflow.ir.graph import build_graph, node_for_path, outcomes_from_events, to_dot, to_mermaid

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
COMPILE = ROOT / "tests" / "compiler" / "compile"


def _graph(path: Path):
    return build_graph(api.load(path))


def test_bug_triage_graph_has_stages_agents_tools_map_and_require():
    g = _graph(EXAMPLES / "bug-triage.flow")
    titles = {n.id: n.title for n in g.nodes}
    # in the .flow's terms: its aliases, its names, its constructs (issue 31 item 3)
    assert titles["s_E0"] == "result = agent(investigator)"
    assert titles["s_E1"] == "require result.suspect_files.count in 0..10"
    assert titles["s_E2"] == "agent(dev.main)"
    assert titles["s_E3"] == "parallel map plan.work as item"
    assert titles["s_E3_do"] == "agent(dev.member(item.owner))"
    details = {n.id: n.details for n in g.nodes}
    assert details["s_E0"][:2] == ["expect Reproduction", "tools: read_file, grep, list_dir"]
    assert "limit 4" in details["s_E3"]
    assert details["s_E3_do"][0] == "expect ChangeResult"
    groups = {gr.id: gr for gr in g.groups}
    assert [gr.label for gr in g.groups if gr.kind == "stage"] == [
        "stage reproduce", "stage plan", "stage implement",
    ]  # fmt: skip
    assert groups["stage_reproduce"].members == ["s_E0", "s_E1"]
    assert (
        groups["s_E3_body"].members == ["s_E3_do"]
        and groups["s_E3_body"].parent == "stage_implement"
    )
    edges = {(e.src, e.dst, e.kind) for e in g.edges}
    assert ("input", "s_E0", "data") in edges
    assert ("s_E0", "s_E2", "data") in edges  # plan reads the reproduction
    assert ("s_E0", "s_E3_do", "data") in edges  # each item reads the hypothesis
    assert ("s_E3", "s_E3_do", "body") in edges
    assert ("s_E3", "finish", "data") in edges
    assert ("s_E0", "tool_builtin__grep", "tool") in edges
    assert {n.title for n in g.nodes if n.kind == "tool"} == {
        "read_file", "grep", "list_dir", "edit_file", "write_file",
    }  # fmt: skip


@pytest.mark.parametrize(
    "flow, expected",
    [
        ("if_else.flow", ["if input.n > 100", "user__note(text)"]),
        ("ask.flow", ['ask "Approve ${input.n} changes?"', 'ask "Ship or hold?"']),
        ("ask.flow", ['ask "Any note? Literal {{ braces }} stay."', 'c = ask "How many']),
        ("verify.flow", ["verify", "v = verify"]),
        ("filter.flow", ["filter input.xs as x where"]),
        ("reduce.flow", ["reduce input.xs as x, acc", "acc + x"]),
        ("require_fail.flow", ["require input.n >= 0", "fail when s == 42"]),
        ("outline.flow", ["map input.xs as x", "map body"]),
    ],
)
def test_each_kind_of_step_is_labelled_by_what_it_does(flow, expected):
    titles = [n.title for n in _graph(COMPILE / flow).nodes]
    for want in expected:
        assert any(want in t for t in titles), (want, titles)


def test_ask_choices_and_verify_checks_are_listed():
    g = _graph(COMPILE / "ask.flow")
    ship = next(n for n in g.nodes if "Ship or hold" in n.title)
    assert "choices: ship, hold" in ship.details and "unanswered: hold" in ship.details
    g = _graph(COMPILE / "verify.flow")
    first = next(n for n in g.nodes if n.id == "s_E0")
    assert first.details[0] == "check input.xs.count > 0"
    second = next(n for n in g.nodes if n.id == "s_E1")
    assert any(d.startswith("judge the title") for d in second.details)


def test_outlined_bodies_are_drawn_as_sub_plans_called_by_their_step():
    g = _graph(COMPILE / "outline.flow")
    plans = [gr.label for gr in g.groups if gr.kind == "plan"]
    assert "map body of stage twice" in plans  # named by the construct it came from
    assert any(e.kind == "call" and e.dst == "p_outline__twice_0__input" for e in g.edges)


def test_mermaid_escapes_labels_and_prefixes_step_ids():
    text = api.graph(COMPILE / "verify.flow")
    assert text.startswith("flowchart TD\n")
    assert "the title #quot;" in text  # a quote inside a label
    assert "s_E0" in text and "\n  E0[" not in text
    assert to_mermaid(_graph(COMPILE / "map.flow")).count("subgraph") >= 2


def test_dot_output_is_a_digraph_with_clusters():
    text = to_dot(_graph(EXAMPLES / "bug-triage.flow"))
    assert text.startswith('digraph "bug_triage" {') and text.rstrip().endswith("}")
    assert "subgraph cluster_stage_reproduce {" in text
    assert "s_E3 -> s_E3_do [penwidth=2" in text


def test_node_for_path_maps_items_bodies_and_sub_plan_steps():
    assert node_for_path("E3", ["root"], "root") == "s_E3"
    assert node_for_path("E3/do.12", ["root"], "root") == "s_E3_do"
    assert node_for_path("E1/then", ["root"], "root") == "s_E1_then"
    assert node_for_path("E0/do.2/E1", ["root", "sub"], "root") == "p_sub__s_E1"
    assert node_for_path("E0/agent.2/builtin__grep", ["root"], "root") is None


def test_node_for_path_keeps_the_step_of_a_catch_body_inside_a_sub_plan():
    # a map item's outlined `… catch` runs its fallback at E0/do.2/E0/catch in the sub-plan
    assert node_for_path("E0/do.2/E0/catch", ["root", "sub"], "root") == "p_sub__s_E0_catch"
    assert node_for_path("E0/do.2/E1/do", ["root", "sub"], "root") == "p_sub__s_E1_do"
    assert node_for_path("E0/do.2/E1/else", ["root", "sub"], "root") == "p_sub__s_E1_else"


def test_run_outcomes_colour_nodes_and_count_map_items(tmp_path):
    events = [
        {"kind": "step_finished", "path": "E0", "stack": ["bug_triage"], "time": 1,
         "data": {"elapsed_ms": 40, "usage": {"inferences": 4}}},
        {"kind": "model_call", "path": "E0", "stack": ["bug_triage"], "time": 1,
         "data": {"input_tokens": 10, "output_tokens": 5}},
        {"kind": "step_finished", "path": "E3/do.0", "stack": ["bug_triage"], "time": 2,
         "data": {"elapsed_ms": 10}},
        {"kind": "step_finished", "path": "E3/do.1", "stack": ["bug_triage"], "time": 2,
         "data": {"elapsed_ms": 10, "error": {"code": "timeout", "message": "slow"}}},
    ]  # fmt: skip
    plan = api.load(EXAMPLES / "bug-triage.flow")
    outcomes = outcomes_from_events(events, plan)
    assert outcomes["s_E0"].status == "ok" and outcomes["s_E0"].inferences == 1
    item = outcomes["s_E3_do"]
    assert (item.status, item.runs, item.failed) == ("partial", 2, 1)
    assert item.error == {"code": "timeout", "message": "slow"}
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    text = api.graph(EXAMPLES / "bug-triage.flow", run=trace)
    assert "class s_E3_do partial" in text
    assert "1/2 ok" in text
    assert "class s_E1,s_E2,s_E3 skipped" in text  # never ran in this (partial) trace
    assert "not run" in text


LOOP_IN_TRY = """
input { rounds: int }
stage total -> int {
  return try {
    loop up to input.rounds as r, n = 0 { n + r } until n > 10 else fail "short"
  } catch { 0 }
}
"""


def test_an_outlined_sub_plan_shows_the_callers_values_as_the_flow_wrote_them(tmp_path: Path):
    # a loop inside `try` compiles to sub-plans reading the caller through `input.env`: the
    # graph showed `loop up to input.env.input.rounds`; it shows `input.rounds`, as written
    f = tmp_path / "t.flow"
    f.write_text(LOOP_IN_TRY, encoding="utf-8")
    g = _graph(f)
    mermaid = to_mermaid(g)
    assert "input.env" not in mermaid and "input.env" not in to_dot(g)
    titles = [n.title for n in g.nodes]
    assert "loop up to input.rounds" in titles, titles
    assert any(e.label == "next round, ≤ input.rounds" for e in g.edges)
    assert any(grp.label == "each round, up to input.rounds" for grp in g.groups)


TEN_STAGES = "flow ten\ninput { n: int }\nextern tool user__f(n: int) -> int\n" + "".join(
    f"stage s{i} -> int {{\n  return user__f(n: input.n + {i})\n}}\n" for i in range(10)
)


def test_stages_are_drawn_top_to_bottom_in_their_order_whatever_they_read(tmp_path: Path):
    # ten stages that each read only the input: the layout followed the data and drew them
    # side by side (2,727 px wide); consecutive steps are now linked (an invisible edge when
    # nothing else links them), so each stage sits below the one before
    f = tmp_path / "ten.flow"
    f.write_text(TEN_STAGES, encoding="utf-8")
    g = _graph(f)
    steps = [n.id for n in g.nodes if n.path and n.kind not in ("finish",)]
    linked = {(e.src, e.dst) for e in g.edges}
    assert len(steps) == 10
    assert all((a, b) in linked for a, b in zip(steps, steps[1:], strict=False))
    assert [gr.label for gr in g.groups] == [f"stage s{i}" for i in range(10)]
    # in DOT the input's long edges to stages placed by the one before do not rank them
    assert to_dot(g).count("[constraint=false]") == 9
    # a step that reads an earlier stage but not the one before it: an invisible edge
    triage = _graph(EXAMPLES / "bug-triage.flow")
    assert any(e.kind == "rank" and (e.src, e.dst) == ("s_E1", "s_E2") for e in triage.edges)
    assert "s_E1 ~~~ s_E2" in to_mermaid(triage)
    assert "s_E1 -> s_E2 [style=invis];" in to_dot(triage)


_COMPILED_NAME = re.compile(r"\bE\d+\b|\baccumulator\b|\{\{|\binput\.env\b|__")


_FLOWS = {p.name: p for p in sorted(COMPILE.glob("*.flow"))} | {
    p.name: p
    for p in sorted(EXAMPLES.glob("**/*.flow"))
    # a file with no stage is a library of types, not a plan (programs.md "Libraries")
    if re.search(r"^stage\b", p.read_text(encoding="utf-8"), re.M)
}


@pytest.mark.parametrize("flow", sorted(_FLOWS))
def test_no_label_shows_a_compiled_name(flow):
    # labels, body groups and edge labels in the .flow's terms: never a step id (`E2: map over
    # E0`), `accumulator`, a `{{ … }}` template, `input.env`, or an outlined plan's name
    g = _graph(_FLOWS[flow])
    shown = [n.title for n in g.nodes if n.kind != "tool"] + [
        d for n in g.nodes if n.kind != "tool" for d in n.details
    ]
    shown += [gr.label for gr in g.groups] + [e.label for e in g.edges]
    source = _FLOWS[flow].read_text(encoding="utf-8")
    for text in shown:
        for bad in _COMPILED_NAME.findall(text):
            assert bad in source, (bad, text)


ROUTE = """
use agent "triage" as triage
type Ticket { kind: "billing" | "bug" | "other", confidence: number }
input { text: text }
stage classify -> Ticket {
  agent(triage) { task "Classify: ${input.text}" expect Ticket }
}
stage route -> text {
  let kind = if classify.confidence < 0.5 then "other" else classify.kind
  require kind != "spam" else fail "spam"
  if kind == "billing" {
    return "to billing"
  }
  if kind == "bug" {
    return "to engineering"
  }
  return "to triage"
}
"""


def test_conditions_name_an_inlined_let_as_the_flow_wrote_it(tmp_path: Path):
    # `kind` is inlined as its text into the first `if` (the second reads it through the
    # outlined sub-plan's input.env): both are titled with the name the user wrote
    f = tmp_path / "route.flow"
    f.write_text(ROUTE, encoding="utf-8")
    titles = [n.title for n in _graph(f).nodes]
    assert 'if kind == "billing"' in titles, titles
    assert 'if kind == "bug"' in titles, titles
    assert 'require kind != "spam"' in titles, titles
    # the let itself is drawn once, as a computed value; no step is titled with its text
    shown = [t for t in titles if "confidence" in t]
    assert shown == ['kind = if classify.confidence < 0.5 then "other" else class…'], titles


RELEASE = """
type Choice = "ship" | "hold"
input { items: text[] }
extern tool user__slow_len(s: text) -> int
stage sizes -> int[] {
  map input.items as s { user__slow_len(s: s) }
}
stage decide -> Choice {
  ask "Ship ${sizes.count} items?" expect Choice default "hold"
}
"""


def _ev(kind: str, path: str = "", **data) -> dict:
    return {"kind": kind, "path": path, "stack": ["release"], "time": 1, "data": data}


def _item(n: int) -> list[dict]:
    return [
        _ev("step_started", f"E0/do.{n}", tool_name="user__slow_len"),
        _ev("step_finished", f"E0/do.{n}", tool_name="user__slow_len", result=1, elapsed_ms=500),
    ]


#: the trace of a process SIGKILLed while the map's item 2 ran (no step_finished, no run_finished)
KILLED = [
    _ev("run_started", plan="release"),
    _ev("step_started", "E0", tool_name="map", input={"over": ["a", "bb", "ccc"]}),
    *_item(0),
    *_item(1),
    _ev("step_started", "E0/do.2", tool_name="user__slow_len"),
]
#: the trace `flowc resume --trace` wrote: items 0 and 1 were replayed from the record
RESUMED = [
    _ev("run_started", plan="release"),
    _ev("step_started", "E0", tool_name="map", input={"over": ["a", "bb", "ccc"]}),
    *_item(2),
    _ev("step_finished", "E0", tool_name="map", result=[1, 2, 3], elapsed_ms=600),
    _ev("step_started", "E1", tool_name="ask"),
    _ev("step_finished", "E1", tool_name="ask", result="ship", elapsed_ms=1),
    _ev("run_finished", status="ok"),
]


@pytest.mark.parametrize(
    ("events", "map_line", "item_line"),
    [
        (KILLED, "running", "2 ok, 1 running · 1.00s"),
        (RESUMED, "ok · 0.60s", "3/3 ok · 2 from the record · 0.50s"),
        (KILLED + RESUMED, "ok · 0.60s", "3/3 ok · 1.50s"),  # one file, resumed into it
    ],
    ids=["killed", "resumed", "appended"],
)
def test_a_map_of_an_interrupted_or_resumed_run_counts_its_items(
    tmp_path: Path, events, map_line, item_line
):
    flow = tmp_path / "release.flow"
    flow.write_text(RELEASE, encoding="utf-8")
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    text = api.graph(flow, run=trace)
    assert f"map input.items as s</b><br/><i>{map_line}</i>" in text, text
    assert f"user__slow_len(s)</b><br/><i>{item_line}</i>" in text, text
    if events is KILLED:
        assert "class s_E0,s_E0_do running" in text
