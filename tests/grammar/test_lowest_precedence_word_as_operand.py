"""``filter``, ``loop`` and ``ask`` take the lowest precedence (docs/reference/control.md): as an
operand without parentheses they are told at the word — "needs parentheses" — rather than as
the name the parser read them as, or as a second statement on the line."""

from __future__ import annotations

import pytest

from agentflow.grammar.parser import parse_module

CASES = [
    ("  return map filter input.xs as g where g > 1 as h { h * 2 }", "filter", "int[]"),
    ("  let n = 1 + loop up to 3 as r, s = 0 { s + r }\n  return [n]", "loop", "int[]"),
    ('  let n = 1 + ask "x" expect int default 1\n  return [n]', "ask", "int[]"),
    ('  require ask "go" expect bool default false else fail "no"\n  return []', "ask", "int[]"),
    ('  return true and ask "x" expect bool default true', "ask", "bool"),
]
SHAPE = {"filter": "filter … where …", "loop": "loop … { … }", "ask": "ask … expect …"}


@pytest.mark.parametrize(("body", "word", "result"), CASES)
def test_an_unbracketed_lowest_precedence_word_is_told_at_the_word(
    body: str, word: str, result: str
):
    src = f"input {{ xs: int[] }}\nstage u -> {result} {{\n{body}\n}}\n"
    _, diags = parse_module(src, "u.flow")
    errors = [d for d in diags if d.severity == "error"]
    assert len(errors) == 1, [d.message for d in errors]
    d = errors[0]
    shape = SHAPE[word]
    assert d.message == f"`{shape}` as an operand needs parentheses: `({shape})`"
    assert src[d.span.start : d.span.end] == word and d.span.line == 3
    assert d.hint is not None and "lowest precedence" in d.hint


@pytest.mark.parametrize(
    "body",
    [
        "  return map (filter input.xs as g where g > 1) as h { h * 2 }",
        "  let n = 1 + (loop up to 3 as r, s = 0 { s + r })\n  return [n]",
        '  require (ask "go" expect bool default false) else fail "no"\n  return []',
        "  let kept = filter input.xs as g where g > 1\n  return kept",
        "  let filtered = input.xs\n  return match 1 { 1 => filter filtered as g where g > 1, _ => [] }",
    ],
)
def test_the_bracketed_and_whole_expression_forms_parse(body: str):
    src = f"input {{ xs: int[] }}\nstage u -> int[] {{\n{body}\n}}\n"
    _, diags = parse_module(src, "u.flow")
    assert [d.message for d in diags if d.severity == "error"] == []
