"""A plan's `functions` (docs/spec/PLAN_IR.md §1 "functions"): parsed and checked at load
time — a body reads only its parameters, calls known functions with the right number of
arguments, no function reaches itself — bound to the templates' calls, dumped in canonical
order."""

from __future__ import annotations

import pytest

from agentflow.errors import PlanLoadError
from agentflow.grammar import ast
from agentflow.ir import load_plan_text
from agentflow.ir.dump import dump_plan

PLAN = """\
version: 1
name: p
functions:
  double:
    params: [x]
    expr: "x * 2"
  quad:
    params: [x]
    expr: "double(double(x))"
steps:
  - id: E0
    tool_name: value
    input:
      value: "{{ quad(input.n) }}"
"""


def _problems(text: str) -> list[tuple[str, str]]:
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(text, "p.yaml")
    return [(d.code, d.message) for d in info.value.diagnostics]


def test_a_plan_with_functions_loads_and_binds_each_call():
    plan = load_plan_text(PLAN, "p.yaml")
    assert set(plan.function_table) == {"double", "quad"}
    value = plan.steps[0].compiled["value"]
    call = value.whole
    assert isinstance(call, ast.UserCall) and call.function is plan.function_table["quad"]
    inner = plan.function_table["quad"].body
    assert isinstance(inner, ast.UserCall) and inner.function is plan.function_table["double"]


def test_a_body_reading_a_name_that_is_no_parameter_is_refused():
    text = PLAN.replace('expr: "x * 2"', 'expr: "x * input.n"')
    [(code, message)] = _problems(text)
    assert code == "plan-unknown-name"
    assert "function `double` reads `input`, which is not one of its parameters" in message


def test_an_unknown_function_or_a_wrong_count_is_a_function_call_problem():
    text = PLAN.replace("{{ quad(input.n) }}", "{{ qaud(input.n) }}")
    [(code, message)] = _problems(text)
    assert code == "plan-function-call" and "unknown function `qaud`" in message
    text = PLAN.replace("{{ quad(input.n) }}", "{{ quad(input.n, 2) }}")
    [(code, message)] = _problems(text)
    assert code == "plan-function-call" and "takes 1 argument, 2 given" in message


def test_functions_calling_each_other_are_a_cycle():
    text = PLAN.replace('expr: "x * 2"', 'expr: "quad(x)"')
    found = _problems(text)
    assert [c for c, _ in found] == ["plan-cycle"]
    assert "double → quad → double" in found[0][1]


def test_an_effect_in_a_body_is_refused():
    text = PLAN.replace('expr: "x * 2"', 'expr: "read_file(path: x)"')
    assert [c for c, _ in _problems(text)] == ["plan-effectful-template"]


def test_the_canonical_dump_puts_functions_before_steps():
    text = dump_plan(load_plan_text(PLAN, "p.yaml"))
    assert text.index("functions:") < text.index("steps:")
    assert load_plan_text(text, "p.yaml").function_table.keys() == {"double", "quad"}


def test_an_unknown_field_of_a_function_is_reported_there_and_keeps_the_others():
    text = PLAN.replace('expr: "x * 2"', 'expr: "x * 2"\n    extra: 1')
    [(code, message)] = _problems(text)
    assert (code, message) == (
        "plan-unknown-field",
        "functions.double.extra: unknown field `extra`",
    )
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(PLAN.replace('expr: "x * 2"', 'exprr: "x * 2"'), "p.yaml")
    [d] = info.value.diagnostics
    assert d.code == "plan-unknown-field" and d.hint == "did you mean `expr`?"


@pytest.mark.parametrize(
    "entry",
    [
        'params: x\n    expr: "x * 2"',
        'params: [x]\n    expr: "x *"',
        "params: [x]\n    expr: [3]",
        "[x]",
    ],
)
def test_a_bad_function_entry_is_reported_once_not_at_each_call(entry):
    text = PLAN.replace('params: [x]\n    expr: "x * 2"', entry, 1)
    problems = _problems(text)
    assert len(problems) == 1 and all("double" in m for _, m in problems), problems
    assert not any("unknown function" in m for _, m in problems)
