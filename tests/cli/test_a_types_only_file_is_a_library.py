"""A `.flow` file with no stage is a library (docs/reference/programs.md "Libraries"): types for
other flows to import, never a plan. `flowc compile` writes nothing for it, `flowc run` (and
`agentflow.load`) refuse it saying what to run instead, and the plans directory's catalog leaves
it out — where it used to be a `plan__NAME` tool that returned `null`."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import agentflow
from agentflow.cli import main
from agentflow.errors import NotAPlan
from agentflow.runtime.config import load_config

TYPES = """\
/// a reported problem
type Ticket { title: text, severity: "low" | "high" }
"""

TRIAGE = """\
flow triage "Triage a ticket"
import { Ticket } from "./types.flow"
input Ticket
stage rank -> int { return if input.severity == "high" then 1 else 2 }
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "types.flow").write_text(TYPES, encoding="utf-8")
    (plans / "triage.flow").write_text(TRIAGE, encoding="utf-8")
    (tmp_path / "flow.toml").write_text("[tools]\nentry_points = false\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def flowc(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_compile_writes_no_plan_for_a_library(project):
    out = project / "types.yaml"
    r = flowc("compile", "plans/types.flow", "-o", str(out))
    assert r.exit_code == 0, r.output
    assert not out.exists()
    assert r.stderr.strip() == (
        "plans/types.flow: a library (types only, no stage): no plan to write — its types are "
        "compiled into each flow that imports them"
    )
    r = flowc("compile", "plans/types.flow")
    assert (r.exit_code, r.stdout) == (0, "")


def test_run_of_a_library_says_what_it_is_and_which_flow_to_run(project):
    r = flowc("run", "plans/types.flow", "--input", "{}")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr.strip() == (
        "error: plans/types.flow has no stage: it is a library of types for other flows to "
        "import, not a plan to run; run the flow that imports it: `flowc run plans/triage.flow`"
    )
    # with no flow importing it, the message says how to use it
    (project / "plans" / "triage.flow").unlink()
    r = flowc("run", "plans/types.flow")
    assert r.exit_code == 2
    assert r.stderr.strip().endswith(
        'run a flow that imports it (`import { Ticket } from "./types.flow"`), or add a `stage` '
        "to make it a flow"
    )
    for command in ("cost", "graph"):  # no plan: no cost, no graph
        r = flowc(command, "plans/types.flow")
        assert r.exit_code == 2 and "has no stage: it is a library" in r.stderr, command
    with pytest.raises(NotAPlan, match="has no stage: it is a library"):
        agentflow.load(project / "plans" / "types.flow")


def test_the_plans_directory_leaves_a_library_out(project):
    catalog = agentflow.build_catalog(load_config(project / "flow.toml", env={}))
    assert catalog.get("plan__triage") is not None
    assert catalog.get("plan__types") is None
    r = flowc("tools")
    assert r.exit_code == 0, r.output
    assert "plan__triage" in r.stdout and "plan__types" not in r.stdout


def test_gen_python_makes_no_client_of_a_library(project, tmp_path):
    out = tmp_path / "clients"
    r = flowc("gen", "python", "plans", "-o", str(out))
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == ["triage.py"]
    assert "plans/types.flow: a library (types only, no stage): no client" in r.stderr
    assert "class Ticket" in (out / "triage.py").read_text(encoding="utf-8")
