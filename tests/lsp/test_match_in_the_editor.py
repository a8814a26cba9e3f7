"""`match` in the editor: hover on a field read inside an arm shows the type the arm narrows it
to (by the name the program gives it), go-to-definition works inside arms, and the checker's `match` diagnostics reach the editor."""

from __future__ import annotations

from agentflow.lsp.analysis import analyze

SOURCE = """type Cat = { kind: "cat", lives: int }
type Dog = { kind: "dog", name: text }
input { pet: Cat | Dog }
stage s -> text {
  let who = "pet"
  return match input.pet.kind {
    "cat" => "${who} ${input.pet.lives}",
    "dog" => input.pet.name,
  }
}
"""


def test_hover_inside_an_arm_shows_the_narrowed_type():
    a = analyze(SOURCE, "m.flow")
    text, _ = a.hover(SOURCE.index("input.pet.lives") + 7)
    assert text == "```flow\n(field) pet: Cat\n```"  # the member of `Cat | Dog`, by its name


def test_definition_inside_an_arm_finds_the_let():
    a = analyze(SOURCE, "m.flow")
    found = a.definition(SOURCE.index("${who}") + 2)
    assert found is not None
    assert found.line == 5


def test_a_non_exhaustive_match_is_reported_in_the_editor():
    broken = SOURCE.replace('    "dog" => input.pet.name,\n', "")
    a = analyze(broken, "m.flow")
    assert [d.code for d in a.result.diagnostics] == ["non-exhaustive-match"]


def test_hover_on_match_tells_the_subject_the_type_and_how_an_arm_is_chosen():
    a = analyze(SOURCE, "m.flow")
    text, span = a.hover(SOURCE.index("match input") + 1)
    assert text.startswith('```flow\nmatch input.pet.kind: "cat" | "dog" -> text\n```')
    assert "The first of its 2 arms whose pattern equals `input.pet.kind`" in text
    assert SOURCE[span.start : span.end] == "match"
