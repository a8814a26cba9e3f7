"""Words and operators of other languages and frameworks get a hint naming `.flow`'s own
(grammar/foreign_words.py): an operator left without its right operand is reported at the
operator, `=~` points to the library's `matches(text, pattern)`, an agent clause named as
another framework names it (`prompt`, `returns`) to the clause, and `answer ok = true` in a test
to `stub ask ok returns true`. The fast path leaves each of these files to the LALR path, so
both parsers give the one diagnostic."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_descent import assert_same_as_lalr  # noqa: E402

from agentflow.core.diagnostics import Diagnostic  # noqa: E402
from agentflow.grammar.parser import parse_module  # noqa: E402

_HEAD = 'input { s: text, n: int }\nuse agent "w" as w\n'


def _one(text: str) -> Diagnostic:
    _, diags = parse_module(text, "t.flow")
    assert len(diags) == 1, diags
    assert_same_as_lalr(text, "t.flow", taken=False)
    return diags[0]


def _stage(body: str) -> Diagnostic:
    return _one(f"{_HEAD}stage s -> json {{\n{body}\n}}\n")


@pytest.mark.parametrize("op", ["+", "*", "and", "??", "=="])
def test_an_operator_ending_a_line_before_the_closing_brace_is_reported_at_the_operator(op):
    d = _stage(f"  return input.n {op}")
    assert d.message == f"expected an expression after `{op}`, found `}}`"
    assert (d.span.line, d.span.column) == (4, 18)
    assert d.hint == (
        f"write the operand after `{op}` (`a {op} b`; it may go on the next line), "
        f"or drop the `{op}`"
    )
    assert [n.message for n in d.notes] == ["the parser stopped here"]
    assert d.notes[0].span.line == 5


def test_an_operator_before_a_statement_on_the_next_line_is_reported_at_the_operator():
    d = _stage("  let x = input.n *\n  return x")
    assert d.message == "expected an expression after `*`, found `return`"
    assert (d.span.line, d.span.column) == (4, 19)


def test_a_missing_operand_on_the_same_line_is_reported_where_the_parse_stopped():
    d = _stage("  return (input.n > )")
    assert d.message == "expected an expression after `>`, found `)`"
    assert (d.span.line, d.span.column) == (4, 21)
    assert not d.notes and d.hint is not None and "`a > b`" in d.hint


def test_an_operand_on_the_next_line_is_still_the_operand():
    _, diags = parse_module(f"{_HEAD}stage s -> int {{\n  return input.n +\n    1\n}}\n", "t.flow")
    assert diags == []


def test_perl_regex_operator_points_to_the_matches_function():
    d = _stage('  return input.s =~ "a+"')
    assert d.span.column == 18
    assert d.hint is not None and d.hint.startswith(
        "`.flow` has no `=~` operator: call the library function `matches(text, pattern)`"
    )


@pytest.mark.parametrize(
    ("word", "clause", "example"),
    [
        ("prompt", "task", 'task "…"'),
        ("instructions", "task", 'task "…"'),
        ("returns", "expect", "expect T"),
        ("response_format", "expect", "expect T"),
        ("system_prompt", "system", 'system "…"'),
        ("max_turns", "max_iterations", "max_iterations 6"),
    ],
)
def test_an_agent_clause_named_as_other_frameworks_name_it_hints_at_the_clause(
    word, clause, example
):
    d = _stage(f'  return agent(w) {{\n    {word} "go"\n  }}')
    assert d.message.endswith(f"`{word}`") and (d.span.line, d.span.column) == (5, 5)
    assert d.hint is not None and d.hint.startswith(
        f"did you mean `{clause}`? an agent's `{word}` is written `{example}`"
    )


def test_an_unknown_word_in_an_agent_block_lists_the_clauses():
    d = _stage('  return agent(w) {\n    flurb "go"\n  }')
    assert d.hint is not None and d.hint.startswith(
        'an agent block holds its clauses, one a line: `task "…"`'
    )


def test_a_misspelt_clause_keeps_its_did_you_mean():
    d = _stage('  return agent(w) {\n    tsak "go"\n  }')
    assert d.hint == "did you mean `task`?"


_TEST = (
    f'{_HEAD}stage s -> bool {{\n  return ask "ok?" expect bool\n}}\n'
    'test "t" {{\n  input {{ s: "a", n: 1 }}\n  LINE\n  expect output == true\n}}\n'
)


@pytest.mark.parametrize(
    ("line", "stub"),
    [
        ("answer ok = true", "stub ask ok returns true"),
        ("answer s true", "stub ask s returns true"),
        ('reply s: "yes"', 'stub ask s returns "yes"'),
    ],
)
def test_answering_an_ask_in_a_test_hints_at_stub_ask(line, stub):
    d = _one(_TEST.replace("{{", "{").replace("}}", "}").replace("LINE", line))
    assert d.code == "syntax-error"
    assert d.hint is not None and d.hint.startswith(
        f"a test answers a question with a stub: `{stub}`"
    )


def test_another_word_in_a_test_lists_what_a_test_holds():
    d = _one(_TEST.replace("{{", "{").replace("}}", "}").replace("LINE", 'mock agent w "x"'))
    assert d.hint is not None and d.hint.startswith("a test holds `input { … }`, stubs")


def test_output_on_a_line_of_an_agent_block_hints_at_expect():
    _, diags = parse_module(
        f"{_HEAD}stage s -> json {{\n  return agent(w) {{\n    output text\n  }}\n}}\n", "t.flow"
    )
    assert diags[0].message.startswith("expected `}` to close the agent block opened on line 4")
    assert diags[0].hint == "did you mean `expect`? an agent's answer type is its `expect T` clause"


@pytest.mark.parametrize("written", ["input.n === 1", "input.n += 1", "input.n ** 2"])
def test_two_operators_in_a_row_on_one_line_are_not_told_as_a_missing_operand(written):
    d = _stage(f"  return {written}")
    assert not d.message.startswith("expected an expression after")
