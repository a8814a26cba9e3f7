"""Renaming a `let` to the name of a later `let` of the same block is refused with a message
that says so — "`n` is already in scope in this block: a `let` of the same block (line 4)" — not that `n`
is in scope where the renamed `let` is declared, where it is not yet (docs/editors.md)."""

from __future__ import annotations

from agentflow.lsp.analysis import analyze

SOURCE = """input { p: text }
stage greet -> text {
  let who = upper(input.p)
  let n = 1
  return "hi ${who} ${n}"
}
"""


def test_a_later_let_of_the_same_block_is_named_as_such():
    a = analyze(SOURCE, "r.flow")
    why = a.rename_problem(SOURCE.index("who ="), "n")
    assert why == "`n` is already in scope in this block: a `let` of the same block (line 4)"


def test_a_let_in_scope_at_a_use_keeps_its_message():
    a = analyze(SOURCE, "r.flow")
    why = a.rename_problem(SOURCE.index("n = 1"), "who")
    assert why == "`who` is already a variable in scope at line 4 (declared on line 3)"
