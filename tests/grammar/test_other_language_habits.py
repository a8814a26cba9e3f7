"""The habits of other languages get a hint in `.flow`'s terms (docs/reference/expressions.md
"Coming from another language"): `a?.b`, a list comprehension, `elif`, a multi-line `for`, a
top-level `def` / `function` / `interface` / `enum` / `from … import`, backticks, `===`, `x++`,
a spread, `stage s(): T`, `if c { 1 } else { 2 }` as a value, `assert` in a test, an unquoted
test name and a `loop` without its state. Both parsers give the one diagnostic."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_descent import assert_same_as_lalr  # noqa: E402

from agentflow.grammar.parser import parse_module  # noqa: E402

_HEAD = "input { o: { a: { b: int }? }, xs: int[], n: int }\n"


def _stage(body: str, typ: str = "json") -> str:
    return f"{_HEAD}stage s -> {typ} {{\n{body}\n}}\n"


def _one(text: str) -> tuple[str, str]:
    _, diags = parse_module(text, "h.flow")
    assert len(diags) == 1, diags
    assert_same_as_lalr(text, "h.flow")
    assert diags[0].hint is not None
    return diags[0].message, diags[0].hint


CASES = {
    "optional chaining": (
        _stage("  return input.o.a?.b"),
        "there is no `?.`: `.` already reads through an optional (`a.b` is `null` when `a` is), "
        "so write `a.b`; `a.b ?? default` gives a value in its place",
    ),
    "list comprehension": (
        _stage("  return [x + 1 for x in [1, 2]]"),
        "there are no list comprehensions in `.flow`: write `map [1, 2] as x { x + 1 }`",
    ),
    "filtering comprehension": (
        _stage("  return [x for x in input.xs if x > 1]"),
        "there are no list comprehensions in `.flow`: write `filter input.xs as x where x > 1`",
    ),
    "def": ("def f(x: int) -> int:\n  return x\n", "functions are declared with `fn`"),
    "function": ("function f(x) { return x }\n", "functions are declared with `fn`"),
    "interface": ("interface T { a: int }\n", "an object type is declared with `type`"),
    "enum": ("enum Color { Red, Green }\n", "a choice of values is a union of literals"),
    "from import": (
        'from "./x.flow" import { T }\n',
        '`import` comes first: `import { T } from "./x.flow"`',
    ),
    "backticks": (
        _stage("  return `hi ${input.n}`"),
        'a string is written in double quotes, and any string interpolates: `"hi ${name}"`',
    ),
    "triple equals": (
        _stage("  return input.n === 1"),
        "there is no `===` in `.flow`: `==` compares values",
    ),
    "not triple equals": (
        _stage("  return input.n !== 1"),
        "there is no `!==` in `.flow`: `!=` compares values",
    ),
    "increment": (
        _stage("  let x = 1\n  x++\n  return x"),
        "there is no `++`: a `let` is bound once; name the next value (`let x2 = x + 1`)",
    ),
    "compound assignment": (
        _stage("  let x = 1\n  x += 1\n  return x"),
        "there is no `+=`: a `let` is bound once; name the new value (`let x2 = x + 1`)",
    ),
    "spread": (
        _stage("  let o = { a: 1 }\n  return { ...o, b: 2 }"),
        "there is no spread (`...`) in `.flow`: `merge(o, { b: 2 })` gives the object `o`",
    ),
    "spread after fields": (
        _stage("  let o = { a: 1 }\n  return { c: 3, ...o }"),
        "there is no spread (`...`) in `.flow`: `merge({ c: 3 }, o)`",
    ),
    "list spread": (
        _stage("  return [...input.xs, 1]"),
        "there is no spread (`...`) in `.flow`: `xs + [1]` joins two lists",
    ),
    "stage parameters": (
        f"{_HEAD}stage s(): int {{\n  return 1\n}}\n",
        "a stage takes no parameters (it reads `input` and the stages before it by name) and "
        "its type follows `->`: `stage s -> int { … }`",
    ),
    "if as a value": (
        _stage("  let x = if input.n > 0 { 1 } else { 2 }\n  return x"),
        "a conditional value is written `if c then 1 else 2`; `if c { … }` is a statement",
    ),
    "assert in a test": (
        _stage("  return 1")
        + 'test "t" {\n  input { o: null, xs: [], n: 1 }\n  assert output == 1\n}\n',
        "a test checks with `expect`: `expect output == 1`",
    ),
    "unquoted test name": (
        _stage("  return 1") + "test t {\n  expect output == 1\n}\n",
        'a test\'s name is a string: `test "t" { … }`',
    ),
    "loop without state": (
        _stage("  return loop up to 3 as r { r }"),
        "a loop carries a state from round to round: `loop up to 3 as r, s = start { … } until "
        "cond else …`",
    ),
    "loop state from a start": (
        _stage("  return loop up to 3 as r from 0 { r }"),
        "a loop carries a state from round to round: `loop up to 3 as r, s = 0 { … } until "
        "cond else …`",
    ),
}


@pytest.mark.parametrize(
    ("written", "hint"),
    [
        (
            "reduce input.xs as x from 0 { acc + x }",
            "a `reduce` names its item, then its accumulator with the accumulator's start value "
            "(not `from`): `reduce input.xs as x, acc = 0 { … }`",
        ),
        (
            "reduce input.xs as x with 1 { acc * x }",
            "a `reduce` names its item, then its accumulator with the accumulator's start value "
            "(not `with`): `reduce input.xs as x, acc = 1 { … }`",
        ),
        (
            "reduce input.xs as x { acc + x }",
            "a `reduce` names its item, then its accumulator with the accumulator's start value: "
            "`reduce input.xs as x, acc = start { … }`",
        ),
    ],
)
def test_a_reduce_with_from_or_without_its_accumulator_shows_the_reduce_form(
    written: str, hint: str
) -> None:
    message, said = _one(_stage(f"  return {written}", "int"))
    assert message.startswith("expected `,`")
    assert said.startswith(hint)
    assert "the body reads `acc` and `x`" in said


@pytest.mark.parametrize(("text", "hint"), CASES.values(), ids=CASES.keys())
def test_a_habit_of_another_language_gets_a_hint_in_flow_terms(text: str, hint: str) -> None:
    assert _one(text)[1].startswith(hint)


@pytest.mark.parametrize(
    "body",
    [
        "  if input.n > 0 {\n    return 1\n  } elif input.n < 0 {\n    return 2\n  }\n  return 0",
        "  if input.n > 0 { return 1 } elif input.n < 0 { return 2 }\n  return 0",
    ],
)
def test_elif_is_told_at_the_word_with_else_if(body: str) -> None:
    text = _stage(body, "int")
    _, diags = parse_module(text, "h.flow")
    assert_same_as_lalr(text, "h.flow")
    [d] = diags
    assert d.message == "there is no `elif` in `.flow`"
    assert text[d.span.start : d.span.end] == "elif"
    assert d.hint == "write `} else if input.n < 0 { … }`"


def test_a_multi_line_for_gets_the_no_for_loop_hint_of_the_one_line_forms() -> None:
    text = _stage("  for x in input.xs {\n    print(x)\n  }\n  return 0", "int")
    _, diags = parse_module(text, "h.flow")
    assert_same_as_lalr(text, "h.flow")
    [d] = diags
    assert d.message == "there is no `for` loop in `.flow`"
    assert (d.span.line, d.span.column) == (3, 3)
    assert d.hint is not None and d.hint.startswith("iterate with a value: `map xs as x")
