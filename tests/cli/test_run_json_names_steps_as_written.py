"""``flowc run --json`` keys ``results`` by compiled step ids (``E0``), which the Python API
documents; ``steps`` names each of them as the `.flow` writes it — its label, stage and place
(a new user's trial: `"results": {"E0": …, "E1": …}` named nothing they wrote;
docs/reference/cli.md "flowc run --json")."""

from __future__ import annotations

import json

from click.testing import CliRunner

from agentflow import api
from agentflow.cli import main

FLOW = """\
type Choice = "ship" | "hold"
input { n: int }
stage double -> int { return input.n * 2 }
stage approve -> Choice {
  let ok = ask "Ship ${double}?" expect Choice
  return ok
}
"""


def test_json_output_names_each_result_as_the_flow_writes_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.flow").write_text(FLOW)
    args = ["run", "a.flow", "--input", '{"n": 2}', "--answer", "ok=hold", "--json"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["results"] == {"E0": "hold"}  # unchanged: the API's shape
    assert data["steps"] == {
        "E0": {"label": "approve › ok = ask", "stage": "approve", "source": "a.flow:5:12"}
    }


def test_a_hand_written_plans_bare_steps_have_no_names(tmp_path):
    plan = tmp_path / "p.plan.yaml"
    plan.write_text(
        "version: 1\nname: p\nsteps:\n- id: A\n  tool_name: builtin__list_dir\n  input: {}\n"
    )
    result = api.run_sync(str(plan), {}, workspace=tmp_path)
    assert result.ok and "A" in result.results
    assert result.steps == {} and "steps" not in result.to_dict()
