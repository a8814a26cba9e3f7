"""A plan's problems are diagnostics: ``flowc plan validate`` reports every one of them in one run
(structure, templates and tool names together, without follow-up problems of one mistake) and
renders them like ``flowc check`` does, as text, JSON or SARIF.

The rendered reports of the plans under ``tests/ir/plan_diagnostics/`` are pinned in the
snapshots beside them (``<plan>.txt``, ``.json``; the SARIF log, which lists every registered
rule, is checked by its results) through the ``golden`` fixture (tests/support/golden.py);
``pytest --update-golden`` rewrites them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow import api
from agentflow.cli import main
from agentflow.compiler.render import render_json, render_text
from agentflow.core.diagnostics import CODES, PLAN_CODES
from agentflow.errors import PlanLoadError

HERE = Path(__file__).parent / "plan_diagnostics"
CASES = sorted(p.name for p in HERE.glob("*.plan.yaml") if p.name != "clean.plan.yaml")


@pytest.fixture
def in_cases(monkeypatch):
    """Run from the cases' directory, so that the reports name the plan files relatively."""
    monkeypatch.chdir(HERE)
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def _renders(name: str) -> dict[str, str]:
    found = api.check_plan(name, config="flow.toml")
    return {
        "txt": render_text(found.diagnostics, found.sources),
        "json": render_json(found.diagnostics) + "\n",
    }


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("fmt", ["txt", "json"])
def test_plan_problems_render_to_the_golden_report(name, fmt, in_cases, golden):
    golden.check(HERE / f"{name.removesuffix('.plan.yaml')}.{fmt}", _renders(name)[fmt])


def test_one_run_reports_structure_templates_and_tools_together(in_cases):
    diags = api.check_plan("every_kind_of_problem.plan.yaml", config="flow.toml").diagnostics
    codes = {d.code for d in diags}
    assert {
        "plan-unknown-field",  # `retyr`, `elze`
        "plan-template-syntax",
        "plan-missing-field",
        "plan-unknown-tool",  # found although the structure has errors too
        "plan-unconfigured-server",
    } <= codes
    assert all(d.code in PLAN_CODES and d.code in CODES for d in diags)
    assert all(d.span.line > 0 for d in diags)
    hints = {d.message.split(": ", 1)[-1]: d.hint for d in diags}
    assert hints["unknown field `retyr`"] == "did you mean `retry`?"
    assert hints["unknown field `elze` in `decide` input"] == "did you mean `else`?"
    assert hints["unknown tool 'valu'"] == "did you mean `value`?"


def test_validate_exits_like_check_and_writes_each_format(in_cases):
    runner = CliRunner()
    res = runner.invoke(
        main, ["plan", "validate", "every_kind_of_problem.plan.yaml", "--config", "flow.toml"]
    )
    assert res.exit_code == 1
    assert res.stdout == (HERE / "every_kind_of_problem.txt").read_text(encoding="utf-8")
    assert res.stderr == "every_kind_of_problem.plan.yaml: 8 errors\n"
    res = runner.invoke(
        main,
        ["plan", "validate", "not_yaml.plan.yaml", "--config", "flow.toml", "--format", "json"],
    )
    assert res.exit_code == 1
    assert json.loads(res.stdout) == json.loads((HERE / "not_yaml.json").read_text())
    res = runner.invoke(
        main,
        ["plan", "validate", "not_yaml.plan.yaml", "--config", "flow.toml", "--format", "sarif"],
    )
    assert res.exit_code == 1
    (run,) = json.loads(res.stdout)["runs"]
    assert [r["ruleId"] for r in run["results"]] == ["plan-syntax"]
    assert run["results"][0]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 4,
        "startColumn": 52,
        "endLine": 4,
        "endColumn": 53,  # SARIF ends are exclusive
    }
    assert {"plan-syntax", "plan-unknown-field"} <= {
        r["id"] for r in run["tool"]["driver"]["rules"]
    }
    res = runner.invoke(main, ["plan", "validate", "clean.plan.yaml", "--config", "flow.toml"])
    assert (res.exit_code, res.stdout) == (0, "clean.plan.yaml: ok\n")


def test_plan_load_error_carries_the_diagnostics_for_api_callers(in_cases):
    with pytest.raises(PlanLoadError) as info:
        api.load("not_yaml.plan.yaml")
    err = info.value
    assert [d.code for d in err.diagnostics] == ["plan-syntax"]
    assert err.errors is err.diagnostics
    assert str(err) == str(err.diagnostics[0])
