"""The diagnostics of user functions (docs/reference/programs.md "User functions"): refused
names, argument and body mismatches told in the function's terms, every one with a hint."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source
from agentflow.compiler.check_user_functions import GRAMMAR_WORDS


def _found(src: str) -> list[tuple[str, str, str | None]]:
    return [(d.code, d.message, d.hint) for d in check_source(src, "f.flow").diagnostics]


@pytest.mark.parametrize("word", sorted(GRAMMAR_WORDS))
def test_a_function_may_not_take_a_word_the_grammar_reads_before_a_paren(word):
    assert {"ask", "map", "agent", "verify", "loop", "parallel", "try"} <= GRAMMAR_WORDS
    [(code, message, hint)] = _found(
        f"fn {word}(x: int) -> int = x\nstage s -> int {{ return 1 }}\n"
    )
    assert code == "reserved-name"
    assert message.startswith(f"`{word}` is a word of the language: `{word}(…)` reads as")
    assert hint is not None and f"`my_{word}`" in hint


def test_a_function_without_parameters_is_refused_once_not_also_at_its_call():
    found = _found("fn f() -> int = 1\nstage s -> int { return f() }\n")
    assert [c for c, _, _ in found] == ["unsupported-construct"]


def test_an_argument_of_the_wrong_type_names_the_parameter_with_the_signature():
    src = 'fn h(g: int) -> int = g\nstage s -> int { return h("a") }\n'
    [d] = check_source(src, "f.flow").diagnostics
    assert d.code == "type-mismatch"
    assert d.message == "argument `g` of `h`: expected `int`, found `text`"
    assert [n.message for n in d.notes] == ["`h(g: int) -> int`"]
    assert d.hint == "`parse_int(s)` or `parse_number(s)` reads a number from text"


def test_an_argument_shows_the_alias_its_parameter_is_written_with():
    src = 'type Sev = "low" | "high"\nfn r(s: Sev) -> int = 1\nstage s -> int { return r(true) }\n'
    [d] = [d for d in check_source(src, "f.flow").diagnostics if d.code == "type-mismatch"]
    assert d.message == "argument `s` of `r`: expected `Sev`, found `bool`"
    assert d.hint == "pass a `Sev` as `s`"


def test_a_body_of_the_wrong_type_says_so_with_a_hint():
    [d] = check_source(
        "fn g(x: int) -> bool = x + 1\nstage s -> int { return 1 }\n", "f.flow"
    ).diagnostics
    assert d.message == "the body of `g`: expected `bool`, found `int`"
    assert d.hint == "make the body's type `bool`, or declare the result it has (`-> int`)"


def test_duplicates_unknown_parameter_types_and_type_parameters_have_hints():
    src = (
        "fn d(x: int, x: int) -> int = x\nfn d(y: int) -> int = y\n"
        "fn u(x: Foo) -> int = 1\nstage s -> int { return 1 }\n"
    )
    found = [(c, h) for c, _, h in _found(src) if c != "unused-variable"]
    assert [c for c, _ in found] == ["duplicate-definition", "duplicate-definition", "unknown-type"]
    assert all(h for _, h in found)
    [(code, _, hint)] = _found("fn gen<T>(x: T) -> T = x\nstage s -> int { return 1 }\n")
    assert code == "syntax-error" and (hint or "").startswith("functions have no type parameters")
