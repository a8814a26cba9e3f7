"""runtime.expressions: docs/spec/LANGUAGE.md §4 semantics, docs/spec/PLAN_IR.md §3 templates, §4
conditions."""

from __future__ import annotations

import time

import pytest

from agentflow.core.spans import NO_SPAN
from agentflow.errors import RunError
from agentflow.grammar import ast
from agentflow.runtime.expressions import (
    BadPath,
    ExprError,
    evaluate,
    evaluate_condition,
    render,
    render_value,
    to_text,
)

S = NO_SPAN


# -- tiny AST builders (independent of the parser) ---------------------------------------------


def N(name):
    return ast.Name(S, name)


def M(obj, name):
    return ast.Member(S, obj, name, S)


def I(obj, index):  # noqa: E743
    return ast.Index(S, obj, index)


def num(v):
    return ast.NumberLit(S, v)


def s(text):
    return ast.StringLit(S, [text] if text else [])


def B(op, a, b):
    return ast.Binary(S, op, a, b)


def lst(*items):
    return ast.ListLit(S, list(items))


def T(*parts):
    return ast.Template(S, list(parts))


def proj(base, path=None):
    return ast.Projection(S, base, path)


ITEM = ast.ProjectionItem(S)

SCOPE = {
    "input": {"limit": 3, "tags": ["a", "b"], "name": "Zoë"},
    "E0": {
        "issues": [
            {"id": "I-1", "owner": {"name": "ann"}, "n": 1},
            {"id": "I-2", "owner": {"name": "bob"}, "n": 2},
        ],
        "count": 99,
        "empty": None,
    },
    "flag": False,
}


def test_paths_and_index():
    assert evaluate(M(N("input"), "limit"), SCOPE) == 3
    assert evaluate(M(I(M(N("E0"), "issues"), num(1)), "id"), SCOPE) == "I-2"
    assert evaluate(I(N("input"), s("name")), SCOPE) == "Zoë"


def test_bad_path_names_path_and_missing_part():
    with pytest.raises(BadPath) as ei:
        evaluate(M(I(M(N("E0"), "issues"), num(0)), "title"), SCOPE)
    e = ei.value
    assert isinstance(e, RunError) and e.code == "bad_path"
    assert e.path == "E0.issues[0].title" and e.missing == "title"
    assert "E0.issues[0].title" in e.message and "`title`" in e.message
    with pytest.raises(BadPath) as ei:
        evaluate(I(M(N("E0"), "issues"), num(5)), SCOPE)
    assert ei.value.missing == "[5]"
    with pytest.raises(BadPath) as ei:
        evaluate(M(N("E9"), "x"), SCOPE)
    assert ei.value.missing == "E9"
    with pytest.raises(BadPath):
        evaluate(M(M(N("E0"), "empty"), "x"), SCOPE)


def test_projection_and_count():
    issues = M(N("E0"), "issues")
    assert evaluate(proj(issues, M(M(ITEM, "owner"), "name")), SCOPE) == ["ann", "bob"]
    assert evaluate(proj(issues), SCOPE) == SCOPE["E0"]["issues"]
    assert evaluate(M(issues, "count"), SCOPE) == 2
    assert evaluate(M(M(N("input"), "name"), "count"), SCOPE) == 3
    assert evaluate(M(N("input"), "count"), SCOPE) == 3  # a map: number of keys
    assert evaluate(M(N("E0"), "count"), SCOPE) == 99  # a real field wins
    # nested projection
    scope = {"xs": [{"ys": [{"z": 1}, {"z": 2}]}, {"ys": [{"z": 3}]}]}
    inner = proj(M(ITEM, "ys"), M(ITEM, "z"))
    assert evaluate(proj(N("xs"), inner), scope) == [[1, 2], [3]]


def test_in_operator():
    assert evaluate(B("in", s("a"), M(N("input"), "tags")), SCOPE) is True
    assert evaluate(B("not in", s("z"), M(N("input"), "tags")), SCOPE) is True
    assert evaluate(B("in", s("oë"), M(N("input"), "name")), SCOPE) is True
    assert evaluate(B("in", s("limit"), N("input")), SCOPE) is True
    rng = ast.RangeExpr(S, num(0), num(10))
    assert evaluate(B("in", num(10), rng), SCOPE) is True
    assert evaluate(B("in", num(11), rng), SCOPE) is False
    assert evaluate(B("in", num(2.5), rng), SCOPE) is True


def test_arithmetic_and_concat():
    assert evaluate(B("+", num(1), num(2)), {}) == 3
    assert evaluate(B("+", s("a"), s("b")), {}) == "ab"
    assert evaluate(B("+", lst(num(1)), lst(num(2))), {}) == [1, 2]
    assert evaluate(B("*", num(3), num(4)), {}) == 12
    assert evaluate(B("/", num(6), num(3)), {}) == 2
    assert evaluate(B("/", num(7), num(2)), {}) == 3.5
    assert evaluate(B("%", num(7), num(2)), {}) == 1
    assert evaluate(ast.Unary(S, "-", num(2)), {}) == -2
    with pytest.raises(ExprError):
        evaluate(B("+", num(1), s("a")), {})
    with pytest.raises(RunError) as e:
        evaluate(B("/", num(1), num(0)), {})
    assert (e.value.code, e.value.message) == ("arithmetic", "`1 / 0`: division by zero")


def test_comparisons_and_logic():
    assert evaluate(B("<", num(1), num(2)), {}) is True
    assert evaluate(B(">=", s("b"), s("a")), {}) is True
    assert evaluate(B("==", lst(num(1)), lst(num(1))), {}) is True
    assert evaluate(B("==", num(1), ast.BoolLit(S, True)), {}) is False
    assert evaluate(B("!=", ast.NullLit(S), num(0)), {}) is True
    with pytest.raises(ExprError):
        evaluate(B("<", num(1), s("a")), {})
    t, f = ast.BoolLit(S, True), ast.BoolLit(S, False)
    assert evaluate(B("and", t, f), {}) is False
    assert evaluate(B("or", f, t), {}) is True
    assert evaluate(ast.Unary(S, "not", f), {}) is True
    # short circuit: the right side is never evaluated
    assert evaluate(B("and", f, M(N("missing"), "x")), {}) is False
    assert evaluate(B("or", t, M(N("missing"), "x")), {}) is True


def test_coalesce_catches_null_and_missing():
    assert evaluate(B("??", M(N("E0"), "empty"), s("d")), SCOPE) == "d"
    assert evaluate(B("??", M(M(N("E0"), "nope"), "deeper"), s("d")), SCOPE) == "d"
    assert evaluate(B("??", I(M(N("E0"), "issues"), num(9)), num(0)), SCOPE) == 0
    assert evaluate(B("??", M(N("input"), "limit"), num(0)), SCOPE) == 3
    assert evaluate(B("??", N("flag"), ast.BoolLit(S, True)), SCOPE) is False


def test_interpolated_string_renders_compact_json():
    node = ast.StringLit(
        S,
        [
            "tags=",
            ast.Interpolation(S, M(N("input"), "tags")),
            " name=",
            ast.Interpolation(S, M(N("input"), "name")),
            " n=",
            ast.Interpolation(S, ast.NullLit(S)),
        ],
    )
    assert evaluate(node, SCOPE) == 'tags=["a","b"] name=Zoë n=null'
    assert to_text({"k": "ü", "v": [1, True]}) == '{"k":"ü","v":[1,true]}'


def test_literals():
    obj = ast.ObjectLit(S, [ast.ObjectEntry(S, "a", S, num(1)), ast.ObjectEntry(S, "b", S, lst())])
    assert evaluate(obj, {}) == {"a": 1, "b": []}
    assert evaluate(ast.DurationLit(S, 90000, "90s"), {}) == "90s"


def test_render_whole_value_vs_text():
    issues = M(N("E0"), "issues")
    assert render(T(M(issues, "count")), SCOPE) == 2
    assert render(T(N("flag")), SCOPE) is False
    assert render(T(proj(issues, M(ITEM, "id"))), SCOPE) == ["I-1", "I-2"]
    assert render(T("n=", M(issues, "count")), SCOPE) == "n=2"
    assert render(T("ids: ", proj(issues, M(ITEM, "id"))), SCOPE) == 'ids: ["I-1","I-2"]'
    assert render(T("plain"), SCOPE) == "plain"


def test_render_lenient_warns():
    warnings = []
    out = render(T("a", M(N("E0"), "nope"), "b"), SCOPE, lenient=True, on_warning=warnings.append)
    assert out == "ab" and len(warnings) == 1 and "nope" in warnings[0]
    assert render(T(M(N("E0"), "nope")), SCOPE, lenient=True) == ""
    with pytest.raises(BadPath):
        render(T("a", M(N("E0"), "nope")), SCOPE)


def test_render_value_recursive_leaves_other_objects():
    class FakeStep:
        tool_name = "x"

    step = FakeStep()
    cond = M(N("x"), "y")
    tree = {"a": [T(M(N("input"), "limit")), "k"], "do": step, "expr": cond, "n": 1}
    out = render_value(tree, SCOPE)
    assert out == {"a": [3, "k"], "do": step, "expr": cond, "n": 1}
    assert out["do"] is step


def test_conditions_all_ops():
    v = T(M(N("input"), "limit"))
    c = evaluate_condition
    assert c({"value": v, "op": "eq", "to": 3}, SCOPE)
    assert c({"value": v, "op": "ne", "to": 4}, SCOPE)
    assert c({"value": v, "op": "lt", "to": 4}, SCOPE)
    assert c({"value": v, "op": "le", "to": 3}, SCOPE)
    assert c({"value": v, "op": "gt", "to": 2}, SCOPE)
    assert c({"value": v, "op": "ge", "to": 3}, SCOPE)
    assert c({"value": v, "op": "in", "to": [1, 3]}, SCOPE)
    assert c({"value": v, "op": "not_in", "to": [1, 2]}, SCOPE)
    assert c({"value": T(M(N("input"), "tags")), "op": "contains", "to": "a"}, SCOPE)
    assert c({"value": T(M(N("input"), "nope")), "op": "exists"}, SCOPE) is False
    assert c({"value": T(M(N("input"), "tags")), "op": "exists"}, SCOPE)
    assert c({"value": T(M(N("E0"), "empty")), "op": "empty"}, SCOPE)
    assert c({"value": T(M(N("input"), "tags")), "op": "not_empty"}, SCOPE)
    assert c({"value": T(M(N("input"), "name")), "op": "matches", "to": "^Z.ë$"}, SCOPE)
    assert c({"value": T(N("flag")), "op": "eq", "to": False}, SCOPE)
    assert c({"expr": B(">", M(M(N("E0"), "issues"), "count"), num(0))}, SCOPE)
    assert c(
        {"all": [{"value": 1, "op": "eq", "to": 1}, {"not": {"value": 1, "op": "eq", "to": 2}}]}, {}
    )
    assert c({"any": [{"value": 1, "op": "eq", "to": 2}, {"value": 1, "op": "eq", "to": 1}]}, {})
    assert not c({"any": []}, {})
    with pytest.raises(ExprError):
        c({"value": 1, "op": "bogus", "to": 1}, {})
    with pytest.raises(ExprError):
        c({"expr": num(1)}, {})
    with pytest.raises(BadPath):
        c({"value": T(M(N("input"), "nope")), "op": "eq", "to": 1}, SCOPE)


def test_contains_condition_error_names_the_op():
    with pytest.raises(ExprError) as exc:
        evaluate_condition({"value": 5, "op": "contains", "to": 3}, {})
    assert exc.value.message == (
        "condition `contains` needs an array, text, map or range, got number"
    )
    with pytest.raises(ExprError) as exc:
        evaluate_condition({"value": 1, "op": "in", "to": "abc"}, {})
    assert exc.value.message == "condition `in` on a text needs a text operand, got number"


def test_evaluation_is_fast():
    # 20k evaluations of a projection + count + comparison path in well under a second
    expr = B(">", M(proj(M(N("E0"), "issues"), M(ITEM, "id")), "count"), num(1))
    t0 = time.perf_counter()
    for _ in range(20_000):
        assert evaluate(expr, SCOPE) is True
    assert time.perf_counter() - t0 < 1.5


def test_parsed_expressions_and_templates_evaluate():
    from agentflow.grammar import parser

    e = parser.parse_expression('E0.issues[*].owner.name ?? "x"')
    assert evaluate(e, SCOPE) == ["ann", "bob"]
    e = parser.parse_expression("input.limit in 0..10 and not flag")
    assert evaluate(e, SCOPE) is True
    e = parser.parse_expression('"n=${E0.issues.count} t=${input.tags}"')
    assert evaluate(e, SCOPE) == 'n=2 t=["a","b"]'
    t = parser.parse_template("{{ E0.issues[*].id }}")
    assert render(t, SCOPE) == ["I-1", "I-2"]
    t = parser.parse_template("ids {{ E0.issues[*].id }} {{ {a: {b: 1}} }}")
    assert render(t, SCOPE) == 'ids ["I-1","I-2"] {"a":{"b":1}}'
    t = parser.parse_template('{{ "{{" }}')
    assert render(t, SCOPE) == "{{"
    assert evaluate(parser.parse_expression("E0.missing.x ?? E0.issues[0].n + 1"), SCOPE) == 2
