"""Completion while a conditional or a loop's exit is being written (docs/editors.md): after
`} until ` the loop's round and state are offered (the condition reads them), though the
loop's `else` is not written yet; after a finished `until` condition, `else` comes first; after
`if c ` the keyword `then`, after `then a ` the keyword `else`."""

from __future__ import annotations

from agentflow.lsp.analysis import analyze

SOURCE = """\
input { rounds: int, n: int }
stage count -> int {
  loop up to input.rounds as r, acc = 0 {
    acc + r
  } until acc > 10 else acc
}
stage pick -> text {
  let lab = if input.n > 5 then "hi" else "lo"
  return lab
}
"""


def _labels(old: str, new: str) -> list[str]:
    a = analyze(SOURCE, "c.flow")
    text = SOURCE.replace(old, new)
    return [c.label for c in a.completions(text.index(new) + len(new), text)]


def test_the_round_and_the_state_are_offered_in_an_until_being_written():
    labels = _labels("} until acc > 10 else acc", "} until ")
    assert "acc" in labels and "r" in labels


def test_else_comes_first_after_a_finished_until_condition():
    assert _labels("} until acc > 10 else acc", "} until acc > 10 ")[0] == "else"


def test_then_after_the_condition_of_a_conditional_and_else_after_its_then_arm():
    line = 'let lab = if input.n > 5 then "hi" else "lo"'
    assert _labels(line, "let lab = if input.n > 5 ")[0] == "then"
    assert _labels(line, 'let lab = if input.n > 5 then "hi" ')[0] == "else"
    assert _labels(line, 'let lab = if input.n > 5 then "hi" else if input.n > 2 ')[0] == "then"
