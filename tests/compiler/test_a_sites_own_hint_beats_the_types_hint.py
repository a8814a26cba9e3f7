"""A `type-mismatch` whose hint is said from the types alone (`"${…}"` for a number where text
goes: a WeakHint) gives way to the hint of a site that knows why the value is expected there —
a `catch` fallback, a test's stub (docs/decisions.md "Every diagnostic of `flowc check` has a hint")."""

from __future__ import annotations

from agentflow.compiler.api import check_source


def _mismatches(text: str) -> list:
    return [
        d for d in check_source(text).diagnostics if d.code in ("type-mismatch", "stub-mismatch")
    ]


def test_a_catch_fallback_of_the_wrong_type_says_what_it_stands_in_for() -> None:
    text = (
        "flow t\ninput { u: text }\nextern tool fetch(url: text) -> text\n"
        "stage s -> text {\n  let body = fetch(url: input.u) catch { 0 }\n  return body\n}\n"
    )
    (d,) = _mismatches(text)
    assert d.hint.startswith("the fallback stands in for the value of `fetch(…)`"), d.hint


def test_a_stub_of_the_wrong_type_is_told_to_fit_the_contract() -> None:
    text = (
        'flow t\nuse agent "w" as w\nstage s -> text {\n  return agent(w) {\n'
        '    task "go"\n    tools none\n    expect text\n  }\n}\n'
        'test "stubbed" {\n  stub agent w returns 3\n  expect s == "3"\n}\n'
    )
    (d,) = _mismatches(text)
    assert d.code == "stub-mismatch"
    assert "${" not in d.hint, d.hint


def test_a_number_literal_where_text_goes_is_told_to_quote_it() -> None:
    text = "flow t\nstage s -> text {\n  let x: text = 3\n  return x\n}\n"
    (d,) = _mismatches(text)
    assert d.hint == 'text is written in quotes: `"3"`', d.hint
