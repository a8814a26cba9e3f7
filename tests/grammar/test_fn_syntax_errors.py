"""The slips of a `fn` declaration are told in a function's terms, with the fix in the user's
own names (docs/reference/programs.md "User functions"): a body written as a block, no result
type, a parameter without its type. Both parsers give the one diagnostic (the fast path leaves
the file to the LALR path)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_descent import assert_same_as_lalr  # noqa: E402

from agentflow.grammar.parser import parse_module  # noqa: E402

_TYPED = "a function's parameters and result are typed, as a tool's are"

CASES = [
    (
        "fn f(x: int) -> int { x + 1 }",
        "a function's body is one expression after `=`, not a block",
        21,
        "write `fn f(x: int) -> int = x + 1`",
    ),
    (
        "fn f(x: int) -> int { return x + 1 }",
        "a function's body is one expression after `=`, not a block",
        21,
        "write `fn f(x: int) -> int = x + 1`",
    ),
    (
        "fn f(x: int) { x + 1 }",
        "function `f` has no result type",
        14,
        "write `fn f(x: int) -> T = x + 1`, `T` the type of its value (`int`, `text`, `bool`, "
        f"a named type …): {_TYPED}",
    ),
    (
        "fn f(x: int) = x + 1",
        "function `f` has no result type",
        14,
        "write `fn f(x: int) -> T = x + 1`, `T` the type of its value (`int`, `text`, `bool`, "
        f"a named type …): {_TYPED}",
    ),
    (
        "fn f(x) -> int = x + 1",
        "parameter `x` of function `f` has no type",
        6,
        "write its type after a colon, `x: int` (or `text`, `bool`, a named type …): a "
        "function's parameters are typed, as a tool's are",
    ),
    (
        "fn f(n: int, label) -> text = label",
        "parameter `label` of function `f` has no type",
        14,
        "write its type after a colon, `label: int` (or `text`, `bool`, a named type …): a "
        "function's parameters are typed, as a tool's are",
    ),
]


CASES += [
    (
        "fn next(x: int) -> int = { x + 1 }",
        "a function's body is one expression after `=`, not a block",
        26,
        "write `fn next(x: int) -> int = x + 1`",
    ),
    (
        "fn next(x: int): int = x",
        "a function's result type is written after `->`, not `:`",
        16,
        "write `fn next(x: int) -> int = x`",
    ),
    (
        "fn next(x: int) -> int = return x",
        "a function's body is one expression, without `return`",
        26,
        "write `fn next(x: int) -> int = x`: the expression after `=` is the function's value",
    ),
]


@pytest.mark.parametrize(("line", "message", "column", "hint"), CASES)
def test_a_fn_slip_is_told_in_a_functions_terms_with_its_fix(
    line: str, message: str, column: int, hint: str
) -> None:
    text = f"{line}\nstage s -> int {{ return 1 }}\n"
    _, diags = parse_module(text, "f.flow")
    assert [(d.code, d.message, d.span.line, d.span.column) for d in diags] == [
        ("syntax-error", message, 1, column)
    ]
    assert diags[0].hint == hint
    assert_same_as_lalr(text, "f.flow")


_FOLDED = "a function's body is one expression, each `let`'s value written where it is read"


def test_a_block_body_of_lets_and_a_return_is_folded_into_the_one_expression() -> None:
    text = "fn f(x: int) -> int {\n  let y = x\n  return y + 1\n}\nstage s -> int { return 1 }\n"
    _, diags = parse_module(text, "f.flow")
    assert [(d.message, d.span.line, d.span.column) for d in diags] == [
        ("a function's body is one expression after `=`, not a block", 1, 21)
    ]
    assert diags[0].hint == f"write `fn f(x: int) -> int = x + 1`: {_FOLDED}"
    assert_same_as_lalr(text, "f.flow")


@pytest.mark.parametrize(
    ("body", "folded"),
    [
        ("let y = x * 2\n  return y", "x * 2"),
        ("let y = x * 2\n  let z = y + 1\n  return z * y", "((x * 2) + 1) * (x * 2)"),
        ("let y: int = x - 1\n  return max(y, 0)", "max((x - 1), 0)"),
        # a field and an object key of the let's name stay as written
        ("let y = x + 1\n  return { y: y, n: len(x.y) }", "{ y: (x + 1), n: len(x.y) }"),
    ],
)
def test_a_let_is_written_where_it_is_read_in_the_folded_body(body: str, folded: str) -> None:
    text = f"fn f(x: int) -> int {{\n  {body}\n}}\n"
    _, diags = parse_module(text, "f.flow")
    assert diags[0].hint == f"write `fn f(x: int) -> int = {folded}`: {_FOLDED}"


@pytest.mark.parametrize(
    "body",
    [
        "if x > 1 { return 1 }\n  return 2",  # a statement that is not a `let`
        'let y = upper(s)\n  return "${y}!"',  # read inside a string
        "let y = x // the input\n  return y",  # a comment
    ],
)
def test_a_block_that_cannot_be_folded_gets_what_a_body_may_hold_in_its_names(body: str) -> None:
    text = f"fn f(x: int, s: text) -> text {{\n  {body}\n}}\n"
    _, diags = parse_module(text, "f.flow")
    assert diags[0].hint == (
        "write the value after `=` as one expression of `x` and `s`: literals, operators, "
        "`if c then a else b`, `match`, calls of library and user functions; no `let` (write "
        "its value where it is read), no `return`, no tool call or agent; a computation of "
        "several steps is a `stage`"
    )
    assert "…" not in diags[0].hint
    assert_same_as_lalr(text, "f.flow")


def test_a_block_after_equals_gets_the_one_expression_rule_at_its_brace() -> None:
    # `= {` reads the block as an object: the error is at its brace, not at the `let` inside
    text = (
        "fn next(x: int) -> int = {\n  let y = x + 1\n  return y\n}\nstage s -> int { return 1 }\n"
    )
    _, diags = parse_module(text, "f.flow")
    assert [(d.message, d.span.line, d.span.column) for d in diags] == [
        ("a function's body is one expression after `=`, not a block", 1, 26)
    ]
    assert diags[0].hint == f"write `fn next(x: int) -> int = x + 1`: {_FOLDED}"
    assert_same_as_lalr(text, "f.flow")


def test_an_object_body_after_equals_still_parses_and_its_own_slips_stay_its() -> None:
    text = "fn pair(x: int) -> json = { a: x, b: x }\n"
    assert parse_module(text, "f.flow")[1] == []
    _, diags = parse_module("fn pair(x: int) -> json = { a: x,, b: x }\n", "f.flow")
    assert [d.message for d in diags] == ["expected an entry before `,`"]


def test_the_error_spans_the_brace_of_the_block() -> None:
    text = "fn f(x: int) -> int { x + 1 }\n"
    _, diags = parse_module(text, "f.flow")
    span = diags[0].span
    assert text[span.start : span.end] == "{"


_TOOL_TYPED = (
    "(or `text`, `bool`, a named type, `json` …): a tool's parameters are typed, and each "
    "call's arguments are checked against them; `flowc tools --extern` prints the declaration "
    "typed from the tool's own schema"
)

TOOL_CASES = [
    ("extern tool t(x) -> int", "parameter `x` of tool `t` has no type", 15, "x: int"),
    ("extern tool t(x, y: int) -> int", "parameter `x` of tool `t` has no type", 15, "x: int"),
    (
        "extern tool t(n: int, label) -> text",
        "parameter `label` of tool `t` has no type",
        23,
        "label: int",
    ),
    (
        "extern tool t(n: int, limit?) -> text",
        "parameter `limit` of tool `t` has no type",
        23,
        "limit?: int",
    ),
    (
        'extern tool "github.search" as search(query) -> json',
        "parameter `query` of tool `search` has no type",
        39,
        "query: int",
    ),
]


@pytest.mark.parametrize(("line", "message", "column", "typed"), TOOL_CASES)
def test_an_extern_tool_parameter_without_a_type_is_told_at_the_parameter_with_its_fix(
    line: str, message: str, column: int, typed: str
) -> None:
    # the one slip a tool declaration shares with a function's (it was "expected `:`")
    text = f"{line}\nstage s -> int {{ return 1 }}\n"
    _, diags = parse_module(text, "t.flow")
    assert [(d.code, d.message, d.span.line, d.span.column) for d in diags] == [
        ("syntax-error", message, 1, column)
    ]
    name = message.split("`")[1]
    assert text[diags[0].span.start : diags[0].span.end] == name
    assert diags[0].hint == f"write its type after a colon, `{typed}` {_TOOL_TYPED}"
    assert_same_as_lalr(text, "t.flow")


@pytest.mark.parametrize(
    "line", ["fn f(x: {a, b: int}) -> int = 1", "extern tool t(x: {a, b: int}) -> int"]
)
def test_a_field_without_a_type_in_a_parameters_object_type_is_not_called_a_parameter(
    line: str,
) -> None:
    _, diags = parse_module(f"{line}\n", "t.flow")
    assert [(d.message, d.span.column) for d in diags] == [
        ("expected `:`, found `,`", 1 + line.index(", b"))
    ]
