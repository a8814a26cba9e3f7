"""Slips of `parallel`, of a `match`'s patterns and of a comma before the first item are told
in the user's terms, at the token of the slip, with the fix as a hint (docs/reference/control.md
"parallel map … limit N" and "parallel blocks", docs/reference/expressions.md "match"). The
fast path leaves each file to the LALR path, so both parsers give the one diagnostic."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_descent import assert_same_as_lalr  # noqa: E402

from agentflow.grammar.parser import parse_module  # noqa: E402

_HEAD = "input { n: int, xs: int[] }\nextern tool f(x: int) -> int\nextern tool g(x: int) -> int\n"
_ARM = 'a `match` arm is `pattern => value`: `"low" => 1`, `"a" | "b" => 2`, `_ => 0`'
_BRANCHES = (
    "write `parallel { a: f(…), b: g(…) }`: the block's value is an object with one field per "
    "branch, by its name"
)


def _one(body: str) -> tuple[str, int, int, str | None]:
    text = f"{_HEAD}stage s -> json {{\n  {body}\n}}\n"
    _, diags = parse_module(text, "s.flow")
    assert len(diags) == 1, diags
    assert_same_as_lalr(text, "s.flow")
    d = diags[0]
    return d.message, d.span.line - 4, d.span.column, d.hint


CASES = [
    (
        "return parallel limit 2 map input.xs as x { x }",
        (
            "the `limit` of a `parallel map` is written after `as NAME`, before the body",
            1,
            19,
            "write `parallel map input.xs as x limit 2 { … }` (docs/reference/control.md); "
            "`parallel limit N { a: …, b: … }` is the block of named branches",
        ),
    ),
    (
        "return parallel { f(x: 1), g(x: 2) }",
        ("a branch of a `parallel` block has a name: `name: expression`", 1, 21, _BRANCHES),
    ),
    (
        "return parallel limit 2 { a: f(x: 1), g(x: 2) }",
        ("a branch of a `parallel` block has a name: `name: expression`", 1, 41, _BRANCHES),
    ),
    (
        "return parallel { a: f(x: 1), b }",
        ("a branch of a `parallel` block has a name: `name: expression`", 1, 33, _BRANCHES),
    ),
    ("return match input.n { }", ("a `match` needs at least one arm", 1, 26, _ARM)),
    (
        "return match input.n { [1] => 1, _ => 2 }",
        (
            "expected a pattern, found `[`",
            1,
            26,
            'a pattern is a literal (`"low"`, `1`, `-1`, `5m`, `true`, `null`), literals joined '
            'by `|` (`"a" | "b"`), or `_` for every other value; ' + _ARM,
        ),
    ),
    (
        "return match input.n { 1 |, 2 => 1, _ => 2 }",
        (
            "expected a pattern after `|`, found `,`",
            1,
            29,
            "`|` joins two patterns of one arm (`1 | 2 => …`) and `,` ends the arm: write the "
            "pattern after `|`, or drop the `|`",
        ),
    ),
    (
        "return match input.n { 1 || 2 => 1, _ => 2 }",
        (
            "patterns are joined with one `|`, found `||`",
            1,
            29,
            "write `1 | 2 => …`: one `|` joins the patterns of an arm (`.flow` has no `||`; `or` "
            "joins two conditions)",
        ),
    ),
    (
        "return match input.n {\n    1 => f(x: 1) + 1\n    _ => 2\n  }",
        (
            "expected `,` between two arms of a `match`",
            3,
            5,
            "end the arm before with a comma (`1 => f(x: 1) + 1,`): the arms of a `match` are "
            "separated by `,`, on one line or on lines of their own",
        ),
    ),
    (
        "return f(,1)",
        (
            "expected an argument before `,`",
            1,
            12,
            "one comma separates two arguments: remove this one",
        ),
    ),
]


@pytest.mark.parametrize(("body", "expected"), CASES)
def test_a_slip_is_told_in_the_users_terms_at_its_token_with_the_fix(
    body: str, expected: tuple[str, int, int, str]
) -> None:
    assert _one(body) == expected


_SUBJECT = "the subject of `match` starts on the line of `match`"


@pytest.mark.parametrize(
    "text",
    [
        f"{_HEAD}stage s -> int {{\n  return match\n    input.n {{ 1 => 1, _ => 2 }}\n}}\n",
        f"{_HEAD}stage s -> int {{\n  let x = match\n    input.n {{ 1 => 1, _ => 2 }}\n"
        "  return x\n}\n",
        "fn pick(n: int) -> int = match\n  n { 1 => 1, _ => 2 }\n",
    ],
)
def test_a_subject_below_match_gets_the_subject_rule_after_return_let_or_fn(text: str) -> None:
    _, diags = parse_module(text, "s.flow")
    assert diags and diags[0].hint is not None and diags[0].hint.startswith(_SUBJECT)
    assert_same_as_lalr(text, "s.flow")


@pytest.mark.parametrize(
    ("text", "column", "what", "whats"),
    [
        ('import { , A } from "./a.flow"\n', 10, "a name", "imported names"),
        ("fn h(, x: int) -> int = x\n", 6, "a parameter", "parameters"),
        ("extern tool t(, x: int) -> int\n", 15, "a parameter", "parameters"),
    ],
)
def test_a_comma_before_the_first_item_gets_the_repeated_comma_hint(
    text: str, column: int, what: str, whats: str
) -> None:
    _, diags = parse_module(text, "c.flow")
    assert [(d.message, d.span.line, d.span.column, d.hint) for d in diags] == [
        (
            f"expected {what} before `,`",
            1,
            column,
            f"one comma separates two {whats}: remove this one",
        )
    ]
    assert_same_as_lalr(text, "c.flow")


_PARENTHESES = (
    "parentheses hold one expression, `(a + b)`: remove this comma (`.flow` has no tuples; "
    "several values are a list, `[1, 2]`, or an object, `{ a: 1, b: 2 }`)"
)


@pytest.mark.parametrize(
    ("body", "column"),
    [
        ("let x = (,1)\n  return x", 12),
        ("return (,1)", 11),
        ("return 1 + (,2)", 15),
        ("return -(,2)", 12),
        ("return [(,2)]", 12),
        ("return f(x: (,1))", 16),
    ],
)
def test_a_comma_first_in_parentheses_says_what_parentheses_hold(body: str, column: int) -> None:
    # on both parsers (`_one` compares the fast path with LALR), as `f(,1)` and `import { , A }`
    assert _one(body) == ("expected an expression before `,`", 1, column, _PARENTHESES)


def test_a_comma_first_in_a_call_after_parentheses_is_still_an_argument_slip() -> None:
    assert _one("return f(x: 1)(,2)")[0] == "expected an argument before `,`"


def test_a_list_before_its_first_comma_gets_the_same_hint_as_a_call() -> None:
    assert _one("return [,1]")[3] == _one("return f(,1)")[3].replace("arguments", "items of a list")


def test_an_arm_ending_in_a_bracket_or_a_nested_match_still_gets_the_missing_comma() -> None:
    for value in ("[1, 2]", "{ a: 1 }", "match input.n { 2 => 3, _ => 4 }"):
        body = f"return match input.n {{\n    1 => {value}\n    _ => 2\n  }}"
        message, line, column, hint = _one(body)
        assert (message, line, column) == ("expected `,` between two arms of a `match`", 3, 5)
        assert hint is not None and hint.startswith(
            f"end the arm before with a comma (`1 => {value},`)"
        )


def test_two_arms_on_one_line_without_a_comma_point_at_the_second_arm() -> None:
    message, line, column, hint = _one('return match input.n { 1 => "x" _ => "y" }')
    assert (message, line, column) == ("expected `,` between two arms of a `match`", 1, 35)
    assert hint is not None and hint.startswith("put a comma before `_`: the arms of a `match`")
    message, _, column, hint = _one('return match input.n { 1 => 2 "b" | "c" => 4 }')
    assert (message, column) == ("expected `,` between two arms of a `match`", 33)
    assert hint is not None and hint.startswith('put a comma before `"b"`')


def test_a_value_after_an_arm_that_starts_no_arm_is_not_told_as_a_missing_comma() -> None:
    message, _, _, _ = _one('return match input.n { 1 => "x" y }')
    assert message != "expected `,` between two arms of a `match`"
