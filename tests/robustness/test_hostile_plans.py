"""Hostile plans, templates and lexer inputs — YAML alias bombs and anchors, tags, deep templates,
huge ranges, NaN/Infinity, plan fmt edge cases, byte-order marks: each gives a clean, positioned
error, never a traceback, an out-of-memory or a silently changed value."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from agentflow.cli import _json_out, main
from agentflow.compiler.api import check_source
from agentflow.core.spans import NO_SPAN
from agentflow.core.vocabulary import MAX_EXPR_DEPTH
from agentflow.errors import PlanLoadError, RunError, SourceError
from agentflow.grammar.parser import parse_expression
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.expressions import (
    MAX_RANGE_ITEMS,
    ExprError,
    FlowRange,
    evaluate,
    evaluate_condition,
    render,
)


def _plan(value: str) -> str:
    return f"version: 1\nname: a\nsteps:\n  - {{id: E0, tool_name: value, input: {{value: {value}}}}}\n"


def _problems(text: str) -> list[str]:
    with pytest.raises(PlanLoadError) as exc:
        load_plan_text(text, "p.yaml")
    return [str(p) for p in exc.value.errors]


# -- alias bomb, anchors -----------------------------------------------------------------------


def test_alias_bomb_is_refused_fast_with_positions():
    lines = ["version: 1", "name: a", "x0: &a0 [1,1,1,1,1,1,1,1,1]"]
    for i in range(1, 10):  # 9**10 elements if expanded
        refs = ",".join([f"*a{i - 1}"] * 9)
        lines.append(f"x{i}: &a{i} [{refs}]")
    lines += ["steps:", "  - {id: E0, tool_name: value, input: {value: *a9}}"]
    start = time.perf_counter()
    errs = _problems("\n".join(lines) + "\n")
    assert time.perf_counter() - start < 2
    assert errs[0] == (
        "p.yaml:3:5: YAML anchors and aliases are not allowed in plans (`&a0`, used 9 times)"
        " (write the value out in full)"
    )
    assert len(errs) == 10
    assert all("anchors and aliases" in e for e in errs)


@pytest.mark.parametrize(
    "text, where",
    [
        (
            "version: 1\nname: a\nsteps:\n  - &s {id: E0, tool_name: value, input: {}}\n  - *s\n",
            "4:5",
        ),
        ("version: 1\nname: &n a\nsteps: [{id: E0, tool_name: value, input: {value: 1}}]\n", "2:7"),
        (  # merge keys need an anchor too
            "version: 1\nname: a\nb: &b {tool_name: value}\nsteps:\n  - {<<: *b, id: E0}\n",
            "3:4",
        ),
    ],
)
def test_anchors_are_refused(text, where):
    errs = _problems(text)
    assert errs == [e for e in errs if "anchors and aliases are not allowed" in e]
    assert errs[0].startswith(f"p.yaml:{where}:")


# -- tags --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, shown",
    [
        ('!!python/object:os.system "id"', "!!python/object:os.system"),
        ("!!binary aGVsbG8=", "!!binary"),
        ("!!set {a, b}", "!!set"),
        ("!!timestamp 2001-12-14", "!!timestamp"),
        ("!!omap [{a: 1}]", "!!omap"),
        ("!foo x", "!foo"),
        ("! 12", "!"),
    ],
)
def test_non_standard_tags_are_refused(value, shown):
    errs = _problems(_plan(value))
    assert len(errs) == 1
    assert errs[0].startswith(f"p.yaml:4:47: YAML tag `{shown}` is not allowed in plans")


def test_standard_scalar_tags_still_work():
    plan = load_plan_text(_plan('{a: !!str 1, b: !!int "2", c: !!float "1.5", d: !!null ""}'))
    assert plan.steps[0].input["value"] == {"a": "1", "b": 2, "c": 1.5, "d": None}


# -- messages ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["- 1\n", "[1, 2]\n", "hello\n", "42\n"])
def test_non_mapping_root(text):
    assert _problems(text) == ["p.yaml:1:1: a plan must be a mapping with `name` and `steps`"]


def test_malformed_steps_are_reported_per_item_only():
    errs = _problems('version: 1\nname: a\nsteps: [5, "x", [1], null]\n')
    assert errs == [
        f"p.yaml:3:{col}: steps[{i}]: a step must be a mapping with `tool_name` and `input`"
        for i, col in enumerate((9, 12, 17, 22))
    ]


def test_surrogate_escape_message():
    with pytest.raises(SourceError) as exc:
        parse_expression('"\\u{D800}"')
    assert "`\\u{D800}` is a surrogate, not a character" in exc.value.message
    result = check_source('stage a -> text { return "\\u{DFFF}" }\n', "s.flow")
    [d] = result.diagnostics
    assert "is a surrogate, not a character" in d.message
    assert (d.span.line, d.span.column) == (1, 27)
    with pytest.raises(SourceError) as exc:
        parse_expression('"\\u{110000}"')
    assert "beyond the last code point" in exc.value.message


# -- deep templates ----------------------------------------------------------------------------


def test_deep_member_chain_is_a_load_error():
    chain = "input" + ".a" * 1000
    errs = _problems(_plan(f'"{{{{ {chain} ?? 1 }}}}"'))
    assert len(errs) == 1
    assert "template nested too deeply (more than 200 levels)" in errs[0]
    assert errs[0].startswith("p.yaml:4:")


def test_deep_condition_expr_is_a_load_error():
    expr = "input" + ".a" * 500 + " == 1"
    text = (
        "version: 1\nname: a\nsteps:\n"
        f"  - {{id: E0, tool_name: decide, input: {{when: {{expr: '{expr}'}}, "
        "then: {tool_name: value, input: {value: 1}}}}\n"
    )
    errs = _problems(text)
    assert any("expression nested too deeply" in e for e in errs)
    # raw text given to the evaluator directly is bounded too
    with pytest.raises(ExprError, match="nested too deeply"):
        evaluate_condition({"expr": expr}, {"input": {}})


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("input" + ".a" * (MAX_EXPR_DEPTH - 10) + " ?? 1", 1),
        (" + ".join(["1"] * (MAX_EXPR_DEPTH - 10)), MAX_EXPR_DEPTH - 10),
        (" ?? ".join(["input.x"] * (MAX_EXPR_DEPTH - 10)) + " ?? 3", 3),
    ],
)
def test_chains_just_under_the_limit_load_and_evaluate(expr, expected):
    plan = load_plan_text(_plan(f"'{{{{ {expr} }}}}'"))
    assert render(plan.steps[0].compiled["value"], {"input": {}}) == expected


def test_evaluator_turns_recursion_overflow_into_expr_error():
    # a tree built by hand, without the loader's depth check
    from agentflow.grammar import ast

    expr: ast.Expr = ast.Name(NO_SPAN, "input")
    for _ in range(5000):
        expr = ast.Member(NO_SPAN, expr, "a", NO_SPAN)
    tpl = ast.Template(NO_SPAN, [expr])
    with pytest.raises(ExprError, match="nested too deeply"):
        evaluate(expr, {"input": {}})
    with pytest.raises(ExprError, match="nested too deeply"):
        render(tpl, {"input": {}})


# -- ranges ------------------------------------------------------------------------------------


def test_huge_range_as_value_is_a_bad_value_not_memory_error():
    plan = load_plan_text(_plan("'{{ 1..99999999999 }}'"))
    start = time.perf_counter()
    with pytest.raises(ExprError, match="at most 100,000"):
        render(plan.steps[0].compiled["value"], {})
    text_plan = load_plan_text(_plan("'n={{ 1..99999999999 }}'"))
    with pytest.raises(ExprError, match="at most 100,000"):
        render(text_plan.steps[0].compiled["value"], {})
    assert time.perf_counter() - start < 1


def test_in_on_a_huge_range_never_materialises():
    plan = load_plan_text(_plan("'{{ 5 in 1..99999999999 }}'"))
    assert render(plan.steps[0].compiled["value"], {}) is True
    assert len(FlowRange(1, 99999999999)) == 99999999999


@pytest.mark.parametrize(
    "low, high, expected",
    [(1, 3, [1, 2, 3]), (3, 1, []), (1.5, 4.2, [2, 3, 4]), (-2, 0, [-2, -1, 0]), (2.5, 2.7, [])],
)
def test_small_ranges_still_become_lists(low, high, expected):
    assert FlowRange(low, high).to_list() == expected


def test_range_at_the_limit():
    assert len(FlowRange(1, MAX_RANGE_ITEMS).to_list()) == MAX_RANGE_ITEMS
    with pytest.raises(ExprError):
        FlowRange(0, MAX_RANGE_ITEMS).to_list()


# -- NaN / Infinity ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "literal", [".nan", ".NaN", ".inf", "-.inf", "+.Inf", "1e400", "!!float nan"]
)
def test_non_finite_plan_literals_are_refused(literal):
    errs = _problems(_plan(literal))
    assert len(errs) == 1
    assert errs[0].startswith("p.yaml:4:")
    assert "is not a JSON number" in errs[0]


def test_quoted_nan_is_text():
    plan = load_plan_text(_plan("'.nan'"))
    assert plan.steps[0].input["value"] == ".nan"


def test_float_overflow_in_templates_is_an_arithmetic_error():
    big = "9" * 97 + ".0"  # about 1e97; a number has at most 100 digits
    plan = load_plan_text(_plan(f"'{{{{ {big} * {big} * {big} * {big} }}}}'"))
    with pytest.raises(RunError, match="too large for a JSON number") as e:
        render(plan.steps[0].compiled["value"], {})
    assert e.value.code == "arithmetic"
    huge_int = " * ".join(["9" * 99] * 4)  # exact as an int, too large for a float
    plan = load_plan_text(_plan(f"'{{{{ {huge_int} * 1.5 }}}}'"))
    with pytest.raises(RunError, match="too large for a JSON number") as e:
        render(plan.steps[0].compiled["value"], {})
    assert e.value.code == "arithmetic"


def test_integer_division_stays_exact():
    # exact where a float is not (2^63 - 2 has no float of its own); an operand already past
    # `int` (a hand-written plan's 40-digit literal) is a `number`, its exact quotient kept
    plan = load_plan_text(_plan("'{{ 9223372036854775806 / 2 }}'"))
    assert render(plan.steps[0].compiled["value"], {}) == 4611686018427387903
    plan = load_plan_text(_plan(f"'{{{{ {'9' * 40} / 9 }}}}'"))
    assert render(plan.steps[0].compiled["value"], {}) == int("1" * 40)


@pytest.mark.parametrize(
    "given, shown",
    [
        ('{"a": NaN}', "`NaN` is not a JSON number"),
        ('{"b": Infinity}', "`Infinity` is not a JSON number"),
        ("[-Infinity]", "`-Infinity` is not a JSON number"),
        ("[1e400]", "`1e400` is too large for a number"),
    ],
)
def test_run_refuses_non_json_numbers_in_input(tmp_path, given, shown):
    flow = tmp_path / "echo.flow"
    flow.write_text("stage s -> json { return input }\n")
    r = CliRunner().invoke(main, ["run", str(flow), "--input", given])
    assert r.exit_code == 1
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert f"error: --input: input is not valid JSON: {shown}" in r.stderr


def test_run_output_is_always_valid_json(capsys):
    text = _json_out({"a": float("nan"), "b": [float("inf"), 1.5], "c": "x"})
    assert json.loads(text) == {"a": None, "b": [None, 1.5], "c": "x"}
    assert "printed as null" in capsys.readouterr().err


def test_run_with_finite_input_prints_json(tmp_path):
    flow = tmp_path / "echo.flow"
    flow.write_text("stage s -> json { return input }\n")
    r = CliRunner().invoke(main, ["run", str(flow), "--input", '{"a": 1.5, "b": [1, 2]}'])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == {"a": 1.5, "b": [1, 2]}


# -- plan fmt ----------------------------------------------------------------------------------


def test_plan_fmt_refuses_flow_files(tmp_path):
    flow = tmp_path / "ok.flow"
    src = "stage a -> int { return 1 }\n"
    flow.write_text(src)
    for args in (["plan", "fmt", str(flow)], ["plan", "fmt", "--check", str(flow)]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2
        assert "use `flowc fmt" in r.output
    assert flow.read_text() == src


@pytest.mark.parametrize(
    "text, message",
    [
        ("stage a -> int { return 1 }\n", "a plan must be a mapping"),
        ("a: 1\n", "unknown field `a`"),
        ("version: 1\nname: a\nsteps: []\nx: &a 1\ny: *a\n", "anchors and aliases"),
    ],
)
def test_plan_fmt_never_rewrites_a_file_it_cannot_load(tmp_path, text, message):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    r = CliRunner().invoke(main, ["plan", "fmt", str(f)])
    assert r.exit_code == 1
    assert message in r.stderr
    assert f.read_text() == text


def test_plan_fmt_non_utf8_is_a_clean_error(tmp_path):
    f = tmp_path / "bin.yaml"
    f.write_bytes(b"\xff\xfe\x00garbage")
    r = CliRunner().invoke(main, ["plan", "fmt", str(f)])
    assert r.exit_code == 1
    assert "cannot read plan file" in r.stderr
    assert not isinstance(r.exception, UnicodeDecodeError)
    v = CliRunner().invoke(main, ["plan", "validate", str(f)])  # a report, like flowc check's
    assert v.exit_code == 1 and "cannot read plan file" in v.stdout


def test_plan_fmt_still_formats_valid_plans(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("name: a\nversion: 1\nsteps:\n  - {toolName: value, id: E0, input: {value: 1}}\n")
    r = CliRunner().invoke(main, ["plan", "fmt", str(f)])
    assert r.exit_code == 0, r.output
    assert f.read_text() == (
        "version: 1\nname: a\nsteps:\n- id: E0\n  tool_name: value\n  input:\n    value: 1\n"
    )


# -- BOM ---------------------------------------------------------------------------------------


def test_bom_does_not_shift_columns(tmp_path):
    f = tmp_path / "bom.flow"
    f.write_bytes('\ufeffstage a -> int { return "x" }\n'.encode())
    r = CliRunner().invoke(main, ["check", "--format", "json", str(f)])
    [diag] = json.loads(r.stdout)
    assert (diag["line"], diag["column"], diag["end_column"]) == (1, 25, 28)


def test_bom_compile_meta_source_column(tmp_path):
    f = tmp_path / "bom.flow"
    f.write_bytes("\ufeffstage a -> int { return 1 }\n".encode())
    out = tmp_path / "bom.plan.yaml"
    r = CliRunner().invoke(main, ["compile", str(f), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert f"source: {f}:1:1" in out.read_text() or "bom.flow:1:1" in out.read_text()
