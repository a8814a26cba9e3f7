"""The two names a `reduce` or a `loop` binds are two names (docs/reference/control.md
"reduce"): one name for a `reduce`'s element and accumulator, or a `loop`'s round and state, is
`duplicate-definition` at the second, with a note at the first, as two `let`s of one block are;
a function's parameters already were."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source


def _diags(value: str, ret: str = "int") -> list[tuple[str, str, int, int, list[int]]]:
    text = f"stage s -> {ret} {{\n  return {value}\n}}\n"
    return [
        (d.code, d.message, d.span.line, d.span.column, [n.span.column for n in d.notes])
        for d in check_source(text, "t.flow").diagnostics
    ]


@pytest.mark.parametrize(
    ("value", "message", "column", "first"),
    [
        (
            "loop up to 3 as n, n = 0 { n + 1 }",
            "`n` is defined twice in this `loop`: as its round and as its state",
            29,
            26,
        ),
        (
            "reduce [1, 2] as x, x = 0 { x + 1 }",
            "`x` is defined twice in this `reduce`: as its element and as its accumulator",
            30,
            27,
        ),
    ],
)
def test_one_name_for_both_binders_of_a_loop_or_reduce_is_a_duplicate_definition(
    value, message, column, first
):
    assert _diags(value) == [("duplicate-definition", message, 2, column, [first])]


@pytest.mark.parametrize(
    "value",
    ["loop up to 3 as n, s = 0 { s + n }", "reduce [1, 2] as x, acc = 0 { acc + x }"],
)
def test_two_names_for_the_binders_are_clean(value):
    assert _diags(value) == []


def test_a_function_with_one_name_for_two_parameters_is_a_duplicate_definition():
    text = "fn f(a: int, a: int) -> int = a\nstage s -> int {\n  return f(1, 2)\n}\n"
    (d,) = check_source(text, "t.flow").diagnostics
    assert (d.code, d.message) == ("duplicate-definition", "parameter `a` of `f` is defined twice")
