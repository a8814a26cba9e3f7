"""An expression statement starts a line (docs/reference/statements.md "Expression statements"):
after another statement on its line it is a `syntax-error` at its first token, with a hint for a
clause written in the wrong place; both parse paths report it alike."""

from __future__ import annotations

import pytest

from agentflow.grammar.descent import parse_clean
from agentflow.grammar.lalr import DRIVER
from agentflow.grammar.parser import parse_module, parse_module_lalr

TOOL = "extern tool user__slow_fetch(n: int) -> int\n"
HEAD = 'use agent "helper" as helper\ninput { n: int, xs: int[] }\n'


def one_error(body: str, extra: str = ""):
    """The one diagnostic of a stage with ``body``; both parse paths give it, the fast path
    declines the file."""
    text = f"{TOOL}{HEAD}stage s -> json {{\n{body}\n}}\n{extra}"
    _, diags = parse_module(text, "t.flow")
    _, lalr = parse_module_lalr(text, "t.flow")
    assert diags == lalr
    assert parse_clean(text, "t.flow", DRIVER) is None
    (d,) = diags
    assert d.code == "syntax-error"
    return d


def test_two_values_on_one_line_say_where_the_statement_should_end():
    d = one_error("  let x = 1 2\n  return x")
    assert d.message == "expected the end of the statement (a line break), found the number `2`"
    assert (d.span.line, d.span.column, d.span.end_column) == (5, 13, 14)
    assert "start a new line" in d.hint


def test_a_timeout_after_a_tool_call_is_its_clause_not_a_second_statement():
    text = (
        f"{TOOL}{HEAD}stage s -> json {{\n"
        "  let r = user__slow_fetch(n: input.n) timeout 1s\n  return r\n}\n"
    )
    _, diags = parse_module(text, "t.flow")
    _, lalr = parse_module_lalr(text, "t.flow")
    assert diags == lalr == []


@pytest.mark.parametrize(
    ("body", "hint"),
    [
        (
            "  let r = parallel map input.xs as x { x + 1 } tolerate 1\n  return r",
            "`tolerate` goes before the body: `parallel map xs as x tolerate 1 { … }`",
        ),
        (
            "  let r = parallel map input.xs as x {\n    x + 1\n  } limit 2\n  return r",
            "`limit` goes before the body: `parallel map xs as x limit 4 { … }`",
        ),
        (
            '  let r = agent(helper) { task "t" expect int } model "m"\n  return r',
            "`model` is a clause of the agent block: write it inside its braces, "
            "`agent(…) { … model … }`",
        ),
    ],
)
def test_a_clause_after_its_construct_says_where_it_goes(body, hint):
    assert one_error(body).hint == hint


def test_statements_that_start_with_a_keyword_may_share_a_line():
    text = "stage s -> int { let a = 1 let b = a return b }\n"
    assert parse_module(text, "t.flow")[1] == []
    assert parse_clean(text, "t.flow", DRIVER) is not None


def test_a_misspelt_keyword_keeps_the_checkers_did_you_mean():
    # `retrun 1`: the name's `unknown-name` ("did you mean `return`?") says more
    _, diags = parse_module("stage s -> int {\n  retrun 1\n}\n", "t.flow")
    assert diags == []


def test_an_error_later_in_the_item_keeps_its_own_hint():
    d = one_error("  for x in input.xs {\n    let y = x\n  }\n  return 1")
    assert "map" in d.hint and "line" not in d.message


def test_the_first_offending_statement_of_a_file_is_reported_and_other_items_still_parse():
    extra = "stage t -> int {\n  let y = 3 4\n  return y\n}\nstage u -> int {\n  return 1\n}\n"
    text = f"{TOOL}{HEAD}stage s -> json {{\n  let x = 1 2\n  return x\n}}\n{extra}"
    module, diags = parse_module(text, "t.flow")
    assert diags == parse_module_lalr(text, "t.flow")[1]
    assert [(d.span.line, d.span.column) for d in diags] == [(5, 13), (9, 13)]
    assert [type(i).__name__ for i in module.items][-1] == "StageDecl"


@pytest.mark.parametrize(
    ("expr", "found", "hint"),
    [
        ("true && false", "unexpected character `&`", "`a and b` for `a && b`"),
        ("true || false", "found `|`", "`a or b` for `a || b`"),
        ("!true", "unexpected character `!`", "`not a` for `!a`"),
        ("input.n > 1 ? 1 : 2", "found `?`", "write `if c then a else b`"),
        ("1 if input.n > 1 else 2", "found `else`", "`if c then x else y`"),
        ("[1 if input.n > 1 else 2]", "found `if`", "`if c then x else y`"),
    ],
)
def test_an_operator_of_another_language_hints_at_the_flow_spelling(expr, found, hint):
    d = one_error(f"  let x = {expr}\n  return x")
    assert found in d.message and hint in d.hint
