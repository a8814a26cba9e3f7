"""What the provider adapters send: the contract once, a byte-identical prefix across rounds,
strict schemas providers accept, tool names ≤ 64, reasoning options, Anthropic caching."""

from __future__ import annotations

import json

from support.chat_server import (
    TEST_API_KEY,
    answer,
    anthropic_message,
    anthropic_text,
    status,
    system_text,
    tool_calls,
    tool_use,
)

from agentflow.runtime.agent import AgentSpec, run_agent
from agentflow.runtime.config import load_config
from agentflow.runtime.models.base import ChatRequest, Message, ToolSpec, wire_tool_name
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.openai import strict_schema
from agentflow.runtime.models.router import ModelRouter

FAST = RetryPolicy(max_retries=2, base=0.001, cap=0.002)

CONTRACT = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["severity", "title"],
    "additionalProperties": False,
    "properties": {
        "severity": {"enum": ["low", "high"], "x-flow-type": "Severity"},
        "title": {"type": "string"},
        "note": {"type": "string"},
    },
}


def router_for(server, tmp_path, kind="openai", options="", env_extra=None):
    (tmp_path / "flow.toml").write_text(
        "[models]\n"
        'default = "m"\n'
        "[models.named.m]\n"
        'provider = "p"\n'
        'model = "test-model"\n'
        f"{options}\n"
        "[providers.p]\n"
        f'kind = "{kind}"\n'
        f'base_url = "{server.url}"\n'
        'api_key_env = "K"\n'
    )
    config = load_config(tmp_path / "flow.toml", env={"K": TEST_API_KEY, **(env_extra or {})})
    return ModelRouter(config, retry=FAST)


async def agent(router, tools=(), emit=None, **kw):
    async def call_tool(name, args, path):
        return {"ok": name}

    return await run_agent(
        AgentSpec(prompt="Triage it.", output_schema=CONTRACT, tools=list(tools), **kw),
        router=router,
        call_tool=call_tool,
        emit=emit,
        step_path="E1",
    )


LOOK = ToolSpec("look", "Look.", {"type": "object", "properties": {"q": {"type": "string"}}})


async def test_contract_is_sent_once_as_compact_text_and_the_prefix_never_changes(
    chat_server, tmp_path
):
    chat_server.script(
        [
            tool_calls(("look", {"q": "a"})),
            tool_calls(("look", {"q": "b"})),
            answer({"severity": "low", "title": "t"}),
        ]
    )
    router = router_for(chat_server, tmp_path)
    try:
        result = await agent(router, tools=[LOOK])
    finally:
        await router.aclose()
    assert result["final"] is True
    requests = chat_server.requests
    system = requests[0]["messages"][0]["content"]
    assert system.count('"required"') == 1  # the contract, once …
    assert "x-flow-type" not in system and "$schema" not in system  # … without annotations …
    assert "\n  " not in system  # … and not indented
    assert "response_format" not in requests[0]
    # everything before the conversation is byte-identical in every round
    prefix = [json.dumps([r["messages"][:2], r["tools"]], sort_keys=True) for r in requests]
    assert len(set(prefix)) == 1
    # and each follow-up starts with the whole previous request
    for before, after in zip(requests, requests[1:], strict=False):
        assert after["messages"][: len(before["messages"])] == before["messages"]


async def test_native_output_sends_the_contract_only_as_response_format(chat_server, tmp_path):
    chat_server.script([answer({"severity": "high", "title": "t"})])
    router = router_for(chat_server, tmp_path, options="structured_output = true")
    try:
        await agent(router, tools=[LOOK])
    finally:
        await router.aclose()
    request = chat_server.requests[0]
    assert "JSON Schema" not in request["messages"][0]["content"]
    schema = request["response_format"]["json_schema"]["schema"]
    # a literal union keeps its type (OpenAI: "schema must have a 'type' key")
    assert schema["properties"]["severity"] == {"type": "string", "enum": ["low", "high"]}
    assert schema["properties"]["note"] == {"type": ["string", "null"]}
    # a tool whose schema strict mode would change (an optional field) is not marked strict
    assert "strict" not in request["tools"][0]["function"]


def test_literal_unions_of_numbers_and_mixed_scalars_get_their_types():
    schema = {
        "type": "object",
        "properties": {"n": {"enum": [1, 2.5]}, "m": {"enum": ["a", None]}, "c": {"const": True}},
        "required": ["n", "m", "c"],
    }
    props = strict_schema(schema)["properties"]
    assert props["n"]["type"] == "number" and props["m"]["type"] == ["string", "null"]
    assert props["c"] == {"type": "boolean", "const": True}


async def test_a_tool_already_strict_is_sent_with_strict_true(chat_server, tmp_path):
    chat_server.script([answer({"severity": "high", "title": "t"})])
    router = router_for(chat_server, tmp_path, options="structured_output = true")
    strict_tool = ToolSpec(
        "fetch",
        "Fetch.",
        {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
    )
    try:
        await agent(router, tools=[strict_tool])
    finally:
        await router.aclose()
    function = chat_server.requests[0]["tools"][0]["function"]
    assert function["strict"] is True
    assert function["parameters"]["additionalProperties"] is False


async def test_a_rejected_schema_is_sent_again_once_as_prompt_text_with_a_warning(
    chat_server, tmp_path
):
    rejection = {
        "error": {
            "message": "Invalid schema for response_format 'output': schema must have a 'type' key.",
            "type": "invalid_request_error",
            "param": "response_format",
            "code": None,
        }
    }
    chat_server.script(
        [status(400, rejection), answer({"severity": "x", "title": "t"}), answer({"title": "t"})]
    )
    router = router_for(chat_server, tmp_path, options="structured_output = true")
    warnings = []
    router.on_event = lambda kind, data: warnings.append(data) if kind == "warning" else None
    try:
        result = await agent(router, repair_attempts=0, max_iterations=2)
    finally:
        await router.aclose()
    first, second, third = chat_server.requests
    assert "response_format" in first and "response_format" not in second
    assert "conforms to this JSON Schema" in second["messages"][0]["content"]
    # the client stays with prompt text: the prefix of the next round is the same
    assert "response_format" not in third
    assert third["messages"][0] == second["messages"][0]
    # the contract is still validated: neither answer conforms
    assert result["final"] is False
    assert len(warnings) == 1 and "response_format" in warnings[0]["message"]


def test_long_and_odd_tool_names_are_mapped_to_64_characters_and_stay_distinct():
    long_a = "mcp_server_with_a_long_name__" + "a" * 40
    long_b = "mcp_server_with_a_long_name__" + "a" * 39 + "b"
    wire_a, wire_b = wire_tool_name(long_a), wire_tool_name(long_b)
    assert len(wire_a) <= 64 and len(wire_b) <= 64 and wire_a != wire_b
    assert wire_tool_name("builtin__read_file") == "builtin__read_file"
    assert wire_tool_name("server.tool name") == wire_tool_name("server.tool name")
    assert len(wire_tool_name("server.tool name")) <= 64


async def test_a_68_character_tool_name_round_trips_through_the_provider(chat_server, tmp_path):
    name = "linear__" + "list_issues_for_the_current_cycle_with_all_labels_and_more_x"
    assert len(name) == 68
    wire = wire_tool_name(name)
    chat_server.script(
        [
            tool_calls((wire, {"q": "a"}), (wire, {"q": "b"})),
            answer({"severity": "low", "title": "t"}),
        ]
    )
    router = router_for(chat_server, tmp_path)
    called = []

    async def call_tool(tool, args, path):
        called.append(tool)
        return "ok"

    try:
        result = await run_agent(
            AgentSpec(prompt="p", output_schema=CONTRACT, tools=[ToolSpec(name, "d", {})]),
            router=router,
            call_tool=call_tool,
            emit=None,
            step_path="E1",
        )
    finally:
        await router.aclose()
    assert called == [name, name] and result["final"]
    sent = chat_server.requests[1]
    assert sent["tools"][0]["function"]["name"] == wire
    assert sent["messages"][2]["tool_calls"][0]["function"]["name"] == wire


async def test_reasoning_model_options_reach_the_wire(chat_server, tmp_path):
    chat_server.script([answer({"severity": "low", "title": "t"})])
    router = router_for(
        chat_server,
        tmp_path,
        options='max_completion_tokens = 900\nreasoning_effort = "low"\nsystem_role = "developer"',
    )
    try:
        await agent(router)
    finally:
        await router.aclose()
    request = chat_server.requests[0]
    assert request["max_completion_tokens"] == 900 and "max_tokens" not in request
    assert request["reasoning_effort"] == "low"
    assert request["messages"][0]["role"] == "developer"


async def test_o_series_and_gpt5_models_get_max_completion_tokens(chat_server, tmp_path):
    from agentflow.runtime.models.openai import OpenAIClient

    for model, key in [("o4-mini", "max_completion_tokens"), ("gpt-5", "max_completion_tokens"),
                       ("gpt-4o", "max_tokens")]:  # fmt: skip
        client = OpenAIClient(provider="p", base_url=chat_server.url, model=model, max_tokens=50)
        payload = client.build_payload(ChatRequest(messages=[Message("user", "hi")]))
        assert payload[key] == 50, model


async def test_openai_reasoning_state_goes_back_with_the_assistant_turn(chat_server, tmp_path):
    first = tool_calls(("look", {"q": "a"}, "c1"))
    message = first.body["choices"][0]["message"]
    message["reasoning_content"] = "Let me look."  # DeepSeek thinking mode
    message["tool_calls"][0]["extra_content"] = {"google": {"thought_signature": "c2ln"}}
    chat_server.script([first, answer({"severity": "low", "title": "t"})])
    router = router_for(chat_server, tmp_path)
    try:
        await agent(router, tools=[LOOK])
    finally:
        await router.aclose()
    sent = chat_server.requests[1]["messages"][2]
    assert sent["role"] == "assistant" and sent["reasoning_content"] == "Let me look."
    assert sent["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "c2ln"}}


async def test_anthropic_caches_the_prefix_and_the_conversation_and_counts_cache_tokens(
    chat_server, tmp_path
):
    reply = anthropic_message([tool_use("look", {"q": "a"}, "tu1")], "tool_use")
    reply["usage"] = {
        "input_tokens": 11,
        "cache_read_input_tokens": 2055,
        "cache_creation_input_tokens": 40,
        "output_tokens": 9,
    }
    chat_server.script([reply, anthropic_text('{"severity": "low", "title": "t"}')])
    router = router_for(chat_server, tmp_path, kind="anthropic")
    try:
        await agent(router, tools=[LOOK])
    finally:
        await router.aclose()
    first, second = chat_server.requests
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert second["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # the breakpoint moves with the conversation: the earlier turn goes back unmarked
    assert "cache_control" not in json.dumps(second["messages"][:-1])
    assert system_text(first) == system_text(second)
    usage = router.usage
    assert usage["input_tokens"] == 11 + 2055 + 40 + 7  # the whole prompt, cached part included
    assert usage["cache_read_tokens"] == 2055 and usage["cache_write_tokens"] == 40


async def test_anthropic_thinking_and_native_output_options(chat_server, tmp_path):
    chat_server.script([anthropic_text('{"severity": "low", "title": "t"}')])
    router = router_for(
        chat_server,
        tmp_path,
        kind="anthropic",
        options="thinking_budget = 2048\ntemperature = 0.2\nmax_tokens = 1000\n"
        "structured_output = true\nprompt_cache = false",
    )
    try:
        await agent(router)
    finally:
        await router.aclose()
    request = chat_server.requests[0]
    assert "strict" not in json.dumps(request.get("tools", []))
    assert request["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert request["max_tokens"] > 2048 and "temperature" not in request
    assert (
        request["output_config"]["format"]["schema"]["properties"]["severity"]["type"] == "string"
    )
    assert "JSON Schema" not in system_text(request)
    assert "cache_control" not in json.dumps(request)


def test_only_tools_whose_meaning_strict_mode_keeps_are_marked_strict():
    from agentflow.runtime.models.openai import is_strict_as_is

    assert is_strict_as_is(
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    )
    assert not is_strict_as_is({"type": "object"})  # any arguments
    assert not is_strict_as_is({"type": "object", "properties": {"a": {"type": "string"}}})
    assert not is_strict_as_is(  # a map type has no strict form
        {
            "type": "object",
            "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}},
            "required": ["m"],
        }
    )


async def test_anthropic_strict_tool_use_for_a_tool_strict_mode_keeps(chat_server, tmp_path):
    chat_server.script([anthropic_text('{"severity": "low", "title": "t"}')])
    router = router_for(chat_server, tmp_path, kind="anthropic", options="structured_output = true")
    fetch = ToolSpec(
        "fetch",
        "Fetch.",
        {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
    )
    try:
        await agent(router, tools=[fetch, LOOK])
    finally:
        await router.aclose()
    strict, loose = chat_server.requests[0]["tools"]
    assert strict["strict"] is True and strict["input_schema"]["additionalProperties"] is False
    assert "strict" not in loose


def test_vllm_and_ollama_reasoning_is_kept_from_the_reply_and_sent_back():
    from agentflow.runtime.models.openai import message_to_openai, parse_openai_response

    body = {
        "model": "qwen3",
        "choices": [
            {
                "message": {"role": "assistant", "content": "{}", "reasoning": "short thought"},
                "finish_reason": "stop",
            }
        ],
    }
    reply = parse_openai_response(body)
    assert reply.raw == {"reasoning": "short thought"}
    sent = message_to_openai(reply.to_message())
    assert sent == {"role": "assistant", "content": "{}", "reasoning": "short thought"}
