"""The complete programs of docs/reference/errors-as-values.md check with no diagnostics; an
`Error`'s code is the literal union of the run-time error codes."""

from __future__ import annotations

import re

from support.paths import REPO

from agentflow.compiler.api import check_source

PAGE = REPO / "docs" / "reference" / "errors-as-values.md"


def _programs() -> list[str]:
    blocks = re.findall(r"```flow\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    return [b for b in blocks if "\nstage " in b]


def test_the_reference_programs_check_clean():
    programs = _programs()
    assert len(programs) == 5
    for text in programs:
        result = check_source(text, "reference.flow")
        assert not result.diagnostics, [d.message for d in result.diagnostics]


def test_an_error_code_compared_with_a_string_that_is_no_code_is_no_overlap():
    # `o.error.code` is optional (`Error?`): compared as its codes are, `null` aside
    source = """\
input { items: int[] }
extern tool user__score(x: int) -> number
stage codes -> bool[] {
  let outcomes = map input.items as x tolerate 1 { user__score(x: x) }
  return map outcomes as o { o.error.code == "time_out" }
}
"""
    found = [(d.code, d.span.line) for d in check_source(source, "codes.flow").diagnostics]
    assert found == [("no-overlap", 5)]
    clean = source.replace('"time_out"', '"timeout"')
    assert not check_source(clean, "codes.flow").diagnostics
