"""The language server on errors as values: hovers of a tolerant map's `Outcome<T>[]`, its `.error`
(`Error`) and `.values`; a `catch … as err` binding hovers as `Error` and goes to its declaration."""

from __future__ import annotations

from agentflow.lsp.analysis import analyze

SOURCE = """\
input { items: int[] }
extern tool user__score(x: int) -> number
stage kept -> number[] {
  let outcomes = map input.items as x tolerate 2 { user__score(x: x) }
  let firsts = map outcomes as o { o.error }
  return outcomes.values
}
"""


def _hover(word: str, nth: int = 0) -> str:
    a = analyze(SOURCE, "h.flow")
    offset = -1
    for _ in range(nth + 1):
        offset = SOURCE.index(word, offset + 1)
    found = a.hover(offset + 1)
    assert found is not None
    return found[0]


def test_the_binding_of_a_tolerant_map_hovers_as_a_list_of_outcomes():
    assert "Outcome<number>[]" in _hover("outcomes")


def test_an_outcome_and_its_error_hover_with_their_names():
    assert "o: Outcome<number>" in _hover("o ", 0)
    assert "firsts: (Error?)[]" in _hover("firsts")


def test_the_values_of_the_outcomes_hover_as_the_body_type():
    assert "number[]" in _hover("values")


def test_a_catch_binding_hovers_as_error():
    source = """\
extern tool user__fetch(url: text) -> text
stage s -> text {
  user__fetch(url: "a") catch on [timeout] as err { err.message }
}
"""
    a = analyze(source, "c.flow")
    found = a.hover(source.index("err.message") + 1)
    assert found is not None and "err: Error" in found[0]


def test_a_catch_binding_goes_to_its_declaration():
    source = """\
extern tool user__fetch(url: text) -> text
stage s -> text {
  user__fetch(url: "a") catch on [timeout] as err { err.message }
}
"""
    a = analyze(source, "c.flow")
    target = a.definition(source.index("err.message") + 1)
    assert target is not None
    assert (target.line, target.column) == (3, source.split("\n")[2].index("err") + 1)
