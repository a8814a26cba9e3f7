"""`unknown-field` on an object type with no name of its own names it by the path the user wrote
(`input`), not by its fields (`{ dir: path }`); a named type keeps its name."""

from __future__ import annotations

from agentflow.compiler.api import check_source


def test_a_misspelt_input_field_names_input():
    (d,) = check_source(
        "input { dir: path }\nstage s -> path { return input.dri }\n", "t.flow"
    ).errors
    assert d.code == "unknown-field"
    assert d.message == "`input` has no field `dri`"
    assert d.hint == "did you mean `dir`?"


def test_a_named_type_is_named_by_its_name():
    src = "type Job { dir: path }\ninput Job\nstage s -> path { return input.dri }\n"
    (d,) = check_source(src, "t.flow").errors
    assert d.message == "`Job` has no field `dri`"
