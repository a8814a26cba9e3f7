"""`division-by-zero` folds pure literal arithmetic (docs/diagnostics.md "division-by-zero"):
`x / (1 - 1)`, `x % (2 * 0)`, `x / -(1 - 1)` are reported at check time like `x / 0`, with the
folding following the run-time evaluator's rules (a divisor that is not 0 when run is never
reported; one that fails on its own is its own error, not a zero). The golden case
tests/compiler/check/division_by_zero_constant.flow pins the messages."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source
from agentflow.compiler.constants import constant_number
from agentflow.grammar import ast
from agentflow.grammar.parser import parse_expression
from agentflow.runtime.expressions import evaluate


def _expr(text: str):
    return parse_expression(text)


@pytest.mark.parametrize(
    "text",
    [
        "1 - 1",
        "2 * 0",
        "-(1 - 1)",
        "0.5 * 2 - 1",
        "7 % 7",
        "1 / 2",
        "7 / 2",
        "8 / 2 / 2",
        "-9223372036854775807 - 1",
        "5.5 % 2",
        "-7 % 3",
        "1 - 1 + 0.0",
    ],
)
def test_a_folded_constant_is_what_the_evaluator_computes(text):
    value = constant_number(_expr(text))
    expected = evaluate(_expr(text), {})
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    "text",
    [
        "1 / 0",  # fails on its own: its own division-by-zero
        "1 % (1 - 1)",
        "9223372036854775807 + 1",  # an int past 64 bits: `arithmetic` at run time
        "-(-9223372036854775807 - 1)",
        " * ".join([f"{'9' * 90}.0"] * 4),  # past a float: `arithmetic` at run time
        "input.n - input.n",  # not literal arithmetic
        'len("") * 0',
    ],
)
def test_what_does_not_fold_is_no_constant(text):
    assert constant_number(_expr(text)) is None


def test_a_deep_tree_folds_without_recursion():
    # deeper than any parsed expression (200 operators) and than Python's recursion limit
    one = _expr("1")
    e = one
    for _ in range(5_000):
        e = ast.Binary(one.span, "-", e, one)
    assert constant_number(e) == 1 - 5_000


def _codes(divisor: str) -> list[tuple[str, str]]:
    text = f"input {{ n: int }}\nstage s -> number {{\n  return input.n / {divisor}\n}}\n"
    return [(d.code, d.message) for d in check_source(text, "c.flow").diagnostics]


def test_a_constant_zero_divisor_is_division_by_zero_and_others_are_not():
    assert _codes("(3 - 3)") == [
        ("division-by-zero", "division by zero: the divisor `3 - 3` is always 0")
    ]
    assert _codes("(0.0)") == [
        ("division-by-zero", "division by zero: the divisor is the literal `0.0`")
    ]
    assert _codes("(3 - 2)") == []
    assert _codes("(1 / 4)") == []  # 0.25 when run: true division
    assert _codes("(input.n - input.n)") == []  # not literal: a run-time error if zero
