"""`flowc check`, `compile`, `run`, `test` and `fmt` on a `.flow` that imports
(docs/reference/programs.md "import"): the imported file is read relative to the importing one,
whatever the current directory; the plan holds the imported types and refers to no file."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from agentflow.cli import main

SHARED = """\
type Severity = "low" | "medium" | "high"
/// a reported problem
type Ticket { title: text, severity: Severity }
"""

MAIN = """\
import { Ticket, Severity } from "../common/tickets.flow"
input Ticket
stage triage -> Severity {
  return if input.severity == "high" then "high" else "low"
}

test "high stays high" {
  input { title: "t", severity: "high" }
  expect triage == "high"
}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "common").mkdir()
    (tmp_path / "flows").mkdir()
    (tmp_path / "common" / "tickets.flow").write_text(SHARED, encoding="utf-8")
    (tmp_path / "flows" / "triage.flow").write_text(MAIN, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # paths are relative to the importing file, not to here
    return tmp_path


def flowc(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_check_compile_and_run_a_flow_that_imports(project):
    flow = str(project / "flows" / "triage.flow")
    assert flowc("check", flow).exit_code == 0
    compiled = flowc("compile", flow, "--format", "json")
    assert compiled.exit_code == 0, compiled.output
    plan = json.loads(compiled.output)
    assert plan["input_schema"]["description"] == "a reported problem"
    assert "tickets.flow" not in compiled.output
    ran = flowc("run", flow, "--input", '{"title": "a", "severity": "medium"}')
    assert ran.exit_code == 0, ran.output
    assert ran.output.strip().splitlines()[-1] == '"low"'
    bad = flowc("run", flow, "--input", '{"title": "a", "severity": "urgent"}')
    assert bad.exit_code != 0  # the imported literal union is the input's contract


def test_check_reports_an_error_of_the_imported_file_at_the_import(project):
    (project / "common" / "tickets.flow").write_text(
        SHARED.replace("title: text", "title: txt"), encoding="utf-8"
    )
    result = flowc("check", str(project / "flows" / "triage.flow"))
    assert result.exit_code == 1
    assert "error[import-error]: `../common/tickets.flow` has 1 error" in result.output
    assert f"note: {project / 'common' / 'tickets.flow'}:3:22: error[unknown-type]" in (
        result.output
    )


def test_flowc_test_sees_a_change_of_the_imported_file(project):
    flow = str(project / "flows" / "triage.flow")
    first = flowc("test", flow)
    assert first.exit_code == 0 and "1 passed" in first.output
    # the imported type changes: the test's input no longer checks (nothing cached hides it)
    (project / "common" / "tickets.flow").write_text(
        SHARED.replace('"high"', '"severe"'), encoding="utf-8"
    )
    second = flowc("test", flow)
    assert second.exit_code == 1
    assert "cached" not in second.output


def test_fmt_keeps_imports_as_written(project):
    flow = project / "flows" / "triage.flow"
    flow.write_text(
        MAIN.replace("import { Ticket, Severity }", "import {Ticket,\n  Severity,}"),
        encoding="utf-8",
    )
    assert flowc("fmt", str(flow)).exit_code == 0
    # one name per line as written; a trailing comma closed on `}`'s line is dropped (trial2fix)
    assert flow.read_text(encoding="utf-8").startswith(
        'import {\n  Ticket,\n  Severity\n} from "../common/tickets.flow"\ninput Ticket\n'
    )


def test_serve_leaves_out_a_file_of_declarations_and_serves_its_importers(project):
    from agentflow.serve_flows import discover

    served = discover(project / "common")
    assert served.flows == {}
    assert served.problems == ["tickets.flow: not served: it has no stage (declarations only)"]
    served = discover(project / "flows")
    assert list(served.flows) == ["triage"] and served.problems == []
    assert served.flows["triage"].input_schema["properties"]["severity"] == {
        "enum": ["low", "medium", "high"]
    }
