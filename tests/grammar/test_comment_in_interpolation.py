"""`//` inside `${…}` (Python's integer division, `"${7 // 2}"`) starts a comment that hides the
hole's `}`: a syntax error at the `//` with `floor(a / b)` as the hint, the same from the fast
path and the LALR path; a comment in a hole that goes on to the next line is still a comment."""

from __future__ import annotations

import pytest

from agentflow.grammar.parser import parse_module, parse_module_lalr

TEXT = 'stage d -> text {\n  return "half: ${7 // 2}"\n}\n'


@pytest.mark.parametrize("parse", [parse_module, parse_module_lalr], ids=["fast", "lalr"])
def test_integer_division_in_an_interpolation_is_an_error_at_the_slashes(parse):
    _module, diags = parse(TEXT, "d.flow")
    assert [(d.code, d.message, d.span.line, d.span.column, d.span.end_column) for d in diags] == [
        ("syntax-error", "`//` starts a comment and cannot be inside `${…}`", 2, 21, 23)
    ]
    assert diags[0].hint == (
        "integer division is `floor(a / b)` (`${floor(7 / 2)}`); a comment goes after the string"
    )


@pytest.mark.parametrize(
    "hole, shown",
    [
        ("input.n // (input.k - 1)", " (`${floor(input.n / (input.k - 1))}`)"),
        ("input.n // the count", ""),
        ("1 + input.n // 2", ""),
    ],
)
def test_the_hint_shows_the_division_only_for_operands_written_plainly(hole: str, shown: str):
    text = f'input {{ n: int, k: int }}\nstage d -> text {{\n  return "${{{hole}}}"\n}}\n'
    _module, diags = parse_module(text, "d.flow")
    assert diags[0].message == "`//` starts a comment and cannot be inside `${…}`"
    assert diags[0].hint == (
        f"integer division is `floor(a / b)`{shown}; a comment goes after the string"
    )


@pytest.mark.parametrize("parse", [parse_module, parse_module_lalr], ids=["fast", "lalr"])
def test_a_comment_in_a_hole_that_goes_on_to_the_next_line_is_still_a_comment(parse):
    text = 'input { n: int }\nstage d -> text {\n  return "n ${input.n // the n\n}"\n}\n'
    _module, diags = parse(text, "d.flow")
    assert diags == []
