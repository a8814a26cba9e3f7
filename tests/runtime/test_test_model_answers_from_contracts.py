"""The built-in test model (`flowc run --model test`, provider kind "test"): answers every agent
with values generated from its contract — valid, deterministic per seed, no network, no key."""

from __future__ import annotations

import asyncio
import json
import os
import random
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.compiler import types as T
from agentflow.compiler.api import check_source
from agentflow.compiler.contracts import contract_for
from agentflow.runtime.models.base import ChatRequest, Message, ToolSpec
from agentflow.runtime.models.test_model import TestModel, generate_value

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

TYPES = """
flow contracts "types to generate"
type Severity = "low" | "medium" | "high"
type Tree { label: text, children: Tree[] }
type Finding {
  title: text @length(3, 40)
  severity: Severity
  score: int @range(1, 5)
  ratio: number
  when: duration?
  tags: text[] @length(0, 3)
  ticket: text @pattern("^[A-Z]{2,4}-[0-9]+$")
  note: text?
  done: bool
}
type Report { findings: Finding[], tree: Tree, total: int | null }
stage s -> Report {
  return { findings: [], tree: { label: "x", children: [] }, total: null }
}
"""


def contract(name: str) -> dict:
    result = check_source(TYPES, "contracts.flow")
    assert result.ok, [d.message for d in result.errors]
    return contract_for(T.NamedRef(name), result.env)


@pytest.mark.parametrize("name", ["Finding", "Report", "Tree", "Severity"])
def test_generated_values_conform_to_the_compiled_contract(name):
    schema = contract(name)
    for seed in range(60):
        value = generate_value(schema, random.Random(seed))
        jsonschema.validate(value, schema)


def test_a_pattern_is_generated_from_the_regular_expression_itself():
    schema = contract("Finding")
    tickets = {generate_value(schema, random.Random(seed))["ticket"] for seed in range(20)}
    assert all(__import__("re").fullmatch(r"[A-Z]{2,4}-[0-9]+", t) for t in tickets)
    assert len(tickets) > 5  # drawn, not one canned string


def test_literal_unions_and_optional_fields_vary_with_the_seed():
    schema = contract("Finding")
    values = [generate_value(schema, random.Random(seed)) for seed in range(40)]
    assert {v["severity"] for v in values} == {"low", "medium", "high"}
    assert any("note" in v for v in values) and any("note" not in v for v in values)


def request(schema, text="Review this.", tools=()):
    return ChatRequest(
        messages=[Message(role="user", content=text)], tools=list(tools), response_schema=schema
    )


def test_answers_are_deterministic_per_seed_and_request():
    schema = contract("Report")
    first = asyncio.run(TestModel(seed=1).chat(request(schema)))
    again = asyncio.run(TestModel(seed=1).chat(request(schema)))
    other = [asyncio.run(TestModel(seed=s).chat(request(schema))).text for s in range(2, 8)]
    assert first.text == again.text
    assert any(text != first.text for text in other)
    assert first.usage == {"input_tokens": 0, "output_tokens": 0}
    jsonschema.validate(json.loads(first.text), schema)


def test_with_call_tools_each_offered_tool_is_called_once_before_the_answer():
    tool = ToolSpec(
        name="builtin__read_file",
        description="read",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}, "offset": {"type": "integer", "minimum": 1}},
            "required": ["path"],
        },
    )
    model = TestModel(seed=0, call_tools=True)
    req = request(
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
        tools=[tool],
    )
    reply = asyncio.run(model.chat(req))
    assert [c.name for c in reply.tool_calls] == ["builtin__read_file"]
    arguments = json.loads(reply.tool_calls[0].arguments)
    jsonschema.validate(arguments, tool.input_schema)
    req.messages += [
        reply.to_message(),
        Message(role="tool", content="text", tool_call_id="test_0"),
    ]
    answer = asyncio.run(model.chat(req))
    assert not answer.tool_calls and json.loads(answer.text)["ok"] in (True, False)


def no_model_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}


def test_flowc_run_with_the_test_model_needs_no_key_and_answers_the_agent(tmp_path, monkeypatch):
    work = tmp_path / "w"
    work.mkdir()
    (work / "a.py").write_text("# TODO: one\n# TODO: two\n")
    monkeypatch.chdir(tmp_path)
    env = no_model_env()
    result = CliRunner().invoke(
        main,
        [
            "run",
            str(EXAMPLES / "first.flow"),
            "--model",
            "test:7",
            "--json",
            "--input",
            '{"dir": "w"}',
        ],
        env={k: None for k in os.environ if k not in env},
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "ok"
    assert set(data["output"]) == {"top", "count"} and isinstance(data["output"]["count"], int)
    # the test model answers every agent whatever its profile: no "default profile" warning
    assert "has no [agents.helper] profile" not in result.stderr


def test_a_provider_of_kind_test_in_flow_toml_answers_like_the_option(tmp_path, monkeypatch):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "a.py").write_text("# TODO: one\n")
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "fake:any"\n[providers.fake]\nkind = "test"\nseed = 3\n'
    )
    # the flow beside it: a run reads the flow.toml of the flow's directory (or above), not
    # the current directory's (docs/reference/configuration.md "Which flow.toml")
    (tmp_path / "first.flow").write_text((EXAMPLES / "first.flow").read_text())
    monkeypatch.chdir(tmp_path)
    args = ["run", "first.flow", "--json", "--input", '{"dir": "w"}']
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    # configured models: a profile would pick one, so its absence is said
    assert "has no [agents.helper] profile; running with the default profile" in first.stderr
    again = CliRunner().invoke(main, args)
    assert json.loads(first.stdout)["output"] == json.loads(again.stdout)["output"]


def test_an_unknown_model_option_is_a_clear_error_without_traceback(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main, ["run", str(EXAMPLES / "first.flow"), "--model", "gpt-9", "--input", '{"dir": "."}']
    )
    assert result.exit_code == 2  # a usage error, before anything runs
    assert "built-in test model" in result.stderr and "Traceback" not in result.output
    clash = CliRunner().invoke(
        main, ["run", str(EXAMPLES / "first.flow"), "--model", "test", "--replay", __file__]
    )
    assert clash.exit_code == 2 and "--model cannot be used with" in clash.stderr
