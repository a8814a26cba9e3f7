"""A library function read as a field — `input.s.lower`, `xs.reverse`, another language's
`s.toUpperCase` — is an `unknown-field` whose hint is the call to write (`lower(input.s)`),
with that edit as its quick fix when the call takes nothing else; a function that takes more
(`split`) gets the call with `…` and no edit (docs/reference/functions.md)."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

HEAD = "input { s: text, xs: int[] }\n"

READ = {
    "lower": ("stage a -> text { input.s.lower }\n", "lower(input.s)"),
    "reverse": ("stage a -> int[] { input.xs.reverse }\n", "reverse(input.xs)"),
    "another language's name": ("stage a -> text { input.s.toUpperCase }\n", "upper(input.s)"),
}


@pytest.mark.parametrize("stage, call", READ.values(), ids=READ.keys())
def test_the_hint_is_the_call_and_the_fix_writes_it(stage, call):
    src = HEAD + stage
    (d,) = check_source(src, "s.flow").diagnostics
    assert d.code == "unknown-field"
    assert d.hint.endswith(f"call the function: `{call}`")
    assert d.fix is not None
    fixed = src[: d.fix.span.start] + d.fix.text + src[d.fix.span.end :]
    assert check_source(fixed, "s.flow").diagnostics == []


def test_a_function_that_takes_more_gets_the_call_without_an_edit():
    (d,) = check_source(HEAD + "stage a -> text[] { input.s.split }\n", "s.flow").diagnostics
    assert d.hint.endswith("call the function: `split(input.s, …)`")
    assert d.fix is None


def test_a_misspelt_count_still_gets_count():
    (d,) = check_source(HEAD + "stage a -> int { input.xs.cont }\n", "s.flow").diagnostics
    assert d.hint == "did you mean `count`?"


def test_an_optional_receiver_gets_the_hint_without_an_edit():
    src = "input { name: text? }\nstage a -> text { input.name.trim }\n"
    (d,) = check_source(src, "s.flow").diagnostics
    assert d.hint.endswith("call the function: `trim(input.name)`") and d.fix is None
