"""Templates: compile_value, conditions, schemas untouched, refs, durations
(docs/spec/PLAN_IR.md §3–4)."""

from __future__ import annotations

import pytest

from agentflow.errors import PlanLoadError
from agentflow.grammar import ast
from agentflow.ir import Step, compile_value, duration_ms, template_refs


@pytest.mark.parametrize(
    ("text", "ms"),
    [("250ms", 250), ("90s", 90_000), ("5m", 300_000), ("1h", 3_600_000), ("1h30m", 5_400_000)],
)
def test_duration_ms(text, ms):
    assert duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "10", "1x", "5 m", "m5", "1.5s", "-1s", None, 5])
def test_duration_ms_refuses(text):
    with pytest.raises(ValueError):
        duration_ms(text)


def test_compile_value_structure():
    body = Step(tool_name="value", input={"value": 1})
    value = {
        "plain": "no template here }}",
        "tpl": "Hello {{ input.name }}!",
        "whole": "{{ E0.items }}",
        "n": 3,
        "flag": False,
        "list": ["a", "{{ E1 }}"],
        "output_schema": {"description": "{{ not compiled }}"},
        "schema": {"x": "{{ nor this }}"},
        "do": body,
        "when": {"all": [{"expr": "E0.count"}, {"not": {"value": "{{ E1 }}", "op": "exists"}}]},
    }
    out = compile_value(value, file="f.yaml")
    assert out is not value and out["plain"] == value["plain"]
    assert isinstance(out["tpl"], ast.Template) and out["tpl"].whole is None
    assert isinstance(out["whole"], ast.Template) and out["whole"].whole is not None
    assert out["n"] == 3 and out["flag"] is False
    assert out["list"][0] == "a" and isinstance(out["list"][1], ast.Template)
    assert out["output_schema"] == {"description": "{{ not compiled }}"}
    assert out["schema"] is value["schema"]
    assert out["do"] is body
    first = out["when"]["all"][0]["expr"]
    assert isinstance(first, ast.Expr) and not isinstance(first, ast.Template)
    assert isinstance(out["when"]["all"][1]["not"]["value"], ast.Template)
    assert template_refs(out) == {"input", "E0", "E1"}


def test_compile_value_without_conditions_keeps_expr_text():
    out = compile_value({"when": {"expr": "a > 1"}}, conditions=False)
    assert out == {"when": {"expr": "a > 1"}}


def test_compile_value_raises_without_problem_list():
    with pytest.raises(PlanLoadError) as info:
        compile_value({"x": "{{ E0."}, file="f.yaml", path=("steps", 0, "input"))
    assert "steps[0].input.x" in str(info.value)


def test_compile_value_collects_problems():
    problems = []
    out = compile_value(["{{ E0. }}", "{{ ok }}"], problems=problems)
    assert len(problems) == 1 and out[0] == "{{ E0. }}"
    assert isinstance(out[1], ast.Template)


def test_template_refs_skip_bodies_and_projection_items():
    body = Step(tool_name="value", input={"value": "{{ hidden }}"})
    body.compiled = compile_value(body.input)
    out = compile_value({"do": body, "over": "{{ E0.xs[*].name }}"})
    assert template_refs(out) == {"E0"}
