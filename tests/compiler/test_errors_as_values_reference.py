"""The complete programs of docs/reference/errors-as-values.md check with no diagnostics."""

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
    assert len(programs) == 2
    for text in programs:
        result = check_source(text, "reference.flow")
        assert not result.diagnostics, [d.message for d in result.diagnostics]
