"""A constraint after a tool's result type, a parameter's or a `type` alias is a syntax error
that says where constraints go (a field of an object type), and the `extern tool` the parse
dropped leaves no `untyped-tool` warning behind (docs/reference/types.md "Constraints")."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source

TOOL = """\
extern tool user__score(x: text) -> int @range(0, 10)
stage s -> int {
  return user__score(x: "a")
}
"""


@pytest.mark.parametrize(
    ("src", "at", "written"),
    [
        (TOOL, (1, 41), "int @range(0, 10)"),
        (
            "type Score = int @range(0, 10)\nstage s -> int { return 1 }\n",
            (1, 18),
            "int @range(0, 10)",
        ),
        (
            'extern tool user__f(x: text @length(1, 3)) -> int\nstage s -> int { return user__f(x: "a") }\n',
            (1, 29),
            "text @length(1, 3)",
        ),
    ],
)
def test_a_misplaced_constraint_says_constraints_go_on_fields(src, at, written):
    result = check_source(src, "t.flow")
    (d,) = result.diagnostics
    assert d.code == "syntax-error"
    assert (d.span.line, d.span.column) == at
    assert d.message.endswith("is written after the type of a field of an object type, not here")
    assert f"`type Checked {{ value: {written} }}`" in d.hint


def test_the_dropped_extern_leaves_no_untyped_tool_warning():
    codes = [d.code for d in check_source(TOOL, "t.flow").diagnostics]
    assert codes == ["syntax-error"]
    fixed = TOOL.replace(" @range(0, 10)", "")
    assert check_source(fixed, "t.flow").diagnostics == []
