"""`match subject { pattern => value, … }` parses (docs/reference/expressions.md "match"): arms over
lines with a trailing comma, `|` alternatives, `-1`, `_`; both parsers build the same AST; `match`
stays the library function `match(s, re)` and a name elsewhere; bad patterns are syntax errors."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_descent import assert_same_as_lalr  # noqa: E402

from agentflow.grammar import ast  # noqa: E402
from agentflow.grammar.parser import parse_expression, parse_module  # noqa: E402

FLOW = """type Sev = "low" | "medium" | "high"
input { severity: Sev, n: int }
stage main -> text {
  let label = match input.severity {
    "low" => "minor",
    "medium" | "high" => "major",
  }
  let found = match(label, "m")
  let match = 2
  return match input.n { 1 => "one", -1 => "minus", _ => label }
}
"""


def _stmts(text: str) -> list[ast.Stmt]:
    module, diags = parse_module(text, "m.flow")
    assert not diags, diags
    stage = module.items[-1]
    assert isinstance(stage, ast.StageDecl)
    return stage.body.stmts


def test_match_arms_alternatives_and_wildcard_parse():
    stmts = _stmts(FLOW)
    first = stmts[0].value
    assert isinstance(first, ast.MatchExpr)
    assert [[p.text for p in arm.patterns] for arm in first.arms] == [["low"], ["medium", "high"]]
    last = stmts[-1].value
    assert isinstance(last, ast.MatchExpr)
    assert isinstance(last.arms[1].patterns[0], ast.Unary)
    assert last.arms[2].patterns == [] and last.arms[2].wildcard_span is not None


def test_match_stays_the_library_function_and_a_name():
    stmts = _stmts(FLOW)
    assert isinstance(stmts[1].value, ast.FuncCall) and stmts[1].value.name == "match"
    assert isinstance(stmts[2], ast.LetStmt) and stmts[2].name.name == "match"
    e = parse_expression("match + 1", "<t>")
    assert isinstance(e, ast.Binary) and isinstance(e.left, ast.Name)


def test_the_fast_path_builds_the_lalr_paths_match():
    assert_same_as_lalr(FLOW, "m.flow", taken=True)


def test_a_match_is_a_template_expression_too():
    e = parse_expression('match input.x { "a" | "b" => 1, _ => 2 }', "<plan>")
    assert isinstance(e, ast.MatchExpr) and len(e.arms) == 2


def test_a_name_or_an_interpolation_as_a_pattern_is_a_syntax_error():
    for pattern, message in (
        ("other", "a `match` pattern is a literal or `_`, found the name `other`"),
        ('"${input.n}"', "a `match` pattern cannot contain `${…}` interpolation"),
        ('_ | "a"', "`_` matches every value: it stands alone in its arm"),
    ):
        text = FLOW.replace('"low" => "minor"', f'{pattern} => "minor"')
        _, diags = parse_module(text, "m.flow")
        assert [d.message for d in diags] == [message]


def _hint(body: str) -> tuple[str, str | None]:
    text = f"input {{ x: text }}\nstage s -> int {{\n  return {body}\n}}\n"
    _, diags = parse_module(text, "m.flow")
    return diags[0].message, diags[0].hint


def test_the_slips_of_other_languages_get_a_match_hint():
    assert _hint('match input.x { case "a": 1 }') == (
        "expected `=>`, found a string",
        'there is no `case`: a `match` arm is `pattern => value`: `"low" => 1`, '
        '`"a" | "b" => 2`, `_ => 0`',
    )
    message, hint = _hint('switch input.x { "a" => 1 }')
    assert hint is not None and hint.startswith("`.flow` has no `switch`: write `match x {")
    assert _hint("match input.x { }") == (
        "a `match` needs at least one arm",
        'a `match` arm is `pattern => value`: `"low" => 1`, `"a" | "b" => 2`, `_ => 0`',
    )


def test_the_library_call_with_a_blank_is_told_apart():
    message, hint = _hint('match (input.x, "a")')
    assert message.startswith("expected `)`")
    assert hint is not None and 'written without one: `match(s, "pattern")`' in hint


def test_fmt_keeps_the_library_function_match_a_call():
    from agentflow.compiler.fmt import format_source

    text = (
        "input { s: text }\nstage s -> json {\n"
        '  let m = match(input.s, "x")\n  let match = 1\n  return [m, match + 1]\n}\n'
    )
    assert format_source(text, "m.flow") == text


def test_a_repeated_comma_between_arms_is_a_syntax_error_as_in_an_object():
    for body, column in (
        ('match input.x { "a" => 1,,, "b" => 2 }', 35),
        ('match input.x { "a" => 1, _ => 2,, }', 43),
    ):
        text = f"input {{ x: text }}\nstage s -> int {{\n  return {body}\n}}\n"
        _, diags = parse_module(text, "m.flow")
        assert [(d.message, d.span.line, d.span.column) for d in diags] == [
            ("expected an arm before `,`", 3, column)
        ]
        assert diags[0].hint == "one comma separates two arms of a `match`: remove this one"
    message, _ = _hint("{ a: 1,, b: 2 }")
    assert message == "expected an entry before `,`"


def test_a_prefix_minus_or_not_starts_a_subject_and_match_minus_one_stays_arithmetic():
    text = (
        "input { n: int, b: bool }\nstage s -> int {\n"
        "  let a = match -input.n { 1 => 10, _ => 20 }\n"
        "  let c = match not input.b { true => 1, false => 2 }\n"
        "  let match = 3\n"
        "  let d = match -1\n"
        "  let e = [match - 1, match not in [1]]\n"
        "  return a + c + d\n}\n"
    )
    stmts = _stmts(text)
    a, c = stmts[0].value, stmts[1].value
    assert isinstance(a, ast.MatchExpr) and isinstance(a.subject, ast.Unary)
    assert isinstance(c, ast.MatchExpr) and isinstance(c.subject, ast.Unary)
    d = stmts[3].value
    assert isinstance(d, ast.Binary) and isinstance(d.left, ast.Name)
    assert_same_as_lalr(text, "m.flow", taken=True)


def test_a_subject_on_the_next_line_gets_the_subject_rule_as_hint():
    for body in (
        'match\n    input.x {\n      "a" => 1,\n      _ => 2,\n    }',
        'match\n    input.x { "a" => 1, _ => 2 }',
    ):
        _, hint = _hint(body)
        assert hint is not None and hint.startswith("the subject of `match` starts on the line")


def test_a_negative_duration_or_an_exponent_as_a_pattern_has_a_hint():
    text = (
        "input { d: duration }\nstage s -> int {\n  return match input.d { -1m => 1, _ => 2 }\n}\n"
    )
    _, diags = parse_module(text, "m.flow")
    assert [(d.message, d.hint) for d in diags] == [
        (
            "expected a number, found the duration `1m`",
            "a duration is never negative: write the pattern without `-` (`1m`)",
        )
    ]
    _, hint = _hint("match input.x { 1e400 => 1, _ => 2 }")
    assert hint == "a number has no exponent in `.flow`: write its digits (`1e3` is `1000`)"
    _, hint = _hint("12px")
    assert hint is not None and hint.startswith("a number is digits")
