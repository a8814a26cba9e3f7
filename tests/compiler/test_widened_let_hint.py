"""A `let` with no type widens its value's literal type (`"high"` → `text`); where the `let`
is then used as a literal union, the `type-mismatch` hints at annotating the `let`, with a note
at it (docs/reference/statements.md "let")."""

from __future__ import annotations

from agentflow.compiler.api import check_source

FLOW = """\
type Priority = "low" | "high"
type Out { n: int, priority: Priority }
input { items: text[] }
stage s -> Out {
  let all = input.items
  let prio = if all.count > 2 then "high" else "low"
  return { n: all.count, priority: prio }
}
"""


def test_a_widened_let_used_as_a_literal_union_hints_at_annotating_the_let():
    (d,) = check_source(FLOW, "t.flow").errors
    assert d.code == "type-mismatch"
    assert d.message == "expected `Priority`, found `text`"
    assert (d.span.line, d.span.column) == (7, 36)
    assert d.hint.startswith("annotate the `let`: `let prio: Priority = …`")
    note, alias = d.notes
    assert note.message == "`prio` is declared here, with no type"
    assert (note.span.line, note.span.column) == (6, 7)
    assert alias.message == '`Priority` is `"low" | "high"`' and alias.span is None


def test_the_annotation_the_hint_gives_checks():
    fixed = FLOW.replace("let prio = ", "let prio: Priority = ")
    assert check_source(fixed, "t.flow").ok


def test_a_let_whose_value_never_fits_gets_no_annotation_hint():
    src = FLOW.replace('then "high" else "low"', 'then "high" else "medium"')
    (d,) = check_source(src, "t.flow").errors
    assert "annotate" not in (d.hint or "")
