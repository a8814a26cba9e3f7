"""Values computed by expressions stay within the limits of docs/reference/expressions.md
"Limits" (an int is a signed 64-bit number; a text at most MAX_TEXT_CHARS characters; an array at
most MAX_COMPUTED_ITEMS items), and a failing expression is quoted with the parentheses it needs.

Each limit fails the step with ``validation`` at the first result past it, naming the expression
as the `.flow` wrote it: ``s * s`` in a 40-round loop ends at round 5 instead of squaring a bigint
for minutes; ``s + s`` on a text ends before the text exhausts memory.
"""

from __future__ import annotations

import json

import pytest

from agentflow import api
from agentflow.core.vocabulary import MAX_INT, MIN_INT
from agentflow.errors import BadPath, ExprError, RunError
from agentflow.grammar.parser import parse_expression
from agentflow.ir.loader import load_plan_data
from agentflow.runtime import expressions
from agentflow.runtime.expressions import evaluate, expr_text
from agentflow.runtime.extract import NonJsonNumber, loads_value
from agentflow.runtime.functions import MAX_COMPUTED_ITEMS, MAX_TEXT_CHARS


def _eval(text: str, **scope):
    return evaluate(parse_expression(text, "<t>"), scope)


def _run(source: str, inp: dict, tmp_path) -> api.RunResult:
    compiled = api.compile_source(source, "lim.flow")
    plan = load_plan_data(compiled.plan, "lim.flow")
    return api.run_sync(plan, inp, workspace=str(tmp_path))


# -- ints ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "scope"),
    [
        ("x * x", {"x": 2**40}),
        ("x + 1", {"x": MAX_INT}),
        ("x - 1", {"x": MIN_INT}),
        ("-x", {"x": MIN_INT}),
        ("x / (0 - 1)", {"x": MIN_INT}),
        ("abs(x)", {"x": MIN_INT}),
        ("floor(x)", {"x": 1e300}),
    ],
)
def test_an_int_result_beyond_64_bits_fails_with_arithmetic(expr, scope):
    with pytest.raises(RunError) as err:
        _eval(expr, **scope)
    assert err.value.code == "arithmetic"
    assert "the result is outside the range of `int`" in err.value.message
    assert err.value.message.startswith(f"`{expr}`")


def test_int_results_at_the_bounds_are_kept():
    assert _eval("x + 1", x=MAX_INT - 1) == MAX_INT
    assert _eval("x - 1", x=MIN_INT + 1) == MIN_INT
    assert _eval("x * 2.0", x=MAX_INT) == float(MAX_INT) * 2  # a float result is a float


def test_a_loop_squaring_an_int_ends_at_its_first_overflow(tmp_path):
    result = _run("stage a -> int { loop up to 40 as r, s = 10 { s * s } }\n", {}, tmp_path)
    assert result.status == "error"
    assert result.error.code == "arithmetic"
    assert result.error.step_path == "E0/round.5"  # 10^32 is past 2^63: the fifth square
    assert result.error.message.startswith("`s * s`: the result is outside the range of `int`")
    json.dumps(result.to_dict())  # the result prints (no int past Python's 4300-digit limit)


def test_sum_of_ints_past_64_bits_is_arithmetic():
    with pytest.raises(RunError) as err:
        _eval("sum(xs)", xs=[MAX_INT, 1])
    assert err.value.code == "arithmetic"
    assert "outside the range of `int`" in err.value.message


def test_sum_of_floats_overflowing_inside_fsum_is_arithmetic():
    with pytest.raises(RunError) as err:
        _eval("sum(xs)", xs=[1e308, 1e308])
    assert err.value.code == "arithmetic"
    assert err.value.message == "`sum(xs)`: the sum is too large for a JSON number"


def test_an_input_int_of_thousands_of_digits_is_refused_in_the_inputs_terms():
    with pytest.raises(NonJsonNumber) as err:
        loads_value('{"n": ' + "9" * 5001 + "}")
    message = str(err.value)
    assert "(5001 digits) is outside the range of an int" in message
    assert "set_int_max_str_digits" not in message


# -- texts and arrays ------------------------------------------------------------------------


def test_a_text_doubling_in_a_loop_fails_before_it_exhausts_memory(tmp_path):
    source = 'stage a -> text {\n  let t = loop up to 40 as r, s = "ab" { s + s }\n  return t\n}\n'
    result = _run(source, {}, tmp_path)
    assert result.status == "error" and result.error.code == "validation"
    assert result.error.message == (
        "`s + s`: the result would be a text of 16,777,216 characters; a text built by an "
        f"expression holds at most {MAX_TEXT_CHARS:,}"
    )


@pytest.mark.parametrize(
    "expr",
    ['"${s}${s}"', "join([s, s], s)", 'replace(s, "a", s)'],
)
def test_texts_built_by_interpolation_join_and_replace_are_limited(expr):
    s = "a" * (MAX_TEXT_CHARS // 2 + 1)
    with pytest.raises(ExprError) as err:
        _eval(expr, s=s)
    assert f"a text built by an expression holds at most {MAX_TEXT_CHARS:,}" in err.value.message


@pytest.mark.parametrize("expr", ["xs + xs", "flatten([xs, xs])"])
def test_arrays_built_by_concatenation_and_flatten_are_limited(expr):
    xs = [0] * (MAX_COMPUTED_ITEMS // 2 + 1)
    with pytest.raises(ExprError) as err:
        _eval(expr, xs=xs)
    assert f"an array built by an expression holds at most {MAX_COMPUTED_ITEMS:,}" in str(err.value)


def test_values_within_the_limits_are_built():
    xs = [0] * (MAX_COMPUTED_ITEMS // 2)
    assert len(_eval("xs + xs", xs=xs)) == MAX_COMPUTED_ITEMS
    assert _eval('replace(s, "a", "bb")', s="aa") == "bbbb"


# -- expression text -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "1 / (input.n - 1) * (2 - input.n)",
        "a - (b - c)",
        "a - b - c",
        "(a or b) and c",
        "not (a and b)",
        "-(a + b)",
        "-(-a)",
        "(a ?? b) + 1",
        "(if a then b else c) + 1",
        "(a < b) == c",
        "a + b..(c ?? 1)",
        "a + b * c",
    ],
)
def test_expressions_are_quoted_with_the_parentheses_they_need(text):
    assert expr_text(parse_expression(text, "<t>")) == text


def test_a_division_by_zero_quotes_the_parenthesized_divisor(tmp_path):
    source = (
        "input { n: int }\nstage a -> number {\n  return 1 / (input.n - 1) * (2 - input.n)\n}\n"
    )
    result = _run(source, {"n": 1}, tmp_path)
    assert result.error is not None
    assert result.error.message.startswith("`1 / (input.n - 1)`: division by zero")


# -- projections -----------------------------------------------------------------------------


def test_a_projection_names_the_element_that_has_no_field():
    with pytest.raises(BadPath) as err:
        _eval("j[*].a", j=[{"a": 1}, {"a": 2}, [3]])
    assert err.value.message == ("path `j[*].a`: `a` is missing (`j[2]` is array, not an object)")
    with pytest.raises(BadPath) as err:
        _eval("j[*].a", j=[{"a": 1}, {"b": 2}])
    assert err.value.message == "path `j[*].a`: `a` is missing (in `j[1]`)"
    assert _eval("j[*].a ?? 0", j=[{"b": 2}]) == 0  # `??` still catches it


def test_a_computed_loop_bound_is_named_as_the_flow_writes_it(tmp_path):
    source = "input { n: int }\nstage a -> int { loop up to input.n as r, s = 0 { s + r } }\n"
    result = _run(source, {"n": 5000}, tmp_path)
    assert result.error is not None and result.error.code == "validation"
    assert result.error.message == (
        "the loop bound `input.n` must be an integer from 0 to 1000, got 5000"
    )


# -- depth -----------------------------------------------------------------------------------


def test_a_loop_nesting_its_state_fails_at_the_input_depth_limit(tmp_path):
    # was a RecursionError past ~450 rounds (to_json_value); now `validation` at depth 101
    result = _run("stage a -> json { loop up to 500 as r, s: json = [] { [s] } }\n", {}, tmp_path)
    assert result.status == "error" and result.error.code == "validation"
    assert result.error.step_path == "E0/round.100"
    assert result.error.message.startswith(
        "`[s]`: the value is nested too deeply (more than 100 levels of arrays/objects)"
    )
    json.dumps(result.to_dict())


def test_a_loop_nesting_within_the_limit_runs(tmp_path):
    result = _run("stage a -> json { loop up to 99 as r, s: json = [] { [s] } }\n", {}, tmp_path)
    assert result.status == "ok", result.error


# -- a stage's last value after a step -------------------------------------------------------

LAST_VALUE = """\
input { n: int }
stage a -> number {
  let x = loop up to 2 as r, s = 0 { s + r }
  return x / input.n
}
"""


def test_an_error_in_a_stages_last_value_after_a_step_is_placed_in_the_stage(tmp_path):
    result = _run(LAST_VALUE, {"n": 0}, tmp_path)
    assert result.error is not None
    error = result.to_dict()["error"]
    assert error["message"].startswith("`x / input.n`: division by zero")
    assert error["step_path"] == "finish"
    assert error["source"] == "lim.flow:4:10"  # the `return`'s expression
    assert error["stage"] == "a" and error["label"] == "a › return"


def test_a_finish_that_only_reads_a_step_carries_no_meta():
    plan = api.compile_source("stage a -> int { loop up to 2 as r, s = 0 { s + r } }\n", "f.flow")
    assert plan.plan["finish"] == {"mode": "output", "output": "{{ E0 }}"}


def test_a_value_sharing_one_list_past_the_node_limit_fails(monkeypatch):
    # `[s, s]` in a loop: 2^rounds values as JSON writes them, whatever the memory it takes
    monkeypatch.setattr(expressions, "MAX_VALUE_NODES", 1000)
    shared: list = [1]
    for _ in range(12):
        shared = [shared, shared]
    with pytest.raises(ExprError) as err:
        expressions.refuse_too_deep(shared, parse_expression("[s, s]", "<t>"))
    assert err.value.message.startswith("`[s, s]`: the value holds more than 1,000 values")
    expressions.refuse_too_deep([[1, 2]] * 300)  # 900 values: within
