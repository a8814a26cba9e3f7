"""`flowc fmt` changes only whitespace, and never pulls a value apart from its index, call or
member (docs/reference/cli.md "flowc fmt"): a name spelled like a keyword (``output`` in an
eval, a ``let step``) is a value like any other, so ``output[*]`` stays ``output[*]``."""

from __future__ import annotations

import re

import pytest
from support.markdown import all_fences
from support.paths import REPO, TESTS

from agentflow.compiler.fmt import FormatError, format_source, tokenize
from agentflow.core.vocabulary import RESERVED_WORDS


def _sources() -> list[tuple[str, str]]:
    out = [(str(f), f.text) for f in all_fences("flow")]
    for base in (REPO / "examples", TESTS, REPO / "src" / "agentflow" / "stdlib"):
        out += [(str(p), p.read_text(encoding="utf-8")) for p in sorted(base.rglob("*.flow"))]
    return out


SOURCES = _sources()
_WS = re.compile(r"\s+")


def _squeeze(text: str) -> str:
    """``text`` without whitespace and without trailing commas."""
    return re.sub(r",([\]})])", r"\1", _WS.sub("", text))


def _glued(text: str) -> list[tuple[str, str]]:
    """The (word, opener) pairs written with nothing between them, where the word is not a
    reserved keyword: ``output[``, ``step(``, ``input.``."""
    toks = [t for t in tokenize(text) if t.kind != "nl"]
    return [
        (a.text, b.text)
        for a, b in zip(toks, toks[1:], strict=False)
        if a.kind == "word"
        and a.text not in RESERVED_WORDS
        and a.text != "sleep"
        and b.text in ("[", "(", ".")
        and a.end == b.start
    ]


def test_fmt_changes_only_whitespace_and_keeps_every_value_glued_to_its_index_call_or_member():
    """Over every example, documentation block and test file that parses."""
    assert len(SOURCES) > 200
    checked = 0
    for name, text in SOURCES:
        try:
            once = format_source(text, name)
        except FormatError:
            continue  # a file with syntax errors is not formatted
        checked += 1
        assert format_source(once, name) == once, name
        # only whitespace changes (a trailing comma closed on its own line aside)
        assert _squeeze(once) == _squeeze(text), name
        assert _glued(once) == _glued(text), name
    assert checked > 200


@pytest.mark.parametrize(
    "line",
    [
        "score ok = len(output[*]) >= 0",
        "score first = output[0] >= 0 and output.n > 0",
        "score cats = output[*].category == expected.cats",
        "score n = len(output) - 1 >= 0",
    ],
)
def test_output_in_an_eval_keeps_its_index_and_member(line: str):
    src = (
        "input { xs: { a: int }[] }\n"
        "output { n: int, category: text }[]\n"
        "stage s -> { n: int, category: text }[] {\n  return []\n}\n"
        f'eval "e" {{\n  dataset "d.jsonl"\n  {line}\n}}\n'
    )
    assert format_source(src, "e.flow") == src


def test_a_let_named_like_a_keyword_keeps_its_index_call_and_minus():
    src = (
        "input { xs: int[] }\n"
        "stage s -> int {\n"
        "  let step = input.xs\n"
        "  let task = { a: [1] }\n"
        "  let check = [step[0], task.a[0], input.xs[0]]\n"
        "  return check[0] + step[1] - task.a[0] - step[0]\n"
        "}\n"
    )
    assert format_source(src, "s.flow") == src


@pytest.mark.parametrize(
    "word", ["score", "dataset", "threshold", "stub", "tools", "task", "limit", "until", "then"]
)
def test_a_user_function_named_like_a_contextual_word_keeps_its_parenthesis(word: str):
    src = (
        f"extern tool {word}_tool(a: int) -> int\n"
        f"fn {word}(n: int) -> int = n + 1\n"
        "stage u -> int {\n"
        f"  return {word}(1) + {word}({word}(2))\n"
        "}\n"
    )
    assert format_source(src, "f.flow") == src


def test_a_tool_named_like_a_contextual_word_keeps_its_parenthesis():
    src = "extern tool score(a: int) -> int\nstage u -> int {\n  return score(a: 1)\n}\n"
    assert format_source(src, "t.flow") == src
