"""The evaluator runs the standard library (docs/reference/functions.md): each failure mode is a
registered run-time code with a message naming the call as written; values of the wrong kind
(possible in `json` and hand-written plans) are `validation`; regular expressions run within a
time budget; `if … then … else` evaluates only the chosen arm."""

from __future__ import annotations

import pytest

from agentflow.core.vocabulary import ERROR_CODES
from agentflow.errors import BadPath, RunError
from agentflow.grammar.parser import parse_expression
from agentflow.runtime import functions
from agentflow.runtime.expressions import evaluate


def _eval(text: str, **scope):
    return evaluate(parse_expression(text, "t"), scope)


def _fails(text: str, **scope) -> RunError:
    with pytest.raises(RunError) as info:
        _eval(text, **scope)
    assert info.value.code in ERROR_CODES
    return info.value


@pytest.mark.parametrize(
    "text, code, says",
    [
        ('parse_int("4x")', "parse_error", '`parse_int("4x")`: "4x" is not an integer'),
        ('parse_number("1e999")', "parse_error", "too large"),
        ('parse_number("NaN")', "parse_error", "is not a number"),
        ('parse_json("{")', "parse_error", "is not JSON"),
        ('parse_json("NaN")', "parse_error", "is not JSON"),
        # read as every value from outside: JSON's own numbers, ints of the language's range
        ('parse_json("1e999")', "parse_error", "is too large for a number"),
        ('parse_json("[100000000000000000000]")', "parse_error", "is not JSON"),
        ('parse_int("99999999999999999999")', "parse_error", "is too large for an int"),
        ('parse_number("-99999999999999999999")', "parse_error", "is too large for an int"),
        ('match("a", "(")', "invalid_argument", "invalid regular expression"),
        ("take([1], -1)", "invalid_argument", "`n` must not be negative"),
        ("range(0, 1000000)", "invalid_argument", "more than 100,000"),
        ('pad_start("a", 3, "ab")', "invalid_argument", "`fill` must be one character"),
        ("format_number(1, 21)", "invalid_argument", "`decimals` must be 0 to 20"),
        ("round(1.5, 30)", "invalid_argument", "`digits` must be -20 to 20"),
        ("format_number(huge, 2)", "invalid_argument", "too many digits"),
        ("clamp(1, 5, 0)", "invalid_argument", "`lo` (5) is above `hi` (0)"),
        ('replace("a", "", "b")', "invalid_argument", "`old` must not be empty"),
        ('sort_by([{ a: 1 }], "b")', "bad_path", "no field `b`"),
        ("lower(x)", "validation", "`s` must be a text, got number"),
        ('sort([1, "a"])', "validation", "needs numbers or texts"),
        ("sum([1, true])", "validation", "must hold numbers"),
        ("flatten([1])", "validation", "must hold lists"),
    ],
)
def test_each_failure_has_a_registered_code_and_names_the_call(text, code, says):
    err = _fails(text, x=3, huge=10**500)
    assert err.code == code
    assert says in err.message


def test_a_missing_field_is_bad_path_which_qq_catches():
    assert _eval('sort_by([{ a: 1 }], "b") ?? []') == []
    with pytest.raises(BadPath):
        _eval('group_by([{ a: 1 }], "b")')


def test_a_catastrophic_pattern_ends_within_its_budget_with_regex_timeout(monkeypatch):
    # the budget is CPU time of the regex engine (`timeout=` of the `regex` library); a small
    # one keeps the suite fast — bench/regex_budget.py measures the shipped 1 s budget
    monkeypatch.setattr(functions, "REGEX_TIMEOUT_S", 0.05)
    text = "a" * 50_000 + "!"
    for fn in ("match", "matches", "find_all"):
        err = _fails(f'{fn}(s, "(a+)+$")', s=text)
        assert err.code == "regex_timeout" and "took longer than 0.05 s" in err.message
    assert _eval('matches(s, "(a+)+$")', s="a" * 50_000) is True


def test_rounding_is_half_away_from_zero_on_the_decimal_written():
    assert _eval("round(2.675, 2)") == 2.68
    assert _eval("round(-2.5)") == -3
    assert _eval("round(1234, -2)") == 1200
    assert _eval("format_number(-0.001, 2)") == "0.00"
    assert _eval("format_number(x, 1)", x=1e300).startswith("1000")


def test_a_conditional_evaluates_only_the_chosen_arm():
    assert _eval("if x > 1 then 1 / 0 else 2", x=0) == 2
    assert _eval("if x > 1 then missing.field else 2", x=0) == 2
    with pytest.raises(RunError) as info:
        _eval("if x then 1 else 2", x=3)
    assert info.value.code == "validation" and "must be a bool" in info.value.message


def test_functions_are_deterministic_on_json_values():
    value = {"b": [3, 1, 2], "a": "x"}
    first = _eval("[keys(v), sort(v.b), to_text(v), entries(v)]", v=value)
    assert first == _eval("[keys(v), sort(v.b), to_text(v), entries(v)]", v=value)
    assert first[2] == '{"b":[3,1,2],"a":"x"}'
