"""The key of an object literal whose type is known is the field it gives a value to
(docs/editors.md): hover on `approved` of `return { text: …, approved: true, … }` in a stage
of type `Result` shows `(field) approved: bool` with the field's `///` doc, go-to-definition
goes to the field of `type Result`, and its references are the field's."""

from __future__ import annotations

from agentflow.lsp.analysis import analyze

SOURCE = """\
type Result {
  text: text
  /// whether the critic approved
  approved: bool
}
input { topic: text }
stage revise -> Result {
  return { text: input.topic, approved: true }
}
stage again -> bool {
  revise.approved
}
"""


def _at(needle: str, delta: int = 0) -> int:
    return SOURCE.index(needle) + delta


def test_hover_on_a_key_shows_its_field_type_and_doc():
    text, span = analyze(SOURCE, "k.flow").hover(_at("approved: true"))
    assert text == "```flow\n(field) approved: bool\n```\n\nwhether the critic approved"
    assert SOURCE[span.start : span.end] == "approved"


def test_definition_of_a_key_is_the_field_of_the_declared_type():
    span = analyze(SOURCE, "k.flow").definition(_at("approved: true", 3))
    assert span is not None and span.start == _at("approved: bool")


def test_references_of_a_key_are_the_fields():
    spans = analyze(SOURCE, "k.flow").references(_at("approved: true", 2))
    assert [s.start for s in spans] == [
        _at("approved: bool"),
        _at("approved: true"),
        _at("revise.approved", 7),
    ]
