"""A new user's first slips (the trial of main): each is one diagnostic whose message or hint
names the `.flow` spelling — a binding of another language, a lambda, an f-string, a `for`
loop, a trailing `;`, an `ask`'s clauses out of order, a union of bare words, an optional value
passed where its value fits (docs/diagnostics.md)."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

HEAD = "input { name: text, xs: int[], tags: text[]? }\n"


def _one(body: str, before: str = "") -> tuple[str, str, str | None, str]:
    """The one diagnostic of a stage holding ``body`` (code, message, hint, the text under its
    span)."""
    src = f'{HEAD}{before}stage s -> text {{\n  {body}\n  return "x"\n}}\n'
    diags = check_source(src, "t.flow").diagnostics
    assert len(diags) == 1, [(d.code, d.message) for d in diags]
    (d,) = diags
    line = src.split("\n")[d.span.line - 1]
    return d.code, d.message, d.hint, line[d.span.column - 1 : d.span.end_column - 1]


HINTS = {
    'const greeting = "hi " + input.name': (
        "`.flow` binds a name with `let`: `let greeting = …` (bound once; there is no `const`)"
    ),
    "var n = 1": "`.flow` binds a name with `let`: `let n = …` (bound once; there is no `var`)",
    "var n: int = 1": (
        "`.flow` binds a name with `let`: `let n: int = …` (bound once; there is no `var`)"
    ),
    "let mut n = 1": (
        "a `let` is bound once and cannot change (there is no `let mut`): `let n = …`; a value "
        "that changes is a `reduce` or a `loop`'s state"
    ),
    "let n = 1;": "`.flow` ends a statement at the end of its line: drop the `;`",
    "let ys = input.xs.map(x => x * 2)": (
        "there are no lambdas in `.flow`: write `map input.xs as x { x * 2 }`"
    ),
    "let ys = input.xs.filter((x) => x > 2)": (
        "there are no lambdas in `.flow`: write `filter input.xs as x where x > 2`"
    ),
}


@pytest.mark.parametrize("body", list(HINTS))
def test_a_binding_or_lambda_of_another_language_hints_the_flow_spelling(body):
    code, _, hint, _ = _one(body)
    assert (code, hint) == ("syntax-error", HINTS[body])


def test_a_for_loop_is_reported_at_its_word_with_the_ways_to_iterate():
    code, message, hint, under = _one("for x in input.xs { x }")
    assert (code, message, under) == ("syntax-error", "there is no `for` loop in `.flow`", "for")
    assert hint is not None and "`map xs as x { … }`" in hint


@pytest.mark.parametrize(
    ("body", "word"),
    [
        ("return for x in [1, 2] {\n    x\n  }", "for"),
        ("let ys = for x in input.xs { x }", "for"),
        ("let ys = for x in input.xs {\n    x\n  }", "for"),
        ("while true {\n    let y = 1\n  }", "while"),
        # one-line loops with an empty body, a comprehension, a loop whose head reads as names
        ("for x in input.xs { }", "for"),
        ("while true { }", "while"),
        ("let ys = [for x in input.xs]", "for"),
        ("let y = 1\n  while y < 3 {\n    1\n  }", "while"),
    ],
)
def test_a_for_or_while_after_return_or_let_or_over_lines_is_reported_at_its_word(body, word):
    code, message, hint, under = _one(body)
    assert (code, message, under) == ("syntax-error", f"there is no `{word}` loop in `.flow`", word)
    assert hint is not None and "`map xs as x { … }`" in hint


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("None", "null"),
        ("nil", "null"),
        ("undefined", "null"),
        ("NULL", "null"),
        ("True", "true"),
        ("TRUE", "true"),
        ("False", "false"),
    ],
)
def test_a_literal_of_another_language_hints_the_flow_literal(written, meant):
    src = HEAD + f"stage s -> bool? {{\n  return {written}\n}}\n"
    diags = check_source(src, "t.flow").diagnostics
    assert [(d.code, d.message) for d in diags] == [("unknown-name", f"unknown name `{written}`")]
    assert diags[0].hint == f"`.flow` writes this value `{meant}` (not `{written}`)"


def test_an_f_string_hints_interpolation_and_nothing_after_it_is_unreachable():
    src = HEAD + 'stage s -> text {\n  return f"hello {input.name}"\n}\n'
    diags = check_source(src, "t.flow").diagnostics
    assert [(d.code, d.message) for d in diags] == [("unknown-name", _NO_PREFIX)]
    assert diags[0].hint == ('`.flow` strings interpolate with `"…${x}…"`: `"hello ${input.name}"`')


_NO_PREFIX = 'unknown name `f`: a string takes no prefix (`f"…"` is not `.flow`)'


@pytest.mark.parametrize(
    ("value", "meant"),
    [
        ('f"Hello {input.name}"', '"Hello ${input.name}"'),
        ('f "Hello"', '"Hello"'),
        ('f  "Hi {input.name}!"', '"Hi ${input.name}!"'),
    ],
)
def test_an_f_string_as_a_stage_value_is_one_error_saying_how_strings_interpolate(
    value: str, meant: str
) -> None:
    src = HEAD + f"stage s -> text {{ {value} }}\n"
    diags = check_source(src, "t.flow").diagnostics
    assert [(d.code, d.message) for d in diags] == [("unknown-name", _NO_PREFIX)]
    assert diags[0].hint == f'`.flow` strings interpolate with `"…${{x}}…"`: `{meant}`'


def test_an_asks_expect_after_its_default_says_the_clause_order():
    code, message, hint, under = _one('let ok = ask "Go?" default false expect bool')
    assert (code, message, under) == (
        "syntax-error",
        "an `ask`'s `expect` comes before its `default`",
        "expect",
    )
    assert hint is not None and '`ask "Go?" expect bool default false`' in hint


def test_a_union_of_bare_words_is_one_error_hinting_the_literal_union():
    code, message, hint, under = _one("let _r = 1", before="type T { risk: low | high }\n")
    assert (code, under) == ("unknown-type", "low | high")
    assert message == (
        "unknown types `low`, `high`: a choice among words is a union of string literals"
    )
    assert hint == 'quote the words: `"low" | "high"`'


def test_an_optional_argument_whose_value_fits_hints_a_default():
    code, _, hint, under = _one("let _n = len(input.tags)")
    assert (code, under) == ("type-mismatch", "input.tags")
    assert hint == (
        "`input.tags` may be `null` (`text[]?`): give a default with `??`, "
        "`input.tags ?? []`, or check `if input.tags != null { … }` first"
    )


OPTIONAL_TEXT = """\
input { who: text?, xs: text[] }
use agent "a" as a
stage s -> text {
  let ok = ask "Deploy for ${input.who}?" expect bool default false
  if input.who != null {
    return agent(a) { task "for ${input.who}" tools none expect text }
  }
  return agent(a) {
    task "Write for ${input.who ?? "all"}, approved: ${ok}"
    system "Audience: ${input.who}"
    tools none
    expect text
  }
}
stage f -> text[] {
  filter input.xs as x where judge "is ${x} about ${input.who}?"
}
"""


def test_an_optional_value_in_a_task_question_or_prompt_is_a_warning_with_a_default():
    diags = check_source(OPTIONAL_TEXT, "t.flow").diagnostics
    lines = OPTIONAL_TEXT.split("\n")
    assert [(d.code, d.span.line, d.severity) for d in diags] == [
        ("optional-in-text", 4, "warning"),  # the ask's question
        ("optional-in-text", 10, "warning"),  # the system prompt (the narrowed task is not)
        ("optional-in-text", 16, "warning"),  # the judge's prompt
    ]
    d = diags[0]
    assert lines[3][d.span.column - 1 : d.span.end_column - 1] == "${input.who}"
    assert d.message == "`input.who` may be `null` (`text?`): the question would read `null` then"
    assert d.hint == 'say what to write instead: `${input.who ?? "none"}`'


def test_break_in_a_loop_hints_that_a_loop_ends_with_until():
    src = (
        "stage s -> int {\n  let x = loop up to 5 as r, n = 0 {\n    if n > 2 { break }\n"
        "    n + 1\n  } until n > 3 else n\n  return x\n}\n"
    )
    diags = check_source(src, "t.flow").diagnostics
    assert [(d.code, d.message) for d in diags] == [("unknown-name", "unknown name `break`")]
    hint = diags[0].hint
    assert hint is not None and hint.startswith("there is no `break`: a loop ends when its")
