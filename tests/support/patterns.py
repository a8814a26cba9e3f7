"""The pattern examples (examples/patterns/*.flow) as the suite and
scripts/record_pattern_cassettes.py run them: every ``.flow`` there, its input (the ``input`` of
its first ``test`` block that has one, a case table's first case included), its cassette
(``NAME.cassette.jsonl`` beside it) and the folder's ``flow.toml``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentflow.compiler.api import check_file
from agentflow.runtime.expressions import evaluate
from support.paths import EXAMPLES

PATTERNS_DIR = EXAMPLES / "patterns"
CONFIG = PATTERNS_DIR / "flow.toml"


def patterns() -> list[Path]:
    """Every pattern program, by name."""
    return sorted(PATTERNS_DIR.glob("*.flow"))


def cassette(flow: Path) -> Path:
    """Where the recorded model exchanges of ``flow`` are kept."""
    return flow.with_suffix(".cassette.jsonl")


def pattern_input(flow: Path) -> Any:
    """The run input of ``flow``: its first ``test`` block's ``input`` (with the first case of a
    ``map [cases] as case`` test); ``{}`` when no test gives one."""
    result = check_file(flow)
    assert not result.errors, [d.message for d in result.errors]
    for t in result.tests:
        if not t.inputs:
            continue
        scope = {}
        if t.cases is not None and t.case is not None:
            scope = {t.case.name: evaluate(t.cases, {})[0]}
        return evaluate(t.inputs[0].value, scope)
    return {}
