"""The statuses a run can end with are said the same way by the code (``RunStatus``), the
specification (docs/spec/RUNTIME.md §1, edited in place: docs/seeds/ is the source material it
was written from, not generated into it) and the reference (python-api.md, events.md).

Before: RUNTIME.md §1 listed ``ok|exited|error|aborted`` though a durable run ends
``cancelled`` after ``flowc cancel`` (docs/durable.md, the reference); nothing compared them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from agentflow.runtime.result import RunStatus

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_runtime_spec_section_1_lists_every_status_a_run_result_can_have():
    text = (DOCS / "spec" / "RUNTIME.md").read_text(encoding="utf-8")
    section = text.split("## 1. Execution", 1)[1].split("\n## ", 1)[0]
    listed = re.search(r"status: ([a-z|]+),", section)
    assert listed is not None, section
    assert listed.group(1).split("|") == list(get_args(RunStatus))


def test_the_reference_names_every_status_of_a_run_result():
    for page in ("python-api.md", "events.md"):
        text = (DOCS / "reference" / page).read_text(encoding="utf-8")
        row = next(
            line for line in text.splitlines() if re.match(r"\| `(status|run_finished)`", line)
        )
        for status in get_args(RunStatus):
            assert f"`{status}`" in row, (page, status)
