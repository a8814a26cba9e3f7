"""Hand-written plans call library functions in their templates (docs/reference/plans.md
"Templates"): the loader checks the name (with a "did you mean") and the number of arguments
(`plan-function-call`, at the call's position in the file), and a valid call runs."""

from __future__ import annotations

import pytest

from agentflow import api
from agentflow.errors import PlanLoadError
from agentflow.ir.loader import load_plan_text


def _plan(value: str) -> str:
    return f'version: 1\nname: p\nsteps:\n  - {{id: E0, tool_name: value, input: {{value: "{value}"}}}}\n'


@pytest.mark.parametrize(
    "template, message, hint",
    [
        ("{{ lenght(input.xs) }}", "unknown function `lenght`", "`len`"),
        ("{{ toUpperCase(input.s) }}", "unknown function `toUpperCase`", "`upper`"),
        ("{{ join(input.xs) }}", "`join` takes 2 arguments, 1 given", "join<T>(xs: T[]"),
        ("{{ if input.ok then range(1, 2, 3) else [] }}", "`range` takes 1 or 2", "range("),
    ],
)
def test_a_bad_call_is_a_plan_function_call_problem(template, message, hint):
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(_plan(template), "p.yaml")
    (diag,) = info.value.diagnostics
    assert diag.code == "plan-function-call"
    assert message in diag.message and hint in (diag.hint or "")
    assert diag.span.line == 4 and diag.span.column > 40


def test_a_plan_runs_library_calls_and_conditionals(tmp_path):
    path = tmp_path / "p.yaml"
    template = '{{ if input.ok then upper(join(sort(input.xs), ", ")) else null }}'
    path.write_text(
        "version: 1\nname: p\nsteps:\n"
        f"  - {{id: E0, tool_name: value, input: {{value: '{template}'}}}}\n",
        encoding="utf-8",
    )
    result = api.run_sync(str(path), {"ok": True, "xs": ["b", "a"]}, workspace=tmp_path)
    assert result.ok, result.error
    assert result.output == "A, B"


def test_a_literal_argument_of_the_wrong_kind_is_refused_at_load_time():
    with pytest.raises(PlanLoadError) as info:
        load_plan_text(_plan("{{ lower(3) }}"), "p.yaml")
    (diag,) = info.value.diagnostics
    assert diag.code == "plan-function-call"
    assert diag.message.endswith("argument `s` of `lower` must be a text, not an integer")
    # a computed argument is checked when it runs; an int is a number
    load_plan_text(_plan("{{ lower(input.s) }}"), "p.yaml")
    load_plan_text(_plan("{{ round(2, 1) }}"), "p.yaml")
