"""`${…}` in an object key (`{ "${x}": 1 }`) is a syntax error whose hint says how a map keyed
by computed values is built: from the elements (`group_by`, `count_by`, a list of entries)
(docs/reference/expressions.md "Literals")."""

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
