"""Narrowing (docs/reference/types.md "Narrowing"): inside an `if` (statement or expression)
whose condition tests a union's discriminant (`X.kind == "cat"`, `!=`, the literal on either
side), a name or field path `X` has the members the test admits, and in the else-branch the
others; `X != null` drops `null`; `and` narrows its right side and the then-branch. Reading a
member-only field without narrowing stays `unknown-field`, with a hint showing the test; a
literal no member admits is `no-overlap`. A flow that narrows runs right for both members, and
the language server's hover shows the narrowed type."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.compiler.api import check_source
from agentflow.lsp.analysis import analyze

HEAD = """\
type Cat { kind: "cat", lives: int }
type Dog { kind: "dog", good: bool }
type Bird { kind: "bird" | "parrot", words: int }
type Pet = Cat | Dog | Bird
input { pet: Pet, home: { pet: Pet }, maybe: Pet?, n: int? }
"""


def _diags(body: str, returns: str = "int"):
    src = HEAD + f"stage s -> {returns} {{\n{body}\n}}\n"
    return [d for d in check_source(src, "s.flow").diagnostics if d.severity == "error"]


@pytest.mark.parametrize(
    "body",
    [
        # a name, then-branch
        '  let p = input.pet\n  if p.kind == "cat" { return p.lives }\n  return 0',
        # the literal on the left
        '  if "cat" == input.pet.kind { return input.pet.lives }\n  return 0',
        # else-branch of `!=`, and an `else if` chain narrowing one member at a time
        '  let p = input.pet\n  if p.kind != "cat" {\n    if p.kind == "dog" { return 1 }'
        " else { return p.words }\n  } else { return p.lives }",
        # a nested field path, in an `if … then … else` expression
        '  return if input.home.pet.kind == "cat" then input.home.pet.lives else 0',
        # a member whose discriminant has two literals
        '  return if input.pet.kind == "parrot" then input.pet.words else 0',
        # `and`: the right side and the then-branch are narrowed
        '  if input.pet.kind == "cat" and input.pet.lives > 3 { return input.pet.lives }\n'
        "  return 0",
        # `not`, `or`: the else-branch of a test that failed on both sides
        '  let p = input.pet\n  if not (p.kind != "dog") { let _g = p.good }\n'
        '  return if p.kind == "cat" or p.kind == "dog" then 0 else p.words',
        # an optional: the discriminant test drops `null`, `!= null` too
        '  if input.maybe.kind == "cat" { return input.maybe.lives }\n'
        "  return if input.n != null then input.n + 1 else 0",
    ],
    ids=[
        "name",
        "literal-left",
        "not-equal-else",
        "nested-path",
        "two-literals",
        "and",
        "not-or",
        "optional",
    ],
)
def test_a_member_only_field_is_readable_where_the_test_narrows_to_its_member(body):
    assert _diags(body) == []


def test_a_member_only_field_without_narrowing_is_unknown_field_with_a_hint_to_narrow():
    (d,) = _diags("  return input.home.pet.lives")
    assert d.code == "unknown-field"
    assert d.message == "`lives` is not a field of every member of `Pet`"
    assert d.hint == (
        "`lives` is a field of `Cat`: check the discriminant first — inside "
        '`if input.home.pet.kind == "cat" { … }`, `input.home.pet` is narrowed to `Cat`'
    )


def test_the_narrowing_holds_only_in_its_branch():
    # the else-branch of `== "cat"` is `Dog | Bird`: `lives` is not readable there
    (d,) = _diags('  let p = input.pet\n  return if p.kind == "cat" then 0 else p.lives')
    assert d.code == "unknown-field"
    assert "of every member of `Dog | Bird`" in d.message
    # nor after the `if`
    (d,) = _diags(
        '  let p = input.pet\n  if p.kind == "cat" { let _n = p.lives }\n  return p.lives'
    )
    assert d.code == "unknown-field" and d.span.line == 9


def test_a_let_that_reuses_the_name_in_the_branch_is_not_narrowed():
    body = (
        '  let p = input.pet\n  if p.kind == "cat" {\n    let p = input.pet\n'
        "    return p.lives\n  }\n  return 0"
    )
    (d,) = _diags(body)
    assert d.code == "unknown-field"


def test_a_literal_no_member_admits_is_no_overlap_naming_the_literals():
    (d,) = _diags('  if input.pet.kind == "cow" { return 1 }\n  return 0')
    assert d.code == "no-overlap"
    assert d.hint == '`input.pet.kind` can be "cat", "dog", "bird" or "parrot"'


def test_hover_shows_the_narrowed_type_inside_the_branch():
    src = HEAD + 'stage s -> int {\n  let p = input.pet\n  if p.kind == "cat" { return p.lives }\n'
    src += '  return if input.pet.kind != "bird" then 1 else input.pet.words\n}\n'
    a = analyze(src, "h.flow")

    def hover(word: str, at: int = 0) -> str:
        found = a.hover(src.index(word) + at)
        assert found is not None
        return found[0]

    assert "(let) p: Cat\n" in hover("p.lives")
    assert "(let) p: Pet\n" in hover("p.kind")
    assert "(field) pet: Bird\n" in hover("pet.words", 1)


FLOW = """\
type Answer { kind: "answer", text: text }
type Clarification { kind: "clarification", question: text }
input { reply: Answer | Clarification }
stage s -> text {
  let r = input.reply
  if r.kind == "answer" {
    return "answer: ${r.text}"
  } else {
    return "asks: ${r.question}"
  }
}
"""


@pytest.mark.parametrize(
    "reply, output",
    [
        ({"kind": "answer", "text": "42"}, "answer: 42"),
        ({"kind": "clarification", "question": "which year?"}, "asks: which year?"),
    ],
)
def test_a_flow_that_narrows_runs_the_branch_of_each_member(tmp_path, reply, output):
    flow = tmp_path / "n.flow"
    flow.write_text(FLOW, encoding="utf-8")
    r = CliRunner().invoke(main, ["run", str(flow), "--input", json.dumps({"reply": reply})])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout.strip().splitlines()[0]) == output


def test_after_an_if_that_returns_the_rest_of_the_block_has_the_other_narrowing():
    body = (
        '  let p = input.pet\n  if p.kind == "cat" { return p.lives }\n'
        '  if p.kind != "dog" { fail "not a dog" }\n  return if p.good then 1 else 0'
    )
    assert _diags(body) == []
    # the narrowing ends with the block of the `if`
    body = (
        '  let p = input.pet\n  if p.kind == "dog" {\n    if p.kind != "dog" { return 0 }\n'
        "    let _g = p.good\n  }\n  return p.lives"
    )
    (d,) = _diags(body)
    assert d.code == "unknown-field" and "of every member of `Pet`" in d.message
    # an `if` whose branches both go on narrows nothing after it
    body = '  let p = input.pet\n  if p.kind == "cat" { let _n = 1 }\n  return p.lives'
    assert [d.code for d in _diags(body)] == ["unknown-field"]
