"""A comma after a comma (or before the first item) in any comma-separated list is a syntax
error at that comma, never dropped: lists, calls, objects, `parallel` branches, `match` arms,
parameters, imports, `catch on [...]` codes, `tools [...]` (docs/reference/lexical.md
"Line breaks"). The fast path declines such a file and the LALR path reports it, so both parsers
give one diagnostic; a single trailing comma still parses the same on both."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_descent import assert_same_as_lalr  # noqa: E402

from agentflow.grammar.descent import parse_clean  # noqa: E402
from agentflow.grammar.lalr import DRIVER  # noqa: E402
from agentflow.grammar.parser import parse_module  # noqa: E402

_HEAD = (
    "input { x: int }\nextern tool t(x: int) -> int\n"
    'fn g(a: int, b: int) -> int = a + b\nuse agent "w" as w\n'
)


def _in_stage(let: str) -> str:
    return f"{_HEAD}stage s {{\n  {let}\n  return a\n}}\n"


#: (the statement, the column of the offending comma, what one item is, what several are)
STAGE_CASES = [
    ("let a = [1,,2]", 14, "an item", "items of a list"),
    ("let a = [,1]", 12, "an item", "items of a list"),
    ("let a = [,]", 12, "an item", "items of a list"),
    ("let a = g(1,,2)", 15, "an argument", "arguments"),
    ("let a = t(x: 1,, )", 18, "an argument", "arguments"),
    ("let a = {a: 1,, b: 2}", 17, "an entry", "entries"),
    ("let a = parallel { a: t(x: 1),, b: t(x: 2) }", 33, "a branch", "branches"),
    ("let a = parallel { ,a: t(x: 1) }", 22, "a branch", "branches"),
    ("let a = parallel limit 2 { a: t(x: 1),, b: t(x: 2) }", 41, "a branch", "branches"),
    ("let a = parallel { a: t(x: 1), b: {c: 1,, d: 2} }", 43, "an entry", "entries"),
    ('let a = match input.x { 1 => "a",, _ => "b" }', 36, "an arm", "arms of a `match`"),
    (
        "let a = t(x: 1) catch on [tool_error,, timeout] { 0 }",
        40,
        "an error code",
        "error codes",
    ),
    ('let a = agent(w) { task "x" tools [t,, t] }', 40, "a tool", "tools"),
    ('let a = agent(w) { task "x" tools [,t] }', 38, "a tool", "tools"),
]


@pytest.mark.parametrize(("let", "column", "what", "whats"), STAGE_CASES)
def test_a_repeated_comma_is_a_syntax_error_at_that_comma_with_its_fix(
    let: str, column: int, what: str, whats: str
) -> None:
    text = _in_stage(let)
    _, diags = parse_module(text, "c.flow")
    assert [(d.code, d.message, d.span.line, d.span.column, d.span.end_column) for d in diags] == [
        ("syntax-error", f"expected {what} before `,`", 6, column, column + 1)
    ]
    assert diags[0].hint == f"one comma separates two {whats}: remove this one"
    assert parse_clean(text, "c.flow", DRIVER) is None  # the fast path leaves it to LALR
    assert_same_as_lalr(text, "c.flow")


@pytest.mark.parametrize(
    ("text", "column", "what"),
    [
        ("fn f(a: int,, b: int) -> int = a\n", 13, "a parameter"),
        ('import { A,, B } from "./x.flow"\n', 12, "a name"),
    ],
)
def test_a_repeated_comma_in_a_declaration_is_a_syntax_error(
    text: str, column: int, what: str
) -> None:
    _, diags = parse_module(text, "c.flow")
    assert [(d.message, d.span.line, d.span.column) for d in diags] == [
        (f"expected {what} before `,`", 1, column)
    ]
    assert_same_as_lalr(text, "c.flow")


def test_the_list_in_the_report_is_no_longer_read_as_two_items() -> None:
    # `[1,,2]` used to be the list [1, 2], `g(1,,2)` the call g(1, 2): both are errors now
    for let in ("let a = [1,,2]", "let a = g(1,,2)"):
        _, diags = parse_module(_in_stage(let), "c.flow")
        assert [d.code for d in diags] == ["syntax-error"]


@pytest.mark.parametrize(
    "let",
    [
        "let a = [1, 2,]",
        "let a = g(1, 2,)",
        "let a = {a: 1, b: 2,}",
        "let a = parallel { a: t(x: 1), b: t(x: 2), }",
        'let a = match input.x { 1 => "a", _ => "b", }',
        "let a = t(x: 1) catch on [tool_error, timeout,] { 0 }",
        'let a = agent(w) { task "x" tools [t,] }',
    ],
)
def test_one_trailing_comma_still_parses_the_same_on_both_paths(let: str) -> None:
    text = _in_stage(let)
    _, diags = parse_module(text, "c.flow")
    assert diags == []
    assert_same_as_lalr(text, "c.flow", taken=True)
