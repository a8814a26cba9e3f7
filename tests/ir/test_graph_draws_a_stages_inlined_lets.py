"""`flowc graph` draws an inlined `let` of a stage as a computed value — `name = value` as
written, in its stage's box, with arrows from what it reads and to the step that holds it —
where it used to vanish into the template that reads it (a new user's trial;
docs/observability.md "Values as written, and pure stages")."""

from __future__ import annotations

from pathlib import Path

from agentflow import api
from agentflow.ir.graph import build_graph

GRADE = """\
input { score: int }
stage grade -> text {
  let letter = if input.score >= 90 then "A" else "B"
  let shout = "${letter}!"
  let n = 3
  return "grade ${letter} for ${input.score} ${shout} ${n}"
}
"""

PURE = """\
input { score: int }
stage grade -> text {
  let letter = if input.score >= 90 then "A" else "B"
  return "grade ${letter}"
}
use agent "w" as writer
stage report -> text {
  agent(writer) { task "Write about ${grade}." expect text }
}
"""


def _graph(tmp_path: Path, text: str):
    f = tmp_path / "g.flow"
    f.write_text(text, encoding="utf-8")
    return build_graph(api.load(str(f)))


def test_a_stages_lets_are_drawn_in_its_box_with_what_they_read(tmp_path):
    g = _graph(tmp_path, GRADE)
    letter = g.node("let_grade_letter")
    shout = g.node("let_grade_shout")
    assert letter is not None and shout is not None
    assert letter.kind == "value" and letter.source == "g.flow:3:16"
    assert letter.title == 'letter = if input.score >= 90 then "A" else "B"'
    assert shout.title == 'shout = "${letter}!"'
    (box,) = [group for group in g.groups if group.label == "stage grade"]
    assert {"let_grade_letter", "let_grade_shout"} <= set(box.members)
    edges = {(e.src, e.dst) for e in g.edges}
    assert {
        ("input", "let_grade_letter"),
        ("let_grade_letter", "let_grade_shout"),
        ("let_grade_letter", "s_E0"),
        ("let_grade_shout", "s_E0"),
    } <= edges
    # a literal is no computed value: `n = 3` is not drawn
    assert not any(n.title.startswith("n = ") for n in g.nodes)


def test_a_pure_stages_lets_are_drawn_beside_its_pure_node(tmp_path):
    g = _graph(tmp_path, PURE)
    letter = g.node("let_grade_letter")
    assert letter is not None
    assert ("let_grade_letter", "pure_grade") in {(e.src, e.dst) for e in g.edges}
    mermaid = api.graph(str(tmp_path / "g.flow"))
    assert 'let_grade_letter["<b>letter = if input.score #gt;= 90' in mermaid
