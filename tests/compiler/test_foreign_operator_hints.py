"""`s matches "x"`, `s like "x"`, `s contains "x"`: an operator of another language reads as a
name to the checker, whose `unknown-name` says what `.flow` has instead."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source


@pytest.mark.parametrize("word", ["matches", "like", "contains"])
def test_a_foreign_text_operator_hints_at_in_pattern_and_grep(word):
    src = f'input {{ s: text }}\nstage a -> bool {{\n  input.s {word} "x"\n}}\n'
    diags = check_source(src, "a.flow").diagnostics
    (named,) = [d for d in diags if d.code == "unknown-name"]
    assert named.message == f"unknown name `{word}`"
    assert (named.span.line, named.span.column) == (3, 11)
    assert f"no `{word}` operator" in named.hint
    assert "`needle in text`" in named.hint and "`grep`" in named.hint


def test_a_declared_name_close_to_matches_keeps_its_did_you_mean():
    src = "input { s: text }\nstage a -> text {\n  let matched = input.s\n  return matches\n}\n"
    (diag,) = check_source(src, "a.flow").diagnostics
    assert diag.code == "unknown-name" and diag.hint == "did you mean `matched`?"
