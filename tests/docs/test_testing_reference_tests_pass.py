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


def test_the_reference_lists_the_codes_an_agent_stub_may_fail_with():
    from agentflow.compiler.check_errors import agent_error_codes

    text = (DOCS / "reference" / "testing.md").read_text(encoding="utf-8")
    section = text.split("### Making an agent fail", 1)[1].split("```flow", 1)[0]
    listed = re.split(r"\(the\s+list", section.split("can fail with:", 1)[1])[0]
    assert re.findall(r"`([a-z_]+)`", listed) == agent_error_codes()
