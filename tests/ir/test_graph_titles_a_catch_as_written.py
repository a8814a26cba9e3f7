"""The graph titles each catch form as the `.flow` writes it: `let w = f(x) catch { … }` (no
`try` written, the step's ``meta.kind: catch``) is `w = … catch` with its guarded expression
behind a `guarded` edge, `let v = try { … } catch { … }` is `v = try … catch` behind a `try`
edge — in Mermaid, DOT and the report's SVG alike (docs/reference/errors-as-values.md
"Progress")."""

from __future__ import annotations

from agentflow import api
from agentflow.api_compile import compile_source
from agentflow.ir.graph import build_graph
from agentflow.ir.graph_svg import text_alternative, to_svg

FLOW = """\
extern tool user__fetch(url: text) -> text
stage s -> text {
  let w = user__fetch(url: "a") catch { "x" }
  let v = try { user__fetch(url: "b") } catch { "y" }
  "${w}${v}"
}
"""


def test_a_catch_with_no_try_written_is_titled_catch_and_a_try_block_try_catch(tmp_path):
    flow = tmp_path / "c.flow"
    flow.write_text(FLOW)
    mermaid = api.graph(flow)
    assert '["<b>w = … catch</b>"]' in mermaid
    assert '["<b>v = try … catch</b>"]' in mermaid
    assert "w = try" not in mermaid
    assert "s_E0 ==>|guarded| s_E0_do" in mermaid
    assert "s_E1 ==>|try| s_E1_do" in mermaid
    dot = api.graph(flow, format="dot")
    assert 'label="w = … catch"' in dot and 'label="v = try … catch"' in dot
    assert 's_E0 -> s_E0_do [penwidth=2, label="guarded"]' in dot


def test_the_report_graph_titles_a_catch_as_written():
    graph = build_graph(api.plan_from_data(compile_source(FLOW, "c.flow").plan, "c.flow"))
    titles = {n.path: n.title for n in graph.nodes}
    assert titles["E0"] == "w = … catch" and titles["E1"] == "v = try … catch"
    for shown in (to_svg(graph), text_alternative(graph)):
        assert "w = … catch" in shown and "w = try" not in shown
