"""The `test` blocks shown in docs/reference/testing.md pass as written (those that need no
file beside them: the `replay` example names a cassette the reader records)."""

from __future__ import annotations

import re

from support.paths import DOCS

import agentflow


def test_the_reference_test_blocks_pass(tmp_path):
    text = (DOCS / "reference" / "testing.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```flow\n(.*?)```", text, re.S) if 'test "' in b]
    runnable = [b for b in blocks if "replay " not in b]
    assert len(runnable) >= 3
    for i, block in enumerate(runnable):
        (tmp_path / f"example{i}.flow").write_text(block, encoding="utf-8")
    report = agentflow.run_tests(tmp_path)
    assert report.ok, [(o.name, o.failures) for o in report.outcomes if not o.passed]
    assert report.passed >= 6
