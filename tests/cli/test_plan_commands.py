"""`flowc plan validate`, `flowc plan fmt`, `flowc run --json` on plan files (issue #4)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from agentflow.cli import main

BAD = """\
version: 1
name: bad
steps:
  - id: E0
    toolName: map
    input:
      over: [1]
      do:
        tool_name: agent
        input:
          prompt: "x"
          outputSchema: {type: array}
          tools: []
          maxIterations: 0
  - id: E1
    tool_nmae: value
    input: {value: "{{ E2.x }}"}
  - id: E2
    tool_name: decide
    input:
      when: {value: 1, op: eqq, to: 1}
      then: {tool_name: map, input: {over: [], do: {tool_name: value, input: {value: 1}}}}
  - id: E0
    tool_name: value
    input: {value: 2}
"""

CAMEL = """\
version: 1
name: camel
inputSchema: {type: object}
steps:
  - id: E0
    toolName: value
    input: {value: "{{ input }}"}
  - id: E1
    toolName: agent
    input: {prompt: hi, outputSchema: {type: object}, maxIterations: 2, systemPrompt: be brief, tools: none}
"""

RUNNABLE = """\
version: 1
name: runnable
input_schema: {type: object, properties: {n: {type: integer}}, required: [n]}
steps:
  - {id: E0, tool_name: value, input: {value: "{{ 1..input.n }}"}}
  - id: E1
    tool_name: map
    input:
      over: "{{ E0 }}"
      concurrency: 2
      do: {tool_name: value, input: {value: "{{ item * 10 }}"}}
  - id: E2
    tool_name: exit
    input: {when: {expr: "E1.count > 5"}, status: error, code: failed, message: too many}
finish: {mode: output, output: {total: "{{ E1.count }}", items: "{{ E1 }}"}}
"""


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_validate_reports_every_error_with_file_line_col(cwd):
    (cwd / "bad.plan.yaml").write_text(BAD)
    res = invoke("plan", "validate", "bad.plan.yaml")
    assert res.exit_code == 1
    lines = [ln for ln in res.output.splitlines() if ln.startswith("bad.plan.yaml:")]
    text = "\n".join(lines)
    for expected in (
        "bad.plan.yaml:12:32: error[plan-invalid-schema]: "
        "steps[0].input.do.input.output_schema.type: `output_schema` must have `type: object`",
        "bad.plan.yaml:13:18: error[plan-invalid-value]: steps[0].input.do.input.tools: "
        "`tools: []` is refused",
        "bad.plan.yaml:14:26: error[plan-invalid-value]: "
        "steps[0].input.do.input.max_iterations: `max_iterations` must be ≥ 1",
        "bad.plan.yaml:16:5: error[plan-unknown-field]: steps[1].tool_nmae: unknown field "
        "`tool_nmae`",
        "bad.plan.yaml:17:24: error[plan-unknown-name]: steps[1].input.value: `E2` refers to a "
        "later step",
        "bad.plan.yaml:21:28: error[plan-invalid-value]: steps[2].input.when.op: unknown "
        "operator 'eqq'",
        "bad.plan.yaml:22:25: error[plan-invalid-body]: steps[2].input.then.tool_name: `map` "
        "cannot be a body",
        "bad.plan.yaml:23:9: error[plan-duplicate-id]: steps[3].id: duplicate step id `E0`",
    ):
        assert expected in text, expected
    assert "= hint: did you mean `tool_name`?" in res.output
    assert "= note: bad.plan.yaml:4:9: first used here" in res.output
    assert "Traceback" not in res.output


def test_validate_ok_and_catalog_resolution_with_config(cwd):
    (cwd / "p.plan.yaml").write_text(
        "version: 1\nname: p\nsteps:\n  - {id: E0, tool_name: linear__list, input: {}}\n"
        "  - id: E1\n    tool_name: agent\n"
        "    input: {prompt: x, output_schema: {type: object}, tools: [builtin__nope]}\n"
    )
    res = invoke("plan", "validate", "p.plan.yaml")
    assert res.exit_code == 1
    assert (
        "p.plan.yaml:4:25: error[plan-unconfigured-server]: step E0: tool 'linear__list' needs "
        "MCP server 'linear', which is not configured under [mcp.linear]" in res.output
    )
    assert "p.plan.yaml:7:63: error[plan-unknown-tool]: step E1: unknown tool 'builtin__nope'" in (
        res.output
    )
    (cwd / "flow.toml").write_text('[mcp.linear]\ncommand = "true"\n')
    (cwd / "p.plan.yaml").write_text(
        "version: 1\nname: p\nsteps:\n  - {id: E0, tool_name: linear__list, input: {}}\n"
    )
    res = invoke("plan", "validate", "p.plan.yaml", "--config", "flow.toml")
    assert res.exit_code == 0, res.output
    assert "p.plan.yaml: ok" in res.output


def test_fmt_normalises_camel_case_and_check_mode(cwd):
    path = cwd / "camel.plan.yaml"
    path.write_text(CAMEL)
    res = invoke("plan", "fmt", "--check", "camel.plan.yaml")
    assert res.exit_code == 1 and "would reformat" in res.output
    res = invoke("plan", "fmt", "camel.plan.yaml")
    assert res.exit_code == 0
    text = path.read_text()
    for camel, snake in (
        ("toolName", "tool_name"),
        ("outputSchema", "output_schema"),
        ("maxIterations", "max_iterations"),
        ("systemPrompt", "system_prompt"),
        ("inputSchema", "input_schema"),
    ):
        assert camel not in text and snake in text
    assert invoke("plan", "fmt", "--check", "camel.plan.yaml").exit_code == 0
    assert invoke("plan", "validate", "camel.plan.yaml").exit_code == 0


def test_run_json_prints_the_run_result(cwd):
    (cwd / "r.plan.yaml").write_text(RUNNABLE)
    res = invoke("run", "r.plan.yaml", "--input", '{"n": 3}', "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout[res.stdout.index("{") :])
    assert data["status"] == "ok"
    assert data["output"] == {"total": 3, "items": [10, 20, 30]}
    assert data["results"]["E1"] == [10, 20, 30] and data["results"]["E2"] is None
    assert data["usage"]["inferences"] == 0 and isinstance(data["duration_ms"], int)

    res = invoke("run", "r.plan.yaml", "--input", '{"n": 7}', "--json")
    assert res.exit_code == 1
    data = json.loads(res.stdout[res.stdout.index("{") :])
    assert data["status"] == "error"
    assert data["error"]["code"] == "failed" and data["error"]["step_path"] == "E2"
    assert "error[failed] at step E2: too many" in res.output


def test_run_refuses_a_plan_whose_tool_cannot_load(cwd):
    (cwd / "u.plan.yaml").write_text(
        "version: 1\nname: u\nsteps:\n  - {id: E0, tool_name: builtin__read_fil, input: {}}\n"
    )
    res = invoke("run", "u.plan.yaml")
    assert res.exit_code == 1
    assert "u.plan.yaml:4:25" in res.output and "builtin__read_fil" in res.output
    assert "Traceback" not in res.output


MISSPELT = """\
version: 1
name: hello
input_schema: {type: object, properties: {dir: {type: string}}, required: [dir]}
steps:
  - id: E0
    tool_name: builtin__grep
    input: { patern: TODO, path: "{{ input.dir }}" }
  - id: E1
    tool_name: user__shout
    input: { txt: hi }
finish: {mode: output, output: "{{ E0 }}"}
"""

SHOUT = "def shout(text: str) -> str:\n    return text.upper()\n"


def test_validate_runs_the_load_checks_run_makes(cwd):
    # a CI gate on `plan validate` passes no plan `flowc run` refuses at load: the same
    # arguments checked against the builtin tools and the config's user tools, every problem
    (cwd / "p.plan.yaml").write_text(MISSPELT)
    (cwd / "tools.py").write_text(SHOUT)
    (cwd / "tools.toml").write_text('[tools]\nmodules = ["tools"]\n')
    found = invoke("plan", "validate", "p.plan.yaml", "--config", "tools.toml")
    assert found.exit_code == 1
    expected = [
        "p.plan.yaml:7:12: error[plan-missing-field]: step E0: `builtin__grep` needs argument "
        "`pattern`",
        "p.plan.yaml:7:22: error[plan-unknown-field]: step E0: `builtin__grep` has no parameter "
        "`patern` (parameters: pattern, path, glob, max_results, ignore_case)",
        "p.plan.yaml:10:12: error[plan-missing-field]: step E1: `user__shout` needs argument "
        "`text`",
        "p.plan.yaml:10:19: error[plan-unknown-field]: step E1: `user__shout` has no parameter "
        "`txt` (parameters: text)",
    ]
    assert [ln for ln in found.output.splitlines() if ": error[" in ln] == expected
    ran = invoke("run", "p.plan.yaml", "--config", "tools.toml", "--input", '{"dir": "."}')
    assert ran.exit_code == 1
    for line in expected:  # run refuses it for the same reasons, as the same text
        assert line.split(": error[", 1)[1].split("]: ", 1)[1] in ran.output
    # the flow.toml found from the current directory, as `flowc run` finds it
    (cwd / "flow.toml").write_text('[tools]\nmodules = ["tools"]\n')
    found = invoke("plan", "validate", "p.plan.yaml")
    assert [ln for ln in found.output.splitlines() if ": error[" in ln] == expected
    fixed = MISSPELT.replace("patern", "pattern").replace("txt", "text")
    (cwd / "p.plan.yaml").write_text(fixed)
    assert invoke("plan", "validate", "p.plan.yaml").output.strip() == "p.plan.yaml: ok"
