"""`{x}` in a string where `x` is a value in scope is sent as written: `brace-not-interpolation`
warns, with `${x}` as the hint and the quick fix (docs/diagnostics.md#brace-not-interpolation).
Braces around anything else — JSON, `{}`, a name of nothing, an escaped brace — never warn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.paths import REPO

from agentflow import api
from agentflow.compiler.api import check_file, check_source

HEAD = 'flow t\ninput { doc: text, name: text, xs: text[] }\nuse agent "w" as w\n'


def _braces(body: str) -> list:
    result = check_source(HEAD + body)
    return [d for d in result.diagnostics if d.code == "brace-not-interpolation"]


def _applied(text: str, diags: list) -> str:
    for d in sorted(diags, key=lambda d: -d.fix.span.start):
        text = text[: d.fix.span.start] + d.fix.text + text[d.fix.span.end :]
    return text


def test_a_task_with_braces_around_an_input_field_warns_with_the_dollar_form() -> None:
    body = (
        "stage s -> text {\n  return agent(w) {\n"
        '    task "Summarize {input.doc} in one line"\n    tools none\n    expect text\n  }\n}\n'
    )
    (d,) = _braces(body)
    assert d.severity == "warning"
    assert d.span.line == 6 and d.span.column == 21 and d.span.end_column == 32
    assert "`{input.doc}`" in d.message
    assert d.hint == "did you mean `${input.doc}`?"
    assert d.fix is not None and d.fix.text == "${input.doc}"
    fixed = _applied(HEAD + body, [d])
    assert 'task "Summarize ${input.doc} in one line"' in fixed
    assert not check_source(fixed).diagnostics


def test_a_stage_value_with_braces_warns() -> None:
    (d,) = _braces('stage a -> text { "Hello {input.name}" }\n')
    assert d.hint == "did you mean `${input.name}`?"


@pytest.mark.parametrize(
    ("decl", "text", "written"),
    [
        ("let n = 1", "{n}", "n"),
        ("let n = 1", "{ n }", "n"),
        ("let n = 1", "{{input.name}}", "input.name"),
        ("", "{input}", "input"),
    ],
)
def test_lets_whole_input_and_double_braces_warn(decl: str, text: str, written: str) -> None:
    body = f'stage a -> text {{\n  {decl}\n  "x {text} y"\n}}\n'
    (d,) = _braces(body)
    assert d.fix is not None and d.fix.text == f"${{{written}}}"
    assert _applied(HEAD + body, [d]).count(f'"x ${{{written}}} y"') == 1


def test_an_earlier_stage_a_parameter_and_a_loop_variable_warn() -> None:
    body = (
        'fn greet(who: text) -> text = "hi {who}"\n'
        'stage a -> text { "a" }\n'
        'stage b -> text[] { map input.xs as x { "{x} after {a}" } }\n'
    )
    assert sorted(d.hint for d in _braces(body)) == [
        "did you mean `${a}`?",
        "did you mean `${who}`?",
        "did you mean `${x}`?",
    ]


def test_a_multi_line_string_warns_on_the_line_of_the_braces() -> None:
    body = 'stage a -> text {\n  """\n    Read this:\n    {input.doc}\n    """\n}\n'
    (d,) = _braces(body)
    assert (d.span.line, d.span.column) == (7, 5)


@pytest.mark.parametrize(
    "text",
    [
        '{\\"a\\": 1}',  # JSON
        "{}",
        "{placeholder}",  # not a name in scope
        "{w}",  # a `use` alias is not a value
        "{input.doc",  # not closed
        "\\u{7B}input.doc}",  # the brace escaped
        "\\${input.doc}",  # the `$` escaped: the text `${input.doc}`
        "{input[0]}",
        "{1}",
    ],
)
def test_other_braces_are_text_and_never_warn(text: str) -> None:
    assert _braces(f'stage a -> text {{ "{text} ${{input.name}}" }}\n') == []


def test_the_escaped_forms_send_the_braces() -> None:
    src = HEAD + 'stage a -> text { "\\u{7B}input.doc} \\${input.doc}" }\n'
    assert _braces('stage a -> text { "\\u{7B}input.doc} \\${input.doc}" }\n') == []
    assert '"{input.doc} ' in json.dumps(api.compile_source(src, "t.flow").plan)


def test_no_example_or_golden_program_warns() -> None:
    files = sorted(Path(REPO, "examples").rglob("*.flow"))
    files += sorted(Path(REPO, "tests", "compiler", "check").glob("*.flow"))
    assert files
    for path in files:
        found = [d for d in check_file(path).diagnostics if d.code == "brace-not-interpolation"]
        assert found == [], path


def test_braces_in_a_test_blocks_constants_never_warn() -> None:
    # a test's input, stubs and expected values are constants: `${…}` cannot be written there,
    # so `{input.doc}` is data the test passes through on purpose
    body = (
        'stage s -> text {\n  return agent(w) {\n    task "Summarize ${input.doc}"\n'
        "    tools none\n    expect text\n  }\n}\n"
        'test "braces pass through" {\n'
        '  input { doc: "Hello {input.doc}", name: "n", xs: [] }\n'
        '  stub agent w returns "{input.doc} and {s}"\n'
        '  expect s == "{input.doc} and {s}"\n}\n'
    )
    result = check_source(HEAD + body)
    assert [d for d in result.diagnostics if d.severity != "hint"] == [], result.diagnostics


def test_braces_in_a_match_pattern_never_warn() -> None:
    # a pattern is compared, never sent, and cannot hold `${…}`
    text = (
        'flow t\ninput { name: text, style: "{name}" | "plain" }\n'
        "stage s -> text {\n  let name = input.name\n"
        '  return match input.style { "{name}" => "braced ${name}", "plain" => name }\n}\n'
    )
    assert check_source(text).diagnostics == []


def test_a_path_through_a_field_the_value_lacks_warns_without_proposing_a_broken_fix() -> None:
    # `${x.y.z}` would itself be an error (`unknown-field`): no quick fix, the hint says why
    body = 'stage a -> text {\n  let x = input\n  "{x.y.z} {x.doc.nope} {x.doc}"\n}\n'
    bad_head, bad_tail, good = _braces(body)
    for d, missing in ((bad_head, "has no field `y`"), (bad_tail, "`text` has no field `nope`")):
        assert d.fix is None
        assert "would not read a value either" in d.hint and missing in d.hint
        assert "\\u{7B}" in d.hint
    assert good.fix is not None and good.fix.text == "${x.doc}"
    # the checker's own view of the file is unchanged by the look: `x` stays used by `{…}` only
    # as much as before (no new diagnostics, no lost ones)
    assert [d.code for d in check_source(HEAD + body).diagnostics].count("unused-variable") == 1


def test_a_path_valid_only_under_a_narrowing_keeps_its_fix_there() -> None:
    head = (
        'flow t\ntype Cat { kind: "cat", meow: text }\ntype Dog { kind: "dog", bark: text }\n'
        "input { pet: Cat | Dog }\n"
    )
    body = 'stage a -> text {\n  if input.pet.kind == "dog" { return "{input.pet.bark}" }\n  "{input.pet.bark}"\n}\n'
    inside, outside = [
        d for d in check_source(head + body).diagnostics if d.code == "brace-not-interpolation"
    ]
    assert inside.fix is not None and inside.fix.text == "${input.pet.bark}"
    assert outside.fix is None and "`bark`" in outside.hint
