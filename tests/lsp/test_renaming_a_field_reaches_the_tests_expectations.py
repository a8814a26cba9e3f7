"""Renaming a field reaches the keys of the object literals a test compares with a value of its
type — `expect revise == { text: "v2", approved: true, rounds: 2 }` — nested in lists and
objects too (docs/editors.md): an operand of `==` has no expected type, so these keys were not
found, and the rename of `approved` in examples/patterns/evaluator-optimizer.flow was refused
("would make the program invalid: cannot compare `Result` with …")."""

from __future__ import annotations

from support.lsp_editor import applied
from support.paths import EXAMPLES

from agentflow.compiler.api import check_source
from agentflow.lsp.analysis import analyze

SOURCE = (EXAMPLES / "patterns" / "evaluator-optimizer.flow").read_text(encoding="utf-8")


def _renamed(source: str, at: int, new: str) -> str:
    a = analyze(source, "e.flow")
    assert a.rename_problem(at, new) is None
    spans = a.references_for_rename(at)
    edits = [
        {
            "range": {
                "start": {"line": s.line - 1, "character": s.column - 1},
                "end": {"line": s.end_line - 1, "character": s.end_column - 1},
            },
            "newText": new,
        }
        for s in spans
    ]
    return applied(edits, source)


def test_the_rename_of_a_field_rewrites_the_expectations_of_the_tests():
    renamed = _renamed(SOURCE, SOURCE.index("approved: bool, rounds"), "accepted")
    assert 'expect revise == { text: "v2", accepted: true, rounds: 2 }' in renamed
    assert "approved: true, rounds" not in renamed and "approved: false, rounds" not in renamed
    assert check_source(renamed, "e.flow").ok


NESTED = """type Row { id: int, ok: bool }
input { n: int }
stage rows -> Row[] { [{ id: input.n, ok: true }] }
stage wrapped -> { rows: Row[] } { { rows: rows } }
test "rows" {
  input { n: 1 }
  expect rows == [{ id: 1, ok: true }]
  expect wrapped != { rows: [{ id: 2, ok: false }] }
}
"""


def test_keys_nested_in_lists_and_objects_of_a_comparison_are_renamed():
    renamed = _renamed(NESTED, NESTED.index("ok: bool"), "good")
    assert "expect rows == [{ id: 1, good: true }]" in renamed
    assert "expect wrapped != { rows: [{ id: 2, good: false }] }" in renamed
    assert check_source(renamed, "n.flow").ok
