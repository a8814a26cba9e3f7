"""Arithmetic with no result fails with the registered code `arithmetic` (docs/reference/errors.md,
docs/reference/expressions.md): division and modulo by zero, an `int` result past 64 bits, a
number too large for JSON, and the library functions' own — each message the expression as the
`.flow` writes it, `catch on [arithmetic]` handling it, the checker knowing where it can occur."""

from __future__ import annotations

import pytest

from agentflow import api
from agentflow.compiler.api import check_source
from agentflow.core.vocabulary import CAUGHT_CODES, ERROR_CODES, MAX_INT, MIN_INT

ARITH = "input { a: int, b: int, x: number }\nstage s -> json { return EXPR }\n"


def _run(expr: str, **inp):
    compiled = api.compile_source(ARITH.replace("EXPR", expr), "arith.flow")
    data = {"a": 1, "b": 0, "x": 1.5, **inp}
    return api.run_sync(api.plan_from_data(compiled.plan, "arith.flow"), data)


def test_arithmetic_is_a_registered_catchable_code():
    assert "arithmetic" in ERROR_CODES and not ERROR_CODES["arithmetic"].retryable
    assert "arithmetic" in CAUGHT_CODES


@pytest.mark.parametrize(
    ("expr", "inp", "message"),
    [
        ("input.a / input.b", {}, "`input.a / input.b`: division by zero (`input.b` is 0)"),
        ("input.a % input.b", {}, "`input.a % input.b`: modulo by zero (`input.b` is 0)"),
        ("input.x / (input.b * 2)", {}, "`input.x / (input.b * 2)`: division by zero"),
        (
            "input.a * input.b",
            {"a": MAX_INT, "b": 2},
            f"`input.a * input.b`: the result is outside the range of `int` ({MIN_INT} to "
            f"{MAX_INT})",
        ),
        ("input.a + 1", {"a": MAX_INT}, "`input.a + 1`: the result is outside the range"),
        ("input.a - 1", {"a": MIN_INT}, "`input.a - 1`: the result is outside the range"),
        ("-input.a", {"a": MIN_INT}, "`-input.a`: the result is outside the range"),
        ("input.a / -1", {"a": MIN_INT}, "`input.a / -1`: the result is outside the range"),
        ("input.x * input.x", {"x": 1e200}, "`input.x * input.x`: the result is too large"),
        ("sum([input.a, input.a])", {"a": MAX_INT}, "`sum([input.a, input.a])`: the result is"),
        ("abs(input.a)", {"a": MIN_INT}, "`abs(input.a)`: the result is outside the range"),
        ("floor(input.x)", {"x": 1e300}, "`floor(input.x)`: the result is outside the range"),
        ("ceil(input.x)", {"x": -1e300}, "`ceil(input.x)`: the result is outside the range"),
        ("round(input.x)", {"x": 1e300}, "`round(input.x)`: the result is outside the range"),
    ],
)
def test_arithmetic_with_no_result_fails_with_code_arithmetic_naming_the_expression(
    expr, inp, message
):
    result = _run(expr, **inp)
    assert result.status == "error"
    assert result.error["code"] == "arithmetic"
    assert result.error["message"].startswith(message)
    assert result.error["source"] == "arith.flow:2:19"  # its `return` (runnames)


def test_results_within_range_and_number_values_past_it_are_left_alone():
    assert _run("input.a * input.b", a=MAX_INT, b=1).output == MAX_INT
    # a `number` past `int` stays one (given as a float: a whole number past 64 bits is refused
    # at the front door, whoever parsed it — docs/decisions.md "Break-it fixes, stop 44")
    assert _run("input.x * 2", x=float(2**70)).output == 2**71
    assert _run("input.a * 1.0 * input.a", a=2**40).output == float(2**80)
    assert _run("sum([input.x, input.x])", x=float(2**70)).output == 2**71


def test_a_division_by_zero_is_caught_by_catch_on_arithmetic():
    src = (
        "input { a: int, b: int }\n"
        "stage s -> number { return input.a / input.b catch on [arithmetic] { -1 } }\n"
    )
    compiled = api.compile_source(src, "c.flow")
    result = api.run_sync(api.plan_from_data(compiled.plan, "c.flow"), {"a": 1, "b": 0})
    assert (result.status, result.output) == ("ok", -1)


def test_the_checker_knows_which_operators_can_fail_with_arithmetic():
    src = (
        "input { a: int, b: int, s: text }\n"
        "stage d -> int { return floor(input.a / input.b) catch on [validation] { 0 } }\n"
        "stage m -> int { return input.a * input.b catch on [arithmetic] { 0 } }\n"
        'stage t -> text { return "x" + input.s catch on [arithmetic] { "" } }\n'
        "stage k -> int { return 1 + 2 catch { 0 } }\n"
    )
    got = sorted((d.code, d.span.line) for d in check_source(src, "k.flow").diagnostics)
    assert got == [
        ("impossible-error-code", 2),  # a division fails with arithmetic now, not validation
        ("impossible-error-code", 4),  # joining texts cannot overflow
        ("unreachable-catch", 5),  # number literals only
    ]
