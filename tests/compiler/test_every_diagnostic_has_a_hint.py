"""Every diagnostic of the parser and the checker says a fix: a hint of its own where the site
knows one (a number where text is wanted, `sort_by` over texts, `**`, `except`, …), else its
code's usual fix (``FALLBACK_HINTS``), never ``"hint": null``."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support.hostile import mutate
from support.paths import REPO, SPEC_DIAGNOSTICS, SPEC_EXAMPLES, TESTS

from agentflow.compiler.api import check_source
from agentflow.core import diagnostics as D

HEAD = "flow t\ninput { n: int, ts: text[] }\n"


def _only(body: str) -> D.Diagnostic:
    errors = [d for d in check_source(HEAD + body, "t.flow").diagnostics if d.is_error]
    assert len(errors) == 1, errors
    return errors[0]


@pytest.mark.parametrize(
    ("body", "code", "hint"),
    [
        (
            "stage a -> text { input.n * 2 }\n",
            "type-mismatch",
            'a value becomes text inside a string: `"${…}"` (or `to_text(…)`)',
        ),
        (
            "stage a -> text { input.n }\n",
            "type-mismatch",
            'a value becomes text inside a string: `"${input.n}"` (or `to_text(input.n)`)',
        ),
        (
            'stage a -> text[] { sort_by(input.ts, "count") }\n',
            "type-mismatch",
            "`sort(xs)` sorts texts or numbers themselves (`sort_by` orders objects by a field)",
        ),
        (
            'stage a -> bool { input.n == "4" }\n',
            "type-mismatch",
            "a number never equals text: write the number without quotes (`4`), or convert a "
            "side (`parse_int(…)`, `to_text(…)`)",
        ),
        (
            "stage a -> int { 2 ** 3 }\n",
            "syntax-error",
            "there is no `**` (nor a power function): multiply, `x * x` (or `x * x * x`)",
        ),
        (
            "stage a -> int { try { 1 } except { 0 } }\n",
            "syntax-error",
            "a `try` is caught with `catch`, not `except`: `try { … } catch { … }`",
        ),
        (
            "stage a -> int {\n  let o = { a = 1 }\n  return 1\n}\n",
            "syntax-error",
            "object entries are written `key: value`",
        ),
    ],
)
def test_a_mistake_of_a_new_user_gets_the_hint_of_its_fix(body: str, code: str, hint: str) -> None:
    d = _only(body)
    assert (d.code, d.hint) == (code, hint)


def test_an_unused_value_ending_an_if_block_hints_how_to_give_a_value() -> None:
    d = _only("stage a -> int {\n  if input.n > 1 { 1 }\n  return 2\n}\n")
    assert d.code == "unused-value"
    assert d.hint == (
        "an `if` block gives no value: `return` it inside the block, or write the value as "
        "`if c then a else b`"
    )


def test_a_test_expect_comparing_int_with_text_has_a_hint() -> None:
    body = (
        'stage s -> { v: int } { { v: 1 } }\ntest "t" {\n  input { n: 1, ts: [] }\n'
        '  expect s.v == "4"\n}\n'
    )
    d = _only(body)
    assert d.code == "type-mismatch" and "without quotes (`4`)" in (d.hint or ""), d


def test_a_diagnostic_with_no_hint_of_its_own_gets_its_codes_usual_fix() -> None:
    d = _only("type A { x: int }\ntype A { y: int }\nstage s -> int { 1 }\n")
    assert d.code == "duplicate-definition"
    assert d.hint == D.FALLBACK_HINTS["duplicate-definition"]


def test_every_code_of_the_language_has_a_usual_fix() -> None:
    language = [c for c in D.CODES if c not in D.PLAN_CODES and c != D.SYNTAX_ERROR]
    assert [c for c in language if not D.FALLBACK_HINTS.get(c)] == []
    assert (
        D.fallback_hint(D.SYNTAX_ERROR, "expected `:`, found `=`") == "write `:` here (found `=`)"
    )


def _corpus() -> list[tuple[str, str]]:
    paths = sorted((TESTS / "compiler" / "check").glob("*.flow"))
    paths += sorted(SPEC_EXAMPLES.glob("*.flow")) + sorted(SPEC_DIAGNOSTICS.glob("*.flow"))
    paths += sorted(Path(REPO, "examples").rglob("*.flow"))
    return [(p.name, p.read_text(encoding="utf-8")) for p in paths]


def test_no_diagnostic_over_the_corpus_and_its_mutants_lacks_a_hint() -> None:
    corpus = _corpus()
    assert len(corpus) > 40
    rng = random.Random(13)
    sources = corpus + [(f"{n} (mutant)", mutate(s, rng)) for n, s in corpus * 4]
    missing = [
        (name, d.code, d.message)
        for name, text in sources
        for d in check_source(text, "t.flow").diagnostics
        if not d.hint
    ]
    assert missing == []
