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


COMPLETING = """\
input { items: int[] }
extern tool user__score(x: int) -> number
stage kept -> number[] {
  let outcomes = map input.items as x @map { user__score(x: x) }
  let limited = map input.items as x limit 3 @limited { user__score(x: x) }
  let plain = user__score(x: 1) @after
  let any = user__score(x: 1) catch @catch
  let some = user__score(x: 1) catch on [timeout, @codes] { 0 }
  let bound = user__score(x: 1) catch on [timeout] @bound
  let block = try { user__score(x: 1) } @try
  let after_map = map input.items as x { user__score(x: x) } @after_map
  return outcomes.values
}
"""


def _complete(mark: str) -> list[str]:
    import re

    at = COMPLETING.index("@" + mark)
    text = re.sub(r"@[a-z_]+", "", COMPLETING)
    offset = len(re.sub(r"@[a-z_]+", "", COMPLETING[:at]))
    return [c.label for c in analyze(text, "c.flow").completions(offset)]


def test_a_map_header_offers_limit_and_tolerate_after_its_variable():
    assert _complete("map") == ["limit", "tolerate"]
    assert _complete("limited") == ["tolerate"]


def test_catch_is_offered_after_an_expression_and_a_try_block_not_after_a_map_body_keyword():
    assert _complete("after")[0] == "catch"
    assert _complete("try")[0] == "catch"
    assert "tolerate" not in _complete("after") and "limit" not in _complete("after_map")


def test_after_catch_come_on_and_as_and_inside_on_the_catchable_codes_not_listed_yet():
    assert _complete("catch") == ["on", "as"]
    assert _complete("bound") == ["as"]
    codes = _complete("codes")
    assert "tool_error" in codes and "output_validation" in codes and "failed" in codes
    assert "timeout" not in codes  # listed already
    assert not {"aborted", "deadline_exceeded", "budget_exceeded"} & set(codes)


def test_a_fallback_offers_its_error_binding():
    source = """\
extern tool user__score(x: int) -> number
stage kept -> number {
  let handled = user__score(x: 1) catch as err {
    0
  }
  let blocked = try { user__score(x: 2) } catch as failure {
    1
  }
  return handled + blocked
}
"""
    a = analyze(source, "f.flow")
    first = [c.label for c in a.completions(source.index("0\n"))]
    assert "err" in first and "failure" not in first
    second = [c.label for c in a.completions(source.index("1\n"))]
    assert "failure" in second and "err" not in second


def test_the_builtin_error_types_hover_with_their_fields():
    source = """\
input { items: int[] }
extern tool user__score(x: int) -> number
stage kept -> Outcome<number>[] {
  let r: Outcome<number>[] = map input.items as x tolerate 1 { user__score(x: x) }
  let e: Error[] = r.errors
  let p: ErrorPlace[] = map e as one { one.where }
  return r
}
"""
    a = analyze(source, "h.flow")
    error = a.hover(source.index("Error[]") + 1)
    assert error is not None and "where: ErrorPlace" in error[0] and "step: text" in error[0]
    place = a.hover(source.index("ErrorPlace[]") + 1)
    assert place is not None and "line: int?" in place[0] and "stage: text?" in place[0]
    outcome = a.hover(source.index("Outcome<number>[] {") + 1)
    assert outcome is not None and "ok: bool" in outcome[0]
    binding = a.hover(source.index("r: Outcome") + 1)
    assert binding is not None and "Outcome<number>[]" in binding[0]
