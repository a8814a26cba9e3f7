"""`sleep D` (docs/reference/statements.md "sleep"): checked as a `duration` (a number is a
`type-mismatch` whose hint adds the unit; zero is `invalid-duration`, past 365 days
`sleep-too-long`), lowered to the `sleep` control step (a constant as written, a computed one a
template), the plan's `for` validated, a contextual word (a name elsewhere), formatted."""

from __future__ import annotations

import pytest

from agentflow import api
from agentflow.compiler.api import check_source
from agentflow.compiler.fmt import format_source
from agentflow.errors import PlanLoadError
from agentflow.ir import load_plan_text


def _diags(body: str, head: str = "input { wait: duration, n: int }\n") -> list[tuple]:
    src = f"{head}stage s -> int {{\n{body}\n  return 1\n}}\n"
    result = check_source(src, "s.flow")
    return [(d.code, d.message, d.hint, d.span.line, d.span.column) for d in result.diagnostics]


def test_a_constant_a_let_and_a_computed_duration_check():
    assert (
        _diags("  sleep 5m\n  let t = 90s\n  sleep t\n  sleep input.wait\n  sleep 1m + 30s") == []
    )


def test_a_number_is_a_type_mismatch_whose_hint_adds_the_unit():
    [(code, message, hint, line, column)] = _diags("  sleep 5")
    assert code == "type-mismatch"
    assert message == "`sleep` takes a duration, found the number 5"
    assert hint == "write the unit: `sleep 5s` (or `ms`, `m`, `h`)"
    assert (line, column) == (3, 9)


def test_text_and_an_int_input_are_type_mismatches():
    found = _diags('  sleep "5m"\n  sleep input.n')
    assert [d[0] for d in found] == ["type-mismatch", "type-mismatch"]


def test_zero_and_negative_are_invalid_durations():
    found = _diags("  sleep 0s\n  sleep 1s - 2s")
    assert [(d[0], d[1]) for d in found] == [
        ("invalid-duration", "`sleep` needs a positive duration, found 0s"),
        ("invalid-duration", "`sleep` needs a positive duration, found 0ms"),
    ]
    assert found[0][2] == "a sleep of no time waits for nothing: remove it"


def test_past_365_days_is_sleep_too_long():
    assert _diags("  sleep 8760h") == []
    [(code, message, hint, *_)] = _diags("  sleep 8760h1ms")
    assert code == "sleep-too-long"
    assert message == "`sleep 8760h1ms` is longer than the longest sleep, 365 days (8760h)"
    assert hint


def test_sleep_as_a_value_is_a_syntax_error_saying_it_is_a_statement():
    src = "stage s -> int {\n  let x = sleep 5m\n  return 1\n}\n"
    [d] = check_source(src, "s.flow").diagnostics
    assert d.code == "syntax-error"
    assert d.message == "expected the end of the statement (a line break), found the duration `5m`"
    assert (
        d.hint == "`sleep` is a statement with no value: write it on a line of its own (`sleep 5m`)"
    )


def test_sleep_with_no_duration_is_a_syntax_error_that_says_what_it_takes():
    src = "stage s -> int {\n  sleep\n  return 1\n}\n"
    [d] = check_source(src, "s.flow").diagnostics
    assert (d.code, d.message) == ("syntax-error", "expected an expression, found `return`")
    assert d.hint == "`sleep` takes a duration: `sleep 5m` (or `sleep input.wait`)"


def test_sleep_is_a_name_where_a_statement_does_not_start():
    src = (
        "input { sleep: duration }\n"
        "stage s -> duration {\n  let sleep_for = input.sleep\n  sleep sleep_for\n"
        "  return input.sleep\n}\n"
    )
    assert check_source(src, "s.flow").diagnostics == []


def test_sleep_directly_followed_by_a_parenthesis_calls_a_tool_named_sleep():
    src = (
        'extern tool "ops__sleep" as sleep(n: int) -> int\n'
        "stage s -> int {\n  sleep(n: 1)\n  sleep (5m)\n  return sleep(n: 2)\n}\n"
    )
    assert check_source(src, "s.flow").diagnostics == []
    steps = api.compile_source(src, "s.flow").plan["steps"]
    assert [s["tool_name"] for s in steps] == ["ops__sleep", "sleep", "ops__sleep"]
    assert [s["input"] for s in steps] == [{"n": 1}, {"for": "5m"}, {"n": 2}]


def test_lowered_to_the_sleep_step_a_constant_as_written_a_computed_one_a_template():
    src = (
        "input { wait: duration }\nstage s -> int {\n  sleep 90s\n  sleep 1m + 30s\n"
        "  sleep input.wait\n  if true {\n    sleep 1s\n  }\n  return 1\n}\n"
    )
    plan = api.compile_source(src, "s.flow").plan
    steps = plan["steps"]
    assert [(s["tool_name"], s["input"]) for s in steps[:3]] == [
        ("sleep", {"for": "90s"}),
        ("sleep", {"for": "1m30s"}),
        ("sleep", {"for": "{{ input.wait }}"}),
    ]
    assert steps[0]["meta"]["source"] == "s.flow:3:3"
    # a sleep alone in a branch is the branch's body (no sub-plan)
    assert steps[3]["input"]["then"]["tool_name"] == "sleep"
    assert "plans" not in plan


@pytest.mark.parametrize(
    ("wait", "message"),
    [
        ("0s", "`for` must be a positive duration, not '0s'"),
        ("5 minutes", "invalid duration '5 minutes'"),
        ("9000h", "`for` must be at most 8760h (365 days), not '9000h'"),
    ],
)
def test_the_plan_loader_checks_a_literal_for(wait, message):
    text = f"version: 1\nname: p\nsteps:\n  - id: S\n    tool_name: sleep\n    input: {{for: {wait}}}\n"
    with pytest.raises(PlanLoadError) as e:
        load_plan_text(text, "p.yaml")
    assert message in str(e.value)


def test_fmt_lays_out_a_sleep_as_a_statement():
    src = "stage s -> int {\n    sleep   5m\n  if true { sleep  1s }\n  return 1\n}\n"
    formatted = format_source(src, "s.flow")
    assert formatted == "stage s -> int {\n  sleep 5m\n  if true { sleep 1s }\n  return 1\n}\n"
    assert format_source(formatted, "s.flow") == formatted


def test_a_sleep_costs_no_inference_and_is_a_node_of_the_graph(tmp_path):
    flow = tmp_path / "poll.flow"
    flow.write_text(
        "input { wait: duration }\nstage s -> int {\n  sleep 5m\n  sleep input.wait\n  return 1\n}\n"
    )
    cost = api.worst_case_cost(api.load(flow))
    assert cost["total"] == "0"
    drawn = api.graph(flow)
    assert '["<b>sleep 5m</b>"]' in drawn and '["<b>sleep input.wait</b>"]' in drawn
