"""The graph and run-time errors say an expression as the `.flow` writes it, not as the compiler
inlined it: a node reads ``if pick > 10 …`` (not ``if input.n * 2 > 10 …``), a stage inlined
where it is read is still drawn (a pure node), and a failing sub-expression is quoted with its
``let``s by name and its caret where it is written (docs/observability.md "Values as written,
and pure stages", docs/reference/errors.md)."""

from __future__ import annotations

from click.testing import CliRunner

from agentflow.cli import main

PICK = """input { n: int }
stage pick -> int { let doubled = input.n * 2
  return doubled }
stage label -> text { return if pick > 10 then "big" else "small" }
"""

POLL = """input { topic: text }
extern tool user__draft(topic: text) -> text
stage draft -> text { return user__draft(topic: input.topic) }
stage decide -> "publish" | "hold" {
  let answer = ask "Publish ${draft}?" expect "publish" | "hold" default "hold"
  return answer
}
stage out -> text { return if decide == "publish" then draft else "held" }
"""

STATS = """input { scores: number[] }
stage stats -> { mean: number, n: int } {
  let total = sum(input.scores)
  return { mean: round(total / len(input.scores), 2), n: len(input.scores) }
}
"""

STATS_AFTER_A_STEP = """input { scores: number[] }
extern tool user__note(text: text) -> text
stage pre -> text { return user__note(text: "x") }
stage stats -> { mean: number, n: int } {
  let total = sum(input.scores)
  return {
    mean: round(total / len(input.scores), 2),
    n: len(input.scores) }
}
"""


def _cli(tmp_path, monkeypatch, name: str, text: str, *args: str):
    (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "tools.py").write_text("def note(text: str) -> str:\n    return text\n")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(main, [*args[:1], name, *args[1:]])


def test_the_graph_titles_an_inlined_expression_as_written_and_draws_the_pure_stage(
    tmp_path, monkeypatch
):
    res = _cli(tmp_path, monkeypatch, "p.flow", PICK, "graph")
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert 's_E0["<b>if pick #gt; 10 then #quot;big#quot; else #quot;small#quot;</b>"]' in out
    assert "input.n * 2 #gt; 10" not in out
    assert 'subgraph stage_pick["stage pick"]' in out
    assert 'pure_pick["<b>input.n * 2</b><br/>pure: inlined where it is read"]' in out
    assert "pure_pick --> s_E0" in out and "input --> pure_pick" in out


def test_the_output_node_names_the_stage_it_reads_not_the_let_behind_it(tmp_path, monkeypatch):
    res = _cli(tmp_path, monkeypatch, "poll.flow", POLL, "graph")
    assert res.exit_code == 0, res.output
    assert "if decide == #quot;publish#quot; then draft else #quot;held#quot;" in res.stdout
    assert "if answer ==" not in res.stdout


def test_a_failing_sub_expression_is_quoted_as_written_with_its_caret_on_it(tmp_path, monkeypatch):
    res = _cli(tmp_path, monkeypatch, "d.flow", STATS, "run", "--input", '{"scores": []}')
    assert res.exit_code == 1
    assert "`total / len(input.scores)`: division by zero" in res.stderr
    assert "sum(input.scores) /" not in res.stderr
    lines = res.stderr.splitlines()
    at = lines.index("  --> d.flow:4:24")
    assert lines[at + 1].endswith(
        "return { mean: round(total / len(input.scores), 2), n: len(input.scores) }"
    )
    assert lines[at + 2].index("^") == lines[at + 1].index("total /")


def test_the_flows_output_after_a_step_is_placed_the_same_way(tmp_path, monkeypatch):
    res = _cli(
        tmp_path, monkeypatch, "d2.flow", STATS_AFTER_A_STEP, "run", "--input", '{"scores": []}'
    )
    assert res.exit_code == 1
    assert "in stats › return (step finish): `total / len(input.scores)`: division" in res.stderr
    assert "  --> d2.flow:7:17" in res.stderr
