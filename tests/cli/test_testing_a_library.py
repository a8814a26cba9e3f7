"""`flowc test` of a `.flow` library (types only, no stage: docs/reference/programs.md
"Libraries"): its `test` blocks run as any file's do, and a library with none exits 5 with a
note naming where its types are tested — a flow near it that imports it, else its own `test`
blocks (docs/reference/testing.md "Running")."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.cli import main

TYPES = 'type Severity = "low" | "high"\ntype Ticket { title: text, severity: Severity }\n'
TRIAGE = (
    'import { Severity } from "./types.flow"\ninput { s: Severity }\n'
    "stage t -> Severity {\n  return input.s\n}\n"
)


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the cache (.flowc-cache) and the paths shown: from here


def test_a_librarys_test_blocks_run(tmp_path: Path) -> None:
    (tmp_path / "types.flow").write_text(
        TYPES + 'test "severities" map ["low", "high"] as case {\n'
        "  expect len(case) > 2\n  expect output == null\n}\n"
    )
    result = CliRunner().invoke(main, ["test", "--no-cache", "types.flow"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "2 passed, 0 failed", result.output


def test_a_library_without_tests_says_where_its_types_are_tested(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "types.flow").write_text(TYPES)
    result = CliRunner().invoke(main, ["test", "lib/types.flow"])
    assert result.exit_code == 5, result.output
    assert result.output == (
        "no test blocks in 1 .flow file(s)\n"
        "note: lib/types.flow is a library (types only, no stage): a `test` block written in "
        "it runs as any file's does\n"
    )
    (lib / "triage.flow").write_text(TRIAGE)
    result = CliRunner().invoke(main, ["test", "lib/types.flow"])
    assert result.exit_code == 5, result.output
    assert result.output.splitlines()[1] == (
        "note: lib/types.flow is a library (types only, no stage): the tests of the flows that "
        "import it use its types: `flowc test lib/triage.flow`"
    )
    # a flow without tests is no library: no note
    result = CliRunner().invoke(main, ["test", "lib/triage.flow"])
    assert result.output == "no test blocks in 1 .flow file(s)\n"
