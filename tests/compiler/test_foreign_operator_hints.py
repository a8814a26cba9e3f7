"""`s matches "x"`, `s like "x"`, `s contains "x"`: an operator of another language reads as a
name after a value on its line — a `syntax-error` (an expression statement starts a line) — and
alone as a name to the checker; both say what `.flow` has instead."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source


@pytest.mark.parametrize("word", ["matches", "like", "contains"])
def test_a_foreign_text_operator_hints_at_matches_in_pattern_and_grep(word):
    src = f'input {{ s: text }}\nstage a -> bool {{\n  input.s {word} "x"\n}}\n'
    (named,) = check_source(src, "a.flow").diagnostics
    assert named.code == "syntax-error"
    assert named.message == (
        f"expected the end of the statement (a line break), found the name `{word}`"
    )
    assert (named.span.line, named.span.column, named.span.end_column) == (3, 11, 11 + len(word))
    assert f"no `{word}` operator" in named.hint
    assert "`needle in text`" in named.hint and "`grep`" in named.hint


def test_a_foreign_text_operator_alone_is_an_unknown_name_with_the_same_hint():
    src = "input { s: text }\nstage a -> bool {\n  let _x = matches\n  true\n}\n"
    (named,) = check_source(src, "a.flow").diagnostics
    assert named.code == "unknown-name" and named.message == "unknown name `matches`"
    assert "no `matches` operator" in named.hint


def test_a_declared_name_close_to_matches_keeps_its_did_you_mean():
    src = "input { s: text }\nstage a -> text {\n  let matched = input.s\n  return matches\n}\n"
    (diag,) = check_source(src, "a.flow").diagnostics
    assert diag.code == "unknown-name" and diag.hint == "did you mean `matched`?"


@pytest.mark.parametrize("word", ["matches", "like"])
def test_a_regex_operator_points_to_the_matches_function_first(word):
    src = f'input {{ s: text }}\nstage a -> bool {{\n  return input.s {word} "a+"\n}}\n'
    (named,) = check_source(src, "a.flow").diagnostics
    assert named.hint is not None and named.hint.startswith(
        f"`.flow` has no `{word}` operator: call the library function `matches(text, pattern)`"
    )


def test_contains_points_to_in_first_then_matches():
    src = 'input { s: text }\nstage a -> bool {\n  return input.s contains "a"\n}\n'
    (named,) = check_source(src, "a.flow").diagnostics
    assert named.hint is not None and named.hint.startswith(
        "`.flow` has no `contains` operator: `needle in text` tests for a substring"
    )
    assert "`matches(text, pattern)`" in named.hint


def test_matches_alone_points_to_the_matches_function():
    src = "input { s: text }\nstage a -> bool {\n  return matches\n}\n"
    (named,) = check_source(src, "a.flow").diagnostics
    assert named.code == "unknown-name"
    assert named.hint is not None and "call the library function `matches(text, pattern)`" in (
        named.hint
    )


def test_perl_match_operator_points_to_the_matches_function():
    src = 'input { s: text }\nstage a -> bool {\n  return input.s =~ "a+"\n}\n'
    (named,) = check_source(src, "a.flow").diagnostics
    assert named.code == "syntax-error"
    assert named.hint is not None and named.hint.startswith(
        "`.flow` has no `=~` operator: call the library function `matches(text, pattern)`"
    )
