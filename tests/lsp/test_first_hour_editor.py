"""The editor and the formatter in a new user's first hour (issue 36 item 8): hovering a type
shows it as written — its fields' `///` descriptions and constraints — clause completion leaves
out the clauses the agent block has, and `flowc fmt` keeps a multi-line `stub … then …`
indented."""

from __future__ import annotations

from agentflow.compiler.fmt import format_source
from agentflow.lsp.analysis import analyze

TYPED = """\
/// a review of one file
type Review {
  /// how good, 0 to 10
  score: int @range(0, 10)
  notes: text
}
use agent "reviewer" as reviewer

stage s -> Review {
  return agent(reviewer) { task "review" tools none expect Review }
}
"""


def test_hover_on_a_type_shows_its_descriptions_and_constraints():
    a = analyze(TYPED, "h.flow")
    text, _ = a.hover(TYPED.rindex("Review"))
    assert "/// how good, 0 to 10" in text
    assert "score: int @range(0, 10)" in text
    assert "a review of one file" in text


def test_clause_completion_leaves_out_the_clauses_present():
    src = (
        'use agent "r" as r\nstage s -> text {\n  return agent(r) {\n    task "x"\n    \n'
        "    expect text\n  }\n}\n"
    )
    a = analyze(src, "c.flow")
    labels = [c.label for c in a.completions(src.index("    \n") + 4)]
    assert "task" not in labels and "expect" not in labels
    assert {"tools", "input", "timeout"} <= set(labels)


def test_fmt_indents_the_then_lines_of_a_multi_line_stub():
    src = (
        'use agent "writer" as writer\n\nstage s -> text {\n'
        '  return agent(writer) { task "x" tools none expect text }\n}\n\n'
        'test "t" {\n  stub agent writer returns "a"\n    then "b"\n    then always "c"\n'
        '  expect s == "a"\n}\n'
    )
    assert format_source(src) == src
    flat = src.replace('    then "b"', 'then "b"').replace("    then always", "then always")
    assert format_source(flat) == src
