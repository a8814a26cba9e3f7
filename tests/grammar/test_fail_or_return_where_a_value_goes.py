"""`fail` or `return` written where a value goes — an arm of `if … then … else` or of a
`match`, a `let`'s value — is a syntax error whose hint says it is a statement and what to
write instead (docs/reference/expressions.md "if … then … else"): users of `loop … else fail`
and `ask … else fail` expect `if ok then 1 else fail "no"` to work too. A `return` that starts
the next line after a missing value keeps the usual hint (the value is what is missing)."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

WRITTEN = {
    "an else arm that fails": ('if input.ok then 1 else fail "no"', "fail"),
    "a match arm that fails": ('match input.n { 1 => fail "one", _ => 2 }', "fail"),
    "a then arm that returns": ("if input.ok then return 1 else 2", "return"),
}


@pytest.mark.parametrize("value, word", WRITTEN.values(), ids=WRITTEN.keys())
def test_a_statement_where_a_value_goes_says_it_is_a_statement(value, word):
    src = f"input {{ ok: bool, n: int }}\nstage s -> int {{\n  {value}\n}}\n"
    (d,) = check_source(src, "s.flow").diagnostics
    assert (d.code, d.message) == ("syntax-error", f"expected an expression, found `{word}`")
    assert d.hint.startswith(f"`{word}` is a statement, not a value")
    assert (d.span.line, d.span.column) == (3, 3 + value.index(word))


def test_fail_hint_names_the_forms_that_fail_before_the_value():
    src = 'input { ok: bool }\nstage s -> int {\n  let x = if input.ok then 1 else fail "no"\n  return x\n}\n'
    (d,) = check_source(src, "s.flow").diagnostics
    assert 'require c else fail "…"' in d.hint and 'if c { fail "…" }' in d.hint


def test_a_return_on_the_line_after_a_missing_value_keeps_the_usual_hint():
    src = "stage s -> int {\n  let x =\n  return 1\n}\n"
    (d,) = check_source(src, "s.flow").diagnostics
    assert d.hint == "write an expression here (found `return`)"
