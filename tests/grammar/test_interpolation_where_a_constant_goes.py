"""`${…}` where the language wants a constant string is a syntax error whose hint says what to
write: an object key (`{ "${x}": 1 }`) — a map keyed by computed values is built from the
elements (`group_by`, `count_by`, a list of entries); anything else (a test name, a tool
pattern …) — write it without `${…}` (docs/reference/lexical.md)."""

from __future__ import annotations

from agentflow.compiler.api import check_source


def test_a_computed_object_key_points_to_the_functions_that_key_by_value():
    src = 'input { xs: int[] }\nstage s -> map<int> {\n  { "${input.xs[0]}": 1 }\n}\n'
    (d,) = check_source(src, "s.flow").diagnostics
    assert (d.code, d.message) == (
        "syntax-error",
        "an object key cannot contain `${…}` interpolation",
    )
    assert '`group_by(xs, "field")`' in d.hint and '`count_by(xs, "field")`' in d.hint


def test_another_constant_says_to_write_it_without_interpolation():
    (d,) = check_source('test "a ${x}" {\n  expect 1 == 1\n}\n', "t.flow").diagnostics
    assert d.message == "a test name cannot contain `${…}` interpolation"
    assert d.hint.startswith("a test name is a constant: write it without `${…}`")
