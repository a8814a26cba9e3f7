"""Uses the generated client of examples/bug-triage.flow."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bug_triage import BugReport, ChangeResult, Triage, bug_triage_stages, run_bug_triage_sync


def main(examples: Path) -> Triage:
    report = BugReport.model_validate_json((examples / "bug-report.json").read_text())
    result = run_bug_triage_sync(
        report,
        workspace=examples / "workspace",
        replay=examples / "bug-triage.cassette.jsonl",
        config=examples / "flow.toml",
        answers={},  # every option of agentflow.run is one of the function's
        on_start=print,
        shape_cache=False,
    )
    assert result.ok, result.error
    changes: list[ChangeResult] = result.output or []
    assert result.output_or_raise() == changes  # typed list[ChangeResult], never None
    print(result.usage["inferences"], result.usage["by_role"])  # typed: a Usage
    print([change.owner for change in changes])
    triage = bug_triage_stages(result).plan
    assert triage is not None
    print(triage.severity, [item.owner for item in triage.work])
    return triage


def main_from_a_dict(examples: Path) -> list[str]:
    """The input given as a plain dict (validated into ``BugReport`` by the client)."""
    report: dict[str, Any] = json.loads((examples / "bug-report.json").read_text())
    result = run_bug_triage_sync(
        report,
        workspace=examples / "workspace",
        replay=examples / "bug-triage.cassette.jsonl",
        config=examples / "flow.toml",
        shape_cache=False,
    )
    return [change.owner for change in result.output_or_raise()]


if __name__ == "__main__":
    main(Path(sys.argv[1]))
