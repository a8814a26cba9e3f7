"""`flowc schema FILE TYPE` prints one type's contract; `flowc schema FILE --input` prints the
schema the run's input is validated against (the plan's `input_schema`)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from agentflow.api import compile_flow
from agentflow.cli import main

FLOW = """\
input Request
type Request {
  /// where to look
  dir: path
  limit: int? @range(1, 50)
}
type Out { n: int }
stage s -> Out { return { n: 1 } }
"""


def test_schema_input_prints_the_plans_input_schema(tmp_path):
    flow = tmp_path / "req.flow"
    flow.write_text(FLOW, encoding="utf-8")
    res = CliRunner().invoke(main, ["schema", str(flow), "--input"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)
    assert printed == compile_flow(flow).plan["input_schema"]
    assert printed["required"] == ["dir"]
    assert printed["properties"]["dir"]["description"] == "where to look"


def test_schema_input_of_a_flow_without_input_accepts_anything(tmp_path):
    flow = tmp_path / "free.flow"
    flow.write_text("stage s -> int { return 1 }\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["schema", str(flow), "--input"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == {"$schema": "https://json-schema.org/draft/2020-12/schema"}


def test_schema_inline_input_type(tmp_path):
    flow = tmp_path / "inline.flow"
    flow.write_text("input { xs: text[] }\nstage s -> int { return input.xs.count }\n")
    res = CliRunner().invoke(main, ["schema", str(flow), "--input"])
    assert res.exit_code == 0, res.output
    schema = json.loads(res.stdout)
    assert schema["properties"] == {"xs": {"type": "array", "items": {"type": "string"}}}
    assert schema["additionalProperties"] is False


def test_schema_wants_a_type_name_or_input_but_not_both(tmp_path):
    flow = tmp_path / "req.flow"
    flow.write_text(FLOW, encoding="utf-8")
    neither = CliRunner().invoke(main, ["schema", str(flow)])
    both = CliRunner().invoke(main, ["schema", str(flow), "Out", "--input"])
    assert neither.exit_code == both.exit_code == 2
    assert "either a TYPE_NAME or --input, not both" in both.output
    # neither given: it said "(not both)" too; now what to give
    assert "not both" not in neither.output
    assert (
        f"give the TYPE_NAME whose schema to print (flowc schema {flow} NAME), or --input for "
        "the schema of the run's input"
    ) in " ".join(neither.output.split())


def test_schema_input_of_a_flow_with_errors_reports_them(tmp_path):
    flow = tmp_path / "bad.flow"
    flow.write_text("input { dir: pth }\nstage s -> int { return 1 }\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["schema", str(flow), "--input"])
    assert res.exit_code == 1
    assert "unknown-type" in res.stderr


RELEASE = """\
type Finding { file: path }
type Decision { ship: bool, checks: Verdict, blockers: Finding[] }
extern type Handle
type Box { h: Handle, n: int }
stage s -> int { return 1 }
"""


def test_schema_of_a_type_holding_a_verdict_and_of_the_builtin_types(tmp_path):
    flow = tmp_path / "rel.flow"
    flow.write_text(RELEASE, encoding="utf-8")
    res = CliRunner().invoke(main, ["schema", str(flow), "Decision"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)
    assert printed["properties"]["checks"] == {"$ref": "#/$defs/Verdict"}
    assert printed["$defs"]["Verdict"]["required"] == ["passed", "failures"]
    for builtin in ("Verdict", "Error", "ErrorPlace"):
        res = CliRunner().invoke(main, ["schema", str(flow), builtin])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["$ref"] == f"#/$defs/{builtin}"


def test_schema_of_a_type_with_no_json_form_says_why_and_where(tmp_path):
    flow = tmp_path / "rel.flow"
    flow.write_text(RELEASE, encoding="utf-8")
    res = CliRunner().invoke(main, ["schema", str(flow), "Box"])
    assert res.exit_code == 1
    assert "field `Box.h`: `Handle` is an extern type (`extern type Handle`)" in res.stderr
    assert "no JSON form" in res.stderr
