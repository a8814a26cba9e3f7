"""`flowc graph` and `flowc cost` of a `parallel { … }` block (docs/reference/control.md
"parallel blocks"): the branches are drawn side by side in one group under the block, each
reached by an edge named for its branch; the worst case counts every branch's model calls."""

from __future__ import annotations

from agentflow import api
from agentflow.api import compile_source
from agentflow.ir.graph import build_graph

FLOW = """\
flow f
input { diff: text, path: text }
use agent "reviewer" as style
use agent "reviewer" as security
type StyleReview { ok: bool }
type SecurityReview { risks: text[] }
extern tool check_deps(path: text) -> { ok: bool }

stage review {
  let r = parallel limit 2 {
    style: agent(style) { task "Style of ${input.diff}" tools none max_iterations 2 expect StyleReview },
    security: agent(security) { task "Risks of ${input.diff}" tools none max_iterations 3 expect SecurityReview },
    deps: check_deps(path: input.path),
  }
  return r
}
"""


def _plan():
    return api.plan_from_data(compile_source(FLOW, "f.flow").plan, "f.flow")


def test_the_branches_are_side_by_side_under_the_block():
    g = build_graph(_plan())
    titles = {n.id: n.title for n in g.nodes}
    assert titles["s_E0"] == "r = parallel"
    (group,) = [grp for grp in g.groups if set(grp.members) >= {"s_E0_style", "s_E0_deps"}]
    assert sorted(group.members) == ["s_E0_deps", "s_E0_security", "s_E0_style"]
    assert titles["s_E0_style"].startswith("agent(style)")
    branch_edges = {(e.dst, e.label) for e in g.edges if e.src == "s_E0" and e.kind == "body"}
    assert branch_edges == {
        ("s_E0_style", "style"),
        ("s_E0_security", "security"),
        ("s_E0_deps", "deps"),
    }
    # no edge between two branches: neither waits for the other
    members = set(group.members)
    assert not [e for e in g.edges if e.src in members and e.dst in members]


def test_the_worst_case_counts_every_branch():
    cost = api.worst_case_cost(_plan())
    # 2 + 3 rounds of `chat`, each with at most one `repair`
    assert cost["roles"]["chat"] == "5"
    assert cost["total"] == "10"
