"""Regression tests for defects found by the session-3 audit of RUNTIME.md §3–§6, §10."""

from __future__ import annotations

import json

from support.chat_server import (
    TEST_API_KEY,
    answer,
    anthropic_message,
    anthropic_text,
)

from agentflow.runtime.agent import AgentSpec, run_agent
from agentflow.runtime.config import load_config
from agentflow.runtime.models.base import ToolSpec
from agentflow.runtime.models.router import ModelRouter


def _anthropic_router(chat_server, tmp_path) -> ModelRouter:
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "claude:claude-test"\n[providers.claude]\nkind = "anthropic"\n'
        f'base_url = "http://127.0.0.1:{chat_server.port}"\napi_key_env = "ANTHROPIC_API_KEY"\n'
        "max_retries = 0\n"
    )
    return ModelRouter(load_config(cwd=tmp_path, env={"ANTHROPIC_API_KEY": TEST_API_KEY}))


async def test_anthropic_round_trip_uses_the_generated_ids_and_drops_empty_text(
    chat_server, tmp_path
):
    """RUNTIME.md §10: missing call ids get stable generated ids, and every result is matched
    by id. With Anthropic the assistant turn is sent back from its raw blocks: their `tool_use`
    ids must be the generated ones (a missing or duplicate id left as it was matched no
    `tool_result`), and empty text blocks (which the API sends but refuses) are left out."""
    chat_server.script(
        [
            anthropic_message(
                [
                    {"type": "thinking", "thinking": "hm", "signature": "s=="},
                    {"type": "text", "text": ""},
                    {"type": "tool_use", "name": "look", "input": {"q": 1}},
                    {"type": "tool_use", "id": "dup", "name": "look", "input": {"q": 2}},
                    {"type": "tool_use", "id": "dup", "name": "look", "input": {"q": 3}},
                ],
                "tool_use",
            ),
            anthropic_text('{"answer": "ok"}'),
        ]
    )
    router = _anthropic_router(chat_server, tmp_path)

    async def call_tool(name, args, path):
        return {"q": args["q"]}

    try:
        result = await run_agent(
            AgentSpec(
                prompt="find",
                output_schema={"type": "object"},
                tools=[ToolSpec("look", "Look.", {"type": "object"})],
            ),
            router=router,
            call_tool=call_tool,
            emit=None,
            step_path="E1",
        )
    finally:
        await router.aclose()
    assert result["final"] is True
    assistant, results = chat_server.requests[1]["messages"][1:3]
    uses = [b for b in assistant["content"] if b["type"] == "tool_use"]
    answered = [b["tool_use_id"] for b in results["content"] if b["type"] == "tool_result"]
    assert [u["id"] for u in uses] == answered
    assert len(set(answered)) == 3 and all(answered)
    assert assistant["content"][0]["type"] == "thinking"  # kept, unchanged
    assert not any(b["type"] == "text" and not b["text"].strip() for b in assistant["content"])
    # each result is the one of its own call
    by_id = {b["tool_use_id"]: json.loads(b["content"]) for b in results["content"]}
    assert [by_id[u["id"]]["q"] for u in uses] == [1, 2, 3]


async def test_anthropic_empty_prompt_is_never_an_empty_text_block(chat_server, tmp_path):
    """An agent prompt that renders empty (missing data renders as empty text, PLAN_IR.md §3)
    must not produce a request the Messages API refuses (`text content blocks must be
    non-empty`)."""
    chat_server.script([anthropic_text('{"answer": "ok"}')])
    router = _anthropic_router(chat_server, tmp_path)
    try:
        await run_agent(
            AgentSpec(prompt="", output_schema={"type": "object"}),
            router=router,
            call_tool=None,
            emit=None,
            step_path="E1",
        )
    finally:
        await router.aclose()
    (first,) = chat_server.requests[0]["messages"]
    assert all(b["text"].strip() for b in first["content"] if b["type"] == "text")


STRICT_FLOW = """
use agent "a" as a
type Link {
  url: text @format("uri")
  day: text @format("date")
  file: path
  kind: "a" | "b" | int
}
stage s -> Link {
  let s = agent(a) {
    task "find"
    tools none
    expect Link
  }
  return s
}
"""


def _agent_contract(plan) -> dict:
    for step in plan["steps"]:
        if step["tool_name"] == "agent":
            return step["input"]["output_schema"]
    raise AssertionError("no agent step")


def test_strict_schema_is_one_openai_accepts():
    """RUNTIME.md §3/§10: the strict copy sent as `response_format` must be accepted by
    OpenAI's strict mode, which refuses `format` values it does not know (`'uri' is not a valid
    format`), `oneOf`, `allOf`, `not`; the contract (with its formats) is still validated."""
    import agentflow
    from agentflow.runtime.models.openai import strict_schema

    contract = _agent_contract(agentflow.compile_source(STRICT_FLOW, "s.flow").plan)
    strict = strict_schema(contract)
    assert strict is not None
    text = json.dumps(strict)
    assert '"uri"' not in text and "x-flow-type" not in text
    assert strict["properties"]["day"]["format"] == "date"  # a format strict mode knows stays
    one_of = {"type": "object", "properties": {"v": {"oneOf": [{"type": "string"}]}}}
    assert "oneOf" not in json.dumps(strict_schema(one_of))
    for refused in ({"allOf": [{"type": "string"}]}, {"not": {"type": "string"}}):
        assert strict_schema({"type": "object", "properties": {"v": refused}}) is None


async def test_templated_max_iterations_is_checked_not_coerced(chat_server, tmp_path):
    """PLAN_IR.md §6: `max_iterations` is an integer ≥ 1. A templated value that renders to
    2.5, true, a text or null is a `validation` error naming the value, never coerced
    (2.5 → 2 rounds, true → 1) nor a Python `int()` error."""
    from agentflow.api import run
    from agentflow.ir.loader import load_plan_text

    plan = load_plan_text(
        """
version: 1
name: t
input_schema: {type: object}
steps:
  - id: E1
    tool_name: agent
    input:
      prompt: hi
      max_iterations: "{{ input.n }}"
      tools: none
      output_schema: {type: object}
"""
    )
    config = load_config(chat_server.write_config(tmp_path), env={"SCRIPTED_API_KEY": "k"})
    for bad, shown in ((2.5, "2.5"), (True, "true"), ("x", '"x"'), (None, "null"), (0, "0")):
        chat_server.script([answer({})])
        result = await run(plan, {"n": bad}, config=config, workspace=tmp_path, shape_cache=False)
        assert result.status == "error", bad
        assert result.error["code"] == "validation"
        assert result.error["message"] == f"`max_iterations` must be an integer ≥ 1, got {shown}"
    chat_server.script([answer({})])
    result = await run(plan, {"n": 2.0}, config=config, workspace=tmp_path, shape_cache=False)
    assert result.status == "ok" and result.output["final"] is True


def test_newer_draft_keywords_are_enforced_not_skipped():
    """RUNTIME.md §3: the contract is validated, each failure named by its JSON path. Plans'
    schemas are checked as JSON Schema 2020-12, but fastjsonschema (drafts 4–7) silently
    ignores `prefixItems`, `dependentRequired`, `unevaluatedProperties`…: such a schema is
    validated by jsonschema alone, so the keyword is enforced."""
    from agentflow.runtime.extract import validate

    cases = [
        ({"type": "array", "prefixItems": [{"type": "string"}]}, [1], "$.x[0]:"),
        ({"type": "object", "dependentRequired": {"a": ["b"]}}, {"a": 1}, "$.x:"),
        (
            {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False},
            {"b": 1},
            "$.x:",
        ),
    ]
    for schema, bad, where in cases:
        contract = {"type": "object", "properties": {"x": schema}}
        errors = validate(contract, {"x": bad})
        assert errors and errors[0].startswith(where), (schema, errors)


def test_unknown_model_of_an_agent_profile_or_team_member_fails_at_load(tmp_path):
    """RUNTIME.md §6: a model reference in `[agents.X]` or a team member that names no role,
    named model or provider is a ConfigError with file:line at load, not a `validation` error
    when the agent's step runs (after earlier steps did their work); roles still need no
    model at load (`--replay` runs without one)."""
    import pytest

    from agentflow.errors import ConfigError

    base = '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
    bad = {
        '[agents.inv]\nmodel = "fsat"\n': ("flow.toml:5:1:", "[agents.inv] model", "'fsat'"),
        '[teams.dev]\nmain = "lead"\nmembers = { lead = {}, be = { model = "nope:x" } }\n': (
            "flow.toml:6:1:",
            "[teams.dev] member 'be' model",
            "provider 'nope'",
        ),
    }
    for extra, needles in bad.items():
        (tmp_path / "flow.toml").write_text(base + extra)
        with pytest.raises(ConfigError) as info:
            load_config(tmp_path / "flow.toml", env={})
        assert all(n in str(info.value) for n in needles), str(info.value)
    (tmp_path / "flow.toml").write_text(
        base + '[agents.inv]\nmodel = "chat"\n[agents.two]\nmodel = "local:m"\n'
    )
    config = load_config(tmp_path / "flow.toml", env={})  # no model at all: still loads
    assert config.agents["inv"].model == "chat"


async def test_second_repair_pass_works_on_the_first_passes_answer(chat_server, scripted_router):
    """RUNTIME.md §3: `repair_attempts` repair-role passes per invalid answer. A second pass
    that repeated the first request verbatim could only get the same reply (and replays the
    same cassette entry): it is shown the previous pass's answer and its errors."""
    schema = {
        "type": "object",
        "required": ["a", "b"],
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    }
    repair_requests = []

    def script(request):
        messages = request["messages"]
        if messages[0]["content"].startswith("You fix JSON"):
            repair_requests.append(messages[1]["content"])
            if len(repair_requests) == 1:
                return answer({"a": 1, "b": "2"})  # fixes a, not b
            return answer({"a": 1, "b": 2})
        return answer({"a": "1", "b": "2"})

    chat_server.script(script)
    result = await run_agent(
        AgentSpec(prompt="p", output_schema=schema, repair_attempts=2),
        router=scripted_router,
        call_tool=None,
        emit=None,
        step_path="E1",
    )
    assert result["output"] == {"a": 1, "b": 2} and result["iterations"] == 1
    first, second = repair_requests
    assert '"a": "1"' in first and "$.a" in first
    assert '"a": 1' in second and "$.a" not in second and "$.b" in second


def test_format_violations_are_all_reported_with_their_paths():
    """Contracts with `@format(...)`: every violation, each at its JSON path, in one wording."""
    from agentflow.runtime.extract import validate

    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {
            "url": {"type": "string", "format": "uri"},
            "when": {"type": "string", "format": "date-time"},
            "mail": {"type": "string", "format": "email"},
        },
    }
    errors = validate(schema, {"url": "not a uri", "when": "yesterday", "mail": "nope"})
    assert errors == [
        "$: 'a' is a required property",
        "$.mail: 'nope' is not a 'email'",
        "$.url: 'not a uri' is not a 'uri'",
        "$.when: 'yesterday' is not a 'date-time'",
    ]
    ok = {"a": 1, "url": "https://x.org/a", "when": "2026-11-30T10:00:00Z", "mail": "a@b.org"}
    assert validate(schema, ok) == []
