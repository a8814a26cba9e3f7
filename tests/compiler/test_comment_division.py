"""`comment-looks-like-division` (docs/diagnostics.md): Python's `a // b` in `.flow`, where `//`
starts a comment. The golden tests/compiler/check/comment_division.flow pins the messages; these
pin the hint, the span, and the language server's incremental check reporting the same."""

from __future__ import annotations

import pytest

from agentflow.compiler.api import check_source
from agentflow.lsp.analysis import analyze
from agentflow.lsp.incremental import IncrementalParser

TEXT = "input { n: int }\nstage half -> int {\n  let h = input.n // 2\n  return h\n}\n"


def _warnings(text: str) -> list[tuple[int, int, int, str, str | None]]:
    result = check_source(text, "h.flow")
    return [
        (d.span.line, d.span.column, d.span.end_column, d.message, d.hint)
        for d in result.diagnostics
        if d.code == "comment-looks-like-division"
    ]


def test_a_divisor_after_an_operand_warns_at_the_slashes_with_floor_as_the_hint():
    assert _warnings(TEXT) == [
        (
            3,
            19,
            21,
            "`// 2` is a comment, not a division: `//` starts a comment in `.flow`",
            "integer division is `floor(a / b)` (`floor(input.n / 2)`); if it is a comment, "
            "put it on a line of its own or start it with words",
        )
    ]


@pytest.mark.parametrize(
    "comment",
    ["// 3 attempts", "// the count", "// TODO", '// "quoted"', "// 90s", "// n", "// -- note"],
)
def test_a_comment_that_reads_as_words_or_a_name_does_not_warn(comment: str):
    assert _warnings(TEXT.replace("// 2", comment)) == []


def test_a_comment_on_a_line_of_its_own_or_after_a_brace_does_not_warn():
    text = "input { n: int }\n// 2\nstage half -> int { // 2\n  return input.n\n}\n"
    assert _warnings(text) == []


def test_a_slash_slash_inside_a_string_is_not_a_comment():
    text = 'stage s -> text {\n  return "http://example.com" + "x"\n}\n'
    assert _warnings(text) == []


def test_the_language_servers_incremental_check_reports_it_too():
    parser = IncrementalParser("h.flow")
    for text in (TEXT, TEXT.replace("return h", "return h + 1")):
        found = [d.code for d in analyze(text, "h.flow", parser).result.diagnostics]
        assert found == ["comment-looks-like-division"]
