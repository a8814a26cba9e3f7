"""A misspelt name in a `test` block's stub (a tool, an agent alias, a stage, a `let`, an error
code) carries its "did you mean" edit as ``Diagnostic.fix``, as every misspelt name does
(docs/editors.md quick fixes)."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

FLOW = """\
extern tool grep(pattern: text) -> text[]
use agent "h" as helper
input { dir: text }
stage todos -> text {
  let hits = grep(pattern: input.dir)
  return agent(helper) {
    task "pick from ${hits}"
    tools none
    expect text
  }
}
"""


@pytest.mark.parametrize(
    ("stub", "wrong", "meant"),
    [
        ("stub tool gerp returns []", "gerp", "grep"),
        ('stub agent helpr returns "x"', "helpr", "helper"),
        ('stub stage todo returns "x"', "todo", "todos"),
        ("stub step hts returns []", "hts", "hits"),
        ('stub tool grep fails "tool_eror"', "tool_eror", "tool_error"),
    ],
)
def test_a_misspelt_stub_name_carries_its_edit(stub, wrong, meant):
    text = FLOW + f'test "t" {{\n  input {{ dir: "." }}\n  {stub}\n  expect calls.grep == 1\n}}\n'
    fixed = [d for d in check_source(text, "x.flow").diagnostics if d.fix is not None]
    assert len(fixed) == 1, [
        (d.code, d.message, d.hint) for d in check_source(text, "x.flow").diagnostics
    ]
    fix = fixed[0].fix
    assert fix is not None and "did you mean" in (fixed[0].hint or "")
    assert text[fix.span.start : fix.span.end] == wrong and fix.text == meant
    after = text[: fix.span.start] + fix.text + text[fix.span.end :]
    assert fixed[0].code not in [d.code for d in check_source(after, "x.flow").diagnostics]
