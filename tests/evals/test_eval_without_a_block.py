"""`flowc eval` of a flow with no eval block scores each case given on the command line by
`output == expected` and says so in the report's first line; with no dataset either it says so
about the whole file (no line) and shows the block's form (docs/reference/evals.md "With no
eval block")."""

from __future__ import annotations

from click.testing import CliRunner

from agentflow.cli import main
from agentflow.evals.runner import prepare

FLOW = """// a comment on line 1
flow chain
input { topic: text }
stage s -> text { return "about ${input.topic}" }
"""

CASES = (
    '{"input": {"topic": "tides"}, "expected": "about tides"}\n'
    '{"input": {"topic": "x"}, "expected": "nope"}\n'
)


def test_eval_of_a_flow_without_an_eval_block_or_dataset_says_so_about_the_file(tmp_path):
    flow = tmp_path / "f.flow"
    flow.write_text("input { n: int }\nstage s -> int {\n  input.n\n}\n", encoding="utf-8")
    (d,) = prepare(flow).diagnostics
    assert d.message == "this flow has no eval block, and no dataset is given"
    assert d.span.line == 0  # the whole file, not the comment on line 1
    assert '`eval "quality" { dataset "cases.jsonl"  score exact = output == expected }`' in d.hint


def test_cases_of_a_flow_without_an_eval_block_are_scored_output_equals_expected(
    tmp_path, monkeypatch
):
    (tmp_path / "chain.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(CASES, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["eval", "chain.flow", "cases.jsonl", "--model", "test"])
    assert res.exit_code == 0, res.output
    first = res.stdout.splitlines()[0]
    assert first == (
        "eval of chain.flow (no eval block: each case scored exact = output == expected): "
        "2 case run(s)"
    )
    assert "exact   test   0.50  50%" in res.stdout
    assert "1 of 2 passed" in res.stdout
