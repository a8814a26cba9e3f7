"""Fields are offered after a `.` typed in a line that does not parse yet or whose expression
ends at the dot (docs/editors.md "completion"): `let lab = if it.` (no `then` yet),
`take(top[0].` (no `)` yet), and the `else` arm of a conditional, `… else it.`, whose dot
ends the arm's receiver, not the whole `if`."""

from __future__ import annotations

import pytest

from agentflow.lsp.analysis import analyze

SOURCE = """\
type Item { name: text, score: int }
input { items: Item[], ok: bool }
stage labels -> text[] {
  map input.items as it {
    let lab = if it.score > 5 then "hi" else "lo"
    lab
  }
}
"""

LINE = 'let lab = if it.score > 5 then "hi" else "lo"'

TYPED = {
    "an if without its then": "let lab = if it.",
    "the then arm": "let lab = if it.score > 5 then it.",
    "the else arm": 'let lab = if it.score > 5 then "a" else it.',
    "a call without its closing parenthesis": "let lab = take(input.items[0].",
    "a conditional in parentheses": "let lab = (if it.",
}


@pytest.mark.parametrize("typed", TYPED.values(), ids=TYPED.keys())
def test_the_fields_of_the_receiver_are_offered_after_the_dot(typed):
    a = analyze(SOURCE, "c.flow")
    text = SOURCE.replace(LINE, typed)
    offset = text.index(typed) + len(typed)
    assert [c.label for c in a.completions(offset, text)] == ["name", "score"]


def test_a_half_written_line_is_typed_in_its_own_scope():
    typed = SOURCE.replace(LINE, "let lab = if it.")
    a = analyze(typed, "c.flow")  # the analysis of the text being typed, as the server has it
    items = a.completions(typed.index("if it.") + len("if it."))
    assert {c.label: c.detail for c in items} == {"name": "text", "score": "int"}
