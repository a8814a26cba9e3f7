"""A constraint after a tool's result type, a parameter's or a `type` alias is a syntax error
that says where constraints go (a field of an object type), and the `extern tool` the parse
dropped leaves no `untyped-tool` warning behind (docs/reference/types.md "Constraints")."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

TOOL = """\
extern tool user__score(x: text) -> int @range(0, 10)
stage s -> int {
  return user__score(x: "a")
}
"""


@pytest.mark.parametrize(
    ("src", "at", "written"),
    [
        (TOOL, (1, 41), "int @range(0, 10)"),
        (
            "type Score = int @range(0, 10)\nstage s -> int { return 1 }\n",
            (1, 18),
            "int @range(0, 10)",
        ),
        (
            'extern tool user__f(x: text @length(1, 3)) -> int\nstage s -> int { return user__f(x: "a") }\n',
            (1, 29),
            "text @length(1, 3)",
        ),
    ],
)
def test_a_misplaced_constraint_says_constraints_go_on_fields(src, at, written):
    result = check_source(src, "t.flow")
    (d,) = result.diagnostics
    assert d.code == "syntax-error"
    assert (d.span.line, d.span.column) == at
    assert d.message.endswith("is written after the type of a field of an object type, not here")
    assert f"`type Checked {{ value: {written} }}`" in d.hint


def test_the_dropped_extern_leaves_no_untyped_tool_warning():
    codes = [d.code for d in check_source(TOOL, "t.flow").diagnostics]
    assert codes == ["syntax-error"]
    fixed = TOOL.replace(" @range(0, 10)", "")
    assert check_source(fixed, "t.flow").diagnostics == []


@pytest.mark.parametrize(
    ("field", "tok", "hint", "fixed"),
    [
        (
            "n: text @length(2, 3) | int",
            "|",
            "name an object type for that member, `type Checked { value: text @length(2, 3) }`, "
            "and write `n: Checked | int` (its values are then objects: `{ value: … }`)",
            "n: Checked | int",
        ),
        (
            "xs: text @length(1, 2)[]",
            "[",
            "`xs: text[] @length(1, 2)` says how many items the list has; a constraint on each "
            "element is not expressible on the list: name an object type for the element, "
            "`type Item { value: text @length(1, 2) }`, and write `xs: Item[]`",
            "xs: text[] @length(1, 2)",
        ),
        (
            "n: int @range(0, 3) | null",
            "|",
            "write `n: int | null @range(0, 3)`: the constraint holds when `n` has a value",
            "n: int | null @range(0, 3)",
        ),
        (
            "n: int @range(0, 3)?",
            "?",
            "write `n: int? @range(0, 3)`: the constraint holds when `n` has a value",
            "n: int? @range(0, 3)",
        ),
    ],
)
def test_a_constraint_inside_a_fields_type_says_it_goes_after_the_whole_type(
    field, tok, hint, fixed
):
    src = "type T {{ {} }}\ntype Checked {{ value: text }}\nstage s -> T {{ return input }}\n"
    (d,) = check_source(src.format(field), "t.flow").diagnostics
    assert d.code == "syntax-error"
    assert (d.span.line, d.span.column) == (1, 10 + field.index(tok))
    name = field.split(":")[0]
    constraint = field.split("@")[1].split("(")[0]
    assert d.message == (
        f"a constraint (`@{constraint}`) is written after the whole type of a field, not inside "
        f"it: here `{tok}` goes on with the type of `{name}`"
    )
    assert hint in d.hint
    # the rewrite the hint gives checks clean
    assert check_source(src.format(fixed), "t.flow").diagnostics == []


@pytest.mark.parametrize(
    ("field", "rewrite"),
    [
        ("n: int? @range(0, 3)?", "n: int? @range(0, 3)"),
        ("n: text | null @length(2, 3) | null", "n: text | null @length(2, 3)"),
        ("n: int @range(0, 3)?", "n: int? @range(0, 3)"),
    ],
)
def test_the_rewrite_of_an_optional_after_a_constraint_is_never_optional_twice(field, rewrite):
    src = f"type T {{\n  {field}\n}}\nstage s -> int {{ return 1 }}\n"
    (d,) = [d for d in check_source(src, "c.flow").diagnostics if d.severity == "error"]
    assert d.hint is not None and d.hint.startswith(f"write `{rewrite}`"), d.hint
    fixed = f"type T {{\n  {rewrite}\n}}\nstage s -> int {{ return 1 }}\n"
    assert check_source(fixed, "c.flow").ok
