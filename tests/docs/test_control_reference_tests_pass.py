"""The `test` blocks shown in docs/reference/control.md pass as written (the `loop` section's:
rounds answered in turn, the round count in the state, `loop_exhausted` when no round meets
`until`)."""

from __future__ import annotations

import re

from support.paths import DOCS

import agentflow


def test_the_control_reference_test_blocks_pass(tmp_path):
    text = (DOCS / "reference" / "control.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```flow\n(.*?)```", text, re.S) if 'test "' in b]
    assert len(blocks) >= 1
    for i, block in enumerate(blocks):
        (tmp_path / f"example{i}.flow").write_text(block, encoding="utf-8")
    report = agentflow.run_tests(tmp_path)
    assert report.ok, [(o.name, o.failures) for o in report.outcomes if not o.passed]
    assert report.passed >= 2
