"""A syntax error in a stage drops the stage from the parse; a `test` block's stub of the agent
alias, stage or `let` it held then named nothing, and the check added `unknown-stub-target` at
the test — a cascade the trial user met in 6 of 7 syntax errors made in `examples/first.flow`
(docs/diagnostics.md "syntax-error": the item containing the error gets no other diagnostic)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentflow.compiler.api import check_source

FIRST = (Path(__file__).resolve().parents[2] / "examples" / "first.flow").read_text()


@pytest.mark.parametrize(
    "broken",
    [
        ('grep(pattern: "TODO", path: input.dir)', 'grep(pattern: "TODO", path: input.dir'),
        ("if hits.count == 0 {", "if hits.count == 0"),
        ('task "Pick', 'tsk "Pick'),
    ],
    ids=["an unclosed call", "an if without its brace", "a misspelt task"],
)
def test_a_syntax_error_in_a_stage_is_the_only_error(broken):
    old, new = broken
    assert old in FIRST
    result = check_source(FIRST.replace(old, new, 1), "first.flow")
    codes = [d.code for d in result.diagnostics if d.severity == "error"]
    assert codes and set(codes) == {"syntax-error"}, [
        (d.code, d.span.line, d.message) for d in result.diagnostics
    ]


def test_a_stub_naming_nothing_is_still_reported_in_a_file_that_parses():
    bad = FIRST.replace("stub agent helper", "stub agent helpr", 1)
    assert bad != FIRST
    result = check_source(bad, "first.flow")
    assert [d.code for d in result.diagnostics if d.severity == "error"] == ["unknown-stub-target"]
