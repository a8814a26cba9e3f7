"""Programs written straight from the specification (docs/spec/LANGUAGE.md, docs/reference/)
check clean, compile to a plan that validates (and loads again from its YAML), and run to the
values the specification says: each file's `test` blocks pin those values and run with the test
model and stubbed answers (docs/reference/testing.md), with no network."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentflow import api
from agentflow.flowtest import run_tests
from agentflow.ir.loader import load_plan_text

PROGRAMS = sorted((Path(__file__).parent / "spec_programs").glob("*.flow"))


def test_there_are_spec_programs():
    assert len(PROGRAMS) >= 8


@pytest.mark.parametrize("file", PROGRAMS, ids=lambda p: p.stem)
def test_spec_program_checks_compiles_and_runs_as_specified(file):
    source = file.read_text(encoding="utf-8")
    compiled = api.compile_source(source, file.name)  # check clean, lower, validate the plan
    assert compiled.check.errors == []
    load_plan_text(compiled.to_yaml(), file.name.replace(".flow", ".plan.yaml"))
    report = run_tests([file])
    assert report.outcomes, f"{file.name} has no test blocks"
    failed = [(o.name, o.failures) for o in report.outcomes if not o.passed]
    assert failed == [], failed
