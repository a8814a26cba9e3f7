"""A word the grammar reads as its keyword where a name would be used is refused as a `let`, a
loop variable, a parameter or a function's name, with one code, `reserved-name`, and the hint
to name it otherwise; fields and keys take every word (docs/reference/lexical.md "Keywords",
docs/decisions.md "Language edges (langfix14)")."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source
from agentflow.compiler.checker_shared import GRAMMAR_WORDS
from agentflow.grammar.parser import parse_module


def _found(src: str) -> list[tuple[str, str, int, int, str | None]]:
    return [
        (d.code, d.message, d.span.line, d.span.column, d.hint)
        for d in check_source(src, "f.flow").diagnostics
    ]


def _hint(word: str) -> str:
    return (
        f"name it otherwise (`my_{word}`); a word of the language is still fine as a field or key "
        f"(`x.{word}`, `{{ {word}: 1 }}`)"
    )


@pytest.mark.parametrize("word", sorted(GRAMMAR_WORDS))
def test_a_let_named_with_a_word_that_starts_an_expression_is_a_reserved_name(word):
    assert _found(f"stage s -> int {{\n  let {word} = 1\n  return 1\n}}\n") == [
        (
            "reserved-name",
            f"`{word}` is a word of the language: where a value is read, `{word}` starts its "
            "construct, so a variable of that name could never be read",
            2,
            7,
            _hint(word),
        )
    ]


def test_let_parallel_is_refused_once_not_also_unused():
    [(code, *_)] = _found("stage s -> int {\n  let parallel = 1\n  return 1\n}\n")
    assert code == "reserved-name"


def test_a_loop_variable_named_with_such_a_word_is_a_reserved_name():
    src = "input { xs: int[] }\nstage s -> int[] { return map input.xs as loop { return 1 } }\n"
    [(code, message, line, column, _hint_)] = _found(src)
    assert (code, line, column) == ("reserved-name", 2, 43)
    assert "a variable of that name could never be read" in message


@pytest.mark.parametrize("word", ["map", "try", "if", "not"])
def test_a_parameter_named_with_a_keyword_or_a_reserved_word_is_a_reserved_name(word):
    [(code, message, line, column, hint)] = _found(
        f"fn f({word}: int) -> int = 1\nstage s -> int {{ return f(1) }}\n"
    )
    assert (code, line, column, hint) == ("reserved-name", 1, 6, _hint(word))
    assert message.startswith(f"`{word}` is ")


def test_a_function_named_with_such_a_word_is_a_reserved_name():
    [(code, message, *_)] = _found("fn parallel(x: int) -> int = x\nstage s -> int { return 1 }\n")
    assert code == "reserved-name"
    assert message == (
        "`parallel` is a word of the language: `parallel(…)` reads as its construct, so a "
        "function of that name could never be called"
    )


@pytest.mark.parametrize(
    "text",
    [
        "stage s -> int {\n  let if = 1\n  return 1\n}\n",
        "fn if(x: int) -> int = x\n",
        "stage s -> int[] {\n  let xs = [1]\n  return map xs as if { return 1 }\n}\n",
    ],
)
def test_a_reserved_word_where_a_name_is_bound_does_not_parse_and_says_why(text):
    _, diags = parse_module(text, "f.flow")
    assert [(d.code, d.message, d.hint) for d in diags] == [
        ("syntax-error", "`if` is a reserved word, never a name", _hint("if"))
    ]


def test_contextual_keywords_that_are_read_back_stay_names_and_fields_take_every_word():
    src = (
        "input { parallel: int, map: int }\n"
        "stage s -> json {\n  let model = 1\n  let match = 2\n  let task = model + match\n"
        "  return { parallel: input.parallel, map: input.map, if: task }\n}\n"
    )
    assert _found(src) == []


def test_an_agent_alias_named_with_such_a_word_is_a_reserved_name_not_unused():
    [(code, message, line, column, hint)] = _found(
        'use agent "w" as verify\nstage s -> int { return 1 }\n'
    )
    assert (code, line, column, hint) == ("reserved-name", 1, 18, _hint("verify"))
    assert "an agent alias of that name could never be read" in message
