"""`flowc eval` of a flow with no eval block says so and shows the block's form
(docs/reference/evals.md)."""

from __future__ import annotations

from agentflow.evals.runner import prepare


def test_eval_of_a_flow_without_an_eval_block_says_so_and_shows_the_block(tmp_path):
    flow = tmp_path / "f.flow"
    flow.write_text("input { n: int }\nstage s -> int {\n  input.n\n}\n", encoding="utf-8")
    (d,) = prepare(flow).diagnostics
    assert d.message == "this flow has no eval block"
    assert '`eval "quality" { dataset "cases.jsonl"  score exact = output == expected }`' in d.hint
