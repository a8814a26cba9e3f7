"""The `test` blocks shown in docs/reference/expressions.md (the conditional expression, library
calls) pass as written."""

from __future__ import annotations

import re

from support.paths import DOCS

import agentflow


def test_the_expression_reference_test_blocks_pass(tmp_path):
    text = (DOCS / "reference" / "expressions.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```flow\n(.*?)```", text, re.S) if 'test "' in b]
    assert len(blocks) >= 2
    for i, block in enumerate(blocks):
        (tmp_path / f"example{i}.flow").write_text(block, encoding="utf-8")
    report = agentflow.run_tests(tmp_path)
    assert report.ok, [(o.name, o.failures) for o in report.outcomes if not o.passed]
    assert report.passed >= 3
