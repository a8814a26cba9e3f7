"""A stage reads another stage by its name: the graph (and the web console's run page, which
draws the same graph) shows `draft.text` as written, never the other stage's `let` (`d.text`),
which is out of the reader's scope (ir/names.py ``step_names_in_stage``)."""

from __future__ import annotations

from agentflow import api
from agentflow.ir.graph import build_graph
from agentflow.ir.loader import load_plan_data

FLOW = """\
input { subject: text }
type Draft { text: text }
use agent "writer" as writer

stage draft -> Draft {
  let d = agent(writer) { task "Draft a reply about ${input.subject}" tools none expect Draft }
  let shown = "${d.text}!"
  return d
}

stage approve -> bool {
  let ok = ask "Send this reply? ${draft.text}" expect bool default false
  return ok
}
"""


def test_a_stage_read_from_another_stage_is_shown_by_the_stage_name_not_its_let():
    plan = load_plan_data(api.compile_source(FLOW, "approve.flow").plan, "approve.flow")
    titles = [n.title for n in build_graph(plan).nodes]
    assert 'ok = ask "Send this reply? ${draft.text}"' in titles
    assert not any("${d.text}" in t and "ask" in t for t in titles)
    assert "d = agent(writer)" in titles  # in its own stage, the let keeps its name
