"""A `;` between the fields of a type (or the entries of an object) hints `,` or a line break, with
the edit; a duration spelt with a word (`deadline 20 minutes`) hints the unit it means (`20m`)."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

SEPARATOR = (
    "a type's fields (and an object's entries) are separated by `,` or a line break, not `;`: "
    "`type T { a: int, b: text }`"
)


def _first(src: str):
    diags = [d for d in check_source(src, "t.flow").diagnostics if d.is_error]
    assert diags, src
    return diags[0]


def test_a_semicolon_between_fields_on_one_line_hints_a_comma_and_replaces_it() -> None:
    d = _first("type T { a: int; b: text }\nstage s -> int { 1 }\n")
    assert d.message == "unexpected character `;`"
    assert d.hint == SEPARATOR
    assert d.fix is not None and (d.fix.text, d.fix.title) == (",", "Replace `;` with `,`")
    assert (d.fix.span.line, d.fix.span.column) == (1, 16)


def test_a_semicolon_ending_a_field_line_hints_the_separator_and_drops_it() -> None:
    d = _first("type T {\n  a: int;\n  b: text\n}\nstage s -> int { 1 }\n")
    assert d.hint == SEPARATOR
    assert d.fix is not None and d.fix.text == ""


def test_a_semicolon_between_object_entries_hints_the_separator() -> None:
    d = _first("stage s -> int {\n  let o = { a: 1; b: 2 }\n  o.a\n}\n")
    assert d.hint == SEPARATOR


def test_a_semicolon_ending_a_statement_keeps_its_own_hint() -> None:
    d = _first("stage s -> int {\n  let x: int = 1;\n  x\n}\n")
    assert d.hint == "`.flow` ends a statement at the end of its line: drop the `;`"


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("20 minutes", "20m"),
        ("20 min", "20m"),
        ("90 seconds", "90s"),
        ("2 hours", "2h"),
        ("500 ms", "500ms"),
        ("250 milliseconds", "250ms"),
        ("2 days", "48h"),
    ],
)
def test_a_duration_spelt_with_a_word_hints_its_unit(written: str, meant: str) -> None:
    d = _first(f"flow t\ndeadline {written}\nstage s -> int {{ 1 }}\n")
    assert d.hint == (
        f"a duration is written with its unit against the number: `{meant}` "
        f"(not `{written}`; the units are `ms`, `s`, `m`, `h`)"
    )


def test_a_bare_number_for_a_duration_keeps_the_seconds_hint() -> None:
    d = _first("flow t\ndeadline 20\nstage s -> int { 1 }\n")
    assert d.hint == "a duration needs a unit: `20s` (or `ms`, `m`, `h`)"


@pytest.mark.parametrize(
    ("body", "written", "meant"),
    [
        (
            'let r = agent(a) {\n    task "x"\n    expect int\n    timeout 2 hours\n  }\n  r',
            "2 hours",
            "2h",
        ),
        (
            'let r = agent(a) {\n    task "x"\n    expect int\n'
            "    retry { attempts: 1, backoff: { initial: 2 seconds } }\n  }\n  r",
            "2 seconds",
            "2s",
        ),
        ("sleep 5 minutes\n  1", "5 minutes", "5m"),
        ('let r = f("x") timeout 10 seconds\n  r', "10 seconds", "10s"),
    ],
)
def test_a_duration_word_in_an_agent_clause_backoff_sleep_or_call_timeout_hints_its_unit(
    body: str, written: str, meant: str
) -> None:
    src = f'use agent "a" as a\nextern tool f(x: text) -> int\nstage s -> int {{\n  {body}\n}}\n'
    d = _first(src)
    assert d.hint == (
        f"a duration is written with its unit against the number: `{meant}` "
        f"(not `{written}`; the units are `ms`, `s`, `m`, `h`)"
    )
