"""`flowc fmt` keeps a unary operator against its operand (docs/reference/cli.md "flowc fmt"):
``-(x)``, ``-[x][0]``, so that ``match -(x) { … }`` is not re-read as a subtraction from a name
``match``; ``- -x`` keeps its blank (never ``--x``); ``not`` is a word, ``not (x)``."""

from __future__ import annotations

import pytest

from agentflow.compiler.fmt import format_source

HEAD = "input { n: int, b: bool }\nstage u -> int {\n"


def _stage(*lines: str) -> str:
    return HEAD + "".join(f"  {line}\n" for line in lines) + "}\n"


def test_fmt_formats_a_match_on_a_negated_parenthesis():
    src = _stage("return match -(input.n) { -1 => 1, _ => 0 }")
    assert format_source(src, "neg.flow") == src


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("let k = -(input.n)", "let k = -(input.n)"),
        ("let k = - (input.n)", "let k = -(input.n)"),
        ("let k = -[input.n][0]", "let k = -[input.n][0]"),
        ("let k = - [input.n][0]", "let k = -[input.n][0]"),
        ("let k = - -input.n", "let k = - -input.n"),
        ("let k = -(-input.n)", "let k = -(-input.n)"),
        ("let k = 1 - -(input.n)", "let k = 1 - -(input.n)"),
        ("let q = not(input.b)", "let q = not (input.b)"),
        ("let q = not input.b", "let q = not input.b"),
    ],
)
def test_a_unary_operator_stays_against_its_operand(written: str, canonical: str):
    once = format_source(_stage(written, "return 0"), "u.flow")
    assert once == _stage(canonical, "return 0")
    assert format_source(once, "u.flow") == once
