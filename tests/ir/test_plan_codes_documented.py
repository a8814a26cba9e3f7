"""Every plan diagnostic code (``plan-*``) has a section in docs/diagnostics.md with a fix, and the
YAML example of the section, validated as a plan file, reports that code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentflow import api
from agentflow.core.diagnostics import PLAN_CODES

DOC = Path(__file__).resolve().parents[2] / "docs" / "diagnostics.md"
#: codes whose cause is not a short plan file: an unreadable file, 200 levels of nesting, and
#: `flowc plan fmt` on a .json plan with comments
NO_EXAMPLE = {"plan-unreadable", "plan-too-deep", "plan-not-formattable"}


def _sections() -> dict[str, str]:
    parts = re.split(r"^## `([a-z0-9-]+)`\s*$", DOC.read_text(encoding="utf-8"), flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def test_every_plan_code_has_a_section_with_a_fix():
    sections = _sections()
    for code in sorted(PLAN_CODES):
        assert code in sections, f"docs/diagnostics.md lacks a section for {code}"
        assert "Fix:" in sections[code], code
        assert ("```yaml" in sections[code]) is (code not in NO_EXAMPLE), code


@pytest.mark.parametrize("code", sorted(PLAN_CODES - NO_EXAMPLE))
def test_documented_plan_example_reports_its_code(code, tmp_path):
    example = re.search(r"```yaml\n(.*?)```", _sections()[code], flags=re.S).group(1)
    (tmp_path / "flow.toml").write_text("# no MCP servers\n", encoding="utf-8")
    plan = tmp_path / f"{code}.plan.yaml"
    plan.write_text(example, encoding="utf-8")
    found = api.check_plan(plan, config=tmp_path / "flow.toml").diagnostics
    assert code in {d.code for d in found}, [str(d) for d in found]
