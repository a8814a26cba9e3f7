"""`constant-overflow` (docs/diagnostics.md "constant-overflow"): pure literal arithmetic whose
result the run refuses as past `int` or any number is reported at check time, as a constant
zero divisor is `division-by-zero`, with the run's own words; the folding is the evaluator's,
so what is reported is exactly what fails when run."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source
from agentflow.compiler.constants import constant_number, fold_step, overflow
from agentflow.errors import RunError
from agentflow.grammar.parser import parse_expression
from agentflow.runtime.expressions import evaluate

INT_RANGE = "the result is outside the range of `int` (-9223372036854775808 to 9223372036854775807)"
HUGE = " * ".join([f"{'9' * 90}.0"] * 4)
#: 9223372036854775807.0 ** 17 passes the largest float: the 17th `*` overflows
CHAIN = " * ".join(["9223372036854775807.0"] * 19)


def _diags(expr: str) -> list[tuple[str, str, int]]:
    text = f"input {{ n: int }}\nstage s -> number {{\n  return {expr}\n}}\n"
    return [(d.code, d.message, d.span.column) for d in check_source(text, "c.flow").diagnostics]


@pytest.mark.parametrize(
    ("expr", "shown", "why", "column"),
    [
        ("9223372036854775807 + 1", "9223372036854775807 + 1", INT_RANGE, 10),
        ("-9223372036854775807 - 2", "-9223372036854775807 - 2", INT_RANGE, 10),
        ("3037000500 * 3037000500", "3037000500 * 3037000500", INT_RANGE, 10),
        ("-(-9223372036854775807 - 1)", "-(-9223372036854775807 - 1)", INT_RANGE, 10),
        ("(-9223372036854775807 - 1) / -1", "(-9223372036854775807 - 1) / -1", INT_RANGE, 11),
        # the innermost operation that overflows, once
        ("(9223372036854775807 + 1) * 2", "9223372036854775807 + 1", INT_RANGE, 11),
        # quoted as written, the chain before the overflowing operation cut to `…`
        (HUGE, f"… * {'9' * 90}.0", "the result is too large for a JSON number", 10),
        (CHAIN, "… * 9223372036854775807.0", "the result is too large for a JSON number", 10),
    ],
)
def test_constant_arithmetic_past_the_range_is_reported_at_check_time(expr, shown, why, column):
    assert _diags(expr) == [
        ("constant-overflow", f"`{shown}` always fails at run time: {why}", column)
    ]


def test_a_float_overflow_quotes_the_literals_as_written_not_as_python_prints_them():
    [(code, message, _column)] = _diags(f"1.0 + {HUGE}")
    assert code == "constant-overflow"
    assert message.startswith(f"`… * {'9' * 90}.0` always fails")
    assert "e+" not in message


def test_a_float_overflow_in_a_chain_is_reported_once_without_the_whole_chain():
    [(_code, message, _column)] = _diags(CHAIN)
    assert message.count("9223372036854775807.0") == 1


@pytest.mark.parametrize(
    "expr",
    [
        "9223372036854775807 + 0",
        "-9223372036854775807 - 1",
        "9223372036854775807.0 + 1",  # a float: within any number
        "input.n + 9223372036854775807",  # not literal arithmetic: checked when run
        "7 / 2",
    ],
)
def test_arithmetic_within_range_or_not_constant_is_clean(expr):
    assert _diags(expr) == []


def test_a_zero_divisor_stays_division_by_zero_alone():
    assert [c for c, *_ in _diags("9223372036854775807 / 0")] == ["division-by-zero"]


@pytest.mark.parametrize(
    "expr",
    ["9223372036854775807 + 1", "3037000500 * 3037000500", "-9223372036854775807 - 2", HUGE],
)
def test_what_is_reported_is_what_the_evaluator_refuses_in_the_same_words(expr):
    e = parse_expression(expr)
    a, b = constant_number(e.left), constant_number(e.right)
    assert a is not None and b is not None and fold_step(e.op, a, b) is None
    why = overflow(e.op, a, b)
    with pytest.raises(RunError) as err:
        evaluate(e, {})
    assert why is not None and why in str(err.value)
