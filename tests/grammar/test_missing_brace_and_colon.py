"""Where a deleted `}` is reported, and the `name: type` hint (decisions.md "check messages
(round 41)"; docs/diagnostics.md "Syntax errors").  The checker goldens
``tests/compiler/check/unclosed_braces.flow`` and ``hints.flow`` pin the messages; these pin the
edges: the parse error further on, code with no indentation, an unclosed `(`, and every place a
`:` goes before a type."""

from __future__ import annotations

import pytest

from agentflow.grammar.parser import parse_module


def _one(text: str):
    _module, diags = parse_module(text, "t.flow")
    assert len(diags) == 1, [d.message for d in diags]
    return diags[0]


def test_a_parse_error_after_the_missing_brace_points_at_the_brace_and_notes_the_error():
    # the `if`'s `}` is gone: the loop's `}` closes it and `until` fails two lines later
    text = """stage s -> int {
  return loop up to 3 as turn, n = 0 {
    if n > 1 {
      return n + 1

    return n
  } until n > 2 else n
}
"""
    d = _one(text)
    assert d.message == "expected `}` to close the `if` block opened on line 3 before line 6"
    assert (d.span.line, d.span.column) == (6, 5)
    assert [(n.message.split(":")[0], n.span.line) for n in d.notes] == [
        ("this `{` is not closed", 3),
        ("the parser stopped here", 7),
    ]


def test_code_without_indentation_is_reported_at_the_innermost_open_brace_as_before():
    text = 'use agent "h" as h\nstage s -> int {\nlet a = agent(h) {\ntask "x"\nexpect int\n}\n'
    d = _one(text)
    assert d.message.startswith("expected `}` to close the stage body opened on line 2")
    assert [(n.message, n.span.line) for n in d.notes] == [("this `{` is not closed", 2)]


def test_an_unclosed_parenthesis_is_reported_at_itself():
    text = "stage s -> int {\n  let y = max(\n    1\n\nstage t -> int { return 1 }\n"
    d = _one(text)
    assert d.message.startswith("expected `)` to close the `(` opened on line 2")
    assert (d.span.line, d.span.column) == (2, 14)


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("type R {\n  count int\n}\n", "fields are written `name: type`: `count: int`"),
        ("type R { a: int, tags text[] }\n", "fields are written `name: type`: `tags: text[]`"),
        ("input { dir path }\n", "fields are written `name: type`: `dir: path`"),
        (
            "extern tool grep(pattern text) -> text\n",
            "parameters are written `name: type`: `pattern: text`",
        ),
        (
            "extern tool grep(limit? int) -> text\n",
            "parameters are written `name: type`: `limit?: int`",
        ),
        (
            "stage s -> int {\n  let n int = 1\n  return n\n}\n",
            "a `let`'s type follows a colon: `let n: int = …`",
        ),
        (
            "stage s -> int {\n  return reduce [1] as x, acc int = 0 { acc + x }\n}\n",
            "the state's type follows a colon: `acc: int = …`",
        ),
        # an object literal's entry is a value, not a type: no such hint
        ("stage s -> int {\n  let o = { a [] }\n  return 1\n}\n", None),
    ],
)
def test_a_name_and_type_without_the_colon_hints_the_fix(text: str, hint: str | None):
    d = _one(text)
    assert d.hint == hint


def test_an_object_closed_on_a_shallow_line_is_not_blamed_for_a_later_error():
    # the object's lines are sloppy but closed: the error is the `= =` two lines on
    text = "stage s -> int {\n  let o = {\n    a: 1,\n  b: 2 }\n  let x = = 1\n  return x\n}\n"
    d = _one(text)
    assert d.message.startswith("expected an expression")
    assert d.span.line == 5
