"""A whole-number literal past `int` (−2⁶³ … 2⁶³−1) is the error `int-out-of-range` wherever it
is written — it passed `flowc check` and ran as a number before (docs/diagnostics.md
`int-out-of-range`, docs/reference/types.md)."""

from __future__ import annotations

from agentflow.compiler.api import check_source

HEAD = 'flow h "h"\ninput { k: int }\n'


def _codes(src: str) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.column) for d in check_source(src, "h.flow").diagnostics]


def test_a_literal_past_int_is_refused_with_the_range_and_a_number_hint():
    src = HEAD + "stage a -> int { return 99999999999999999999 * 2 }\n"
    (diag,) = check_source(src, "h.flow").diagnostics
    assert diag.code == "int-out-of-range"
    assert diag.message == (
        "`99999999999999999999` is outside the range of `int` "
        "(-9223372036854775808 to 9223372036854775807)"
    )
    assert (diag.span.line, diag.span.column, diag.span.end_column) == (3, 25, 45)
    assert diag.hint is not None and "`99999999999999999999.0`" in diag.hint


def test_the_ends_of_the_range_are_literals_and_one_past_them_is_not():
    ok = HEAD + "stage a -> int { return 9223372036854775807 + 0 * -9223372036854775808 }\n"
    assert check_source(ok, "h.flow").ok
    assert _codes(HEAD + "stage a -> int { return 9223372036854775808 }\n") == [
        ("int-out-of-range", 3, 25)
    ]
    # the prefix `-` is part of the literal: the message and span give the whole number
    (diag,) = check_source(
        HEAD + "stage a -> int { return -9223372036854775809 }\n", "h.flow"
    ).diagnostics
    assert diag.code == "int-out-of-range" and "`-9223372036854775809`" in diag.message
    assert (diag.span.line, diag.span.column) == (3, 25)


def test_a_test_input_past_int_is_refused_as_the_command_line_refuses_it():
    src = (
        HEAD
        + "stage a -> int { return input.k }\n"
        + 'test "t" {\n  input { k: 99999999999999999999 }\n  expect a == 1\n}\n'
    )
    assert _codes(src) == [("int-out-of-range", 5, 14)]


def test_a_large_number_written_with_a_fraction_is_a_number():
    assert check_source(HEAD + "stage a -> number { return 99999999999999999999.0 }\n", "h.flow").ok
