"""Real provider replies (tests/runtime/recorded/, sources in its README) served through the
loopback server: thinking round-trips, streams, DeepSeek reasoning, an Overloaded body, a content
filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.chat_server import TEST_API_KEY, Reply, recorded_sse, status

from agentflow.errors import ModelError
from agentflow.runtime.models.anthropic import AnthropicClient
from agentflow.runtime.models.base import ChatRequest, Message, ToolSpec
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.openai import OpenAIClient

RECORDED = Path(__file__).parent / "recorded"
FAST = RetryPolicy(max_retries=2, base=0.001, cap=0.002)


def recorded(name: str) -> str:
    return (RECORDED / name).read_text(encoding="utf-8")


def anthropic(server, **kw) -> AnthropicClient:
    return AnthropicClient(
        provider="anthropic",
        base_url=server.url,
        model="claude-sonnet-4-0",
        api_key=TEST_API_KEY,
        retry=FAST,
        prompt_cache=False,
        **kw,
    )


def openai(server, **kw) -> OpenAIClient:
    return OpenAIClient(
        provider="openai", base_url=server.url, model="m", api_key=TEST_API_KEY, retry=FAST, **kw
    )


async def test_anthropic_thinking_blocks_go_back_as_the_real_api_accepted_them(chat_server):
    first, second = json.loads(recorded("anthropic_thinking_with_tool_call.json"))
    chat_server.script([first["response"], second["response"]])
    client = anthropic(chat_server, thinking_budget=3000)
    tool = ToolSpec("get_user_country", "", {"type": "object", "properties": {}})
    question = Message("user", "What is the largest city in the user country?")
    try:
        reply = await client.chat(ChatRequest([question], tools=[tool]))
        assert reply.finish_reason == "tool_calls"
        assert [c.name for c in reply.tool_calls] == ["get_user_country"]
        result = Message(
            "tool", "Mexico", tool_call_id=reply.tool_calls[0].id, name="get_user_country"
        )
        answer = await client.chat(
            ChatRequest([question, reply.to_message(), result], tools=[tool])
        )
    finally:
        await client.aclose()
    assert "Mexico City" in answer.text
    sent = chat_server.requests[1]["messages"]
    # the assistant turn goes back block for block, thinking signature included, exactly as the
    # request the real API answered
    assert sent[1] == second["request"]["messages"][1]
    assert sent[2]["content"][0]["tool_use_id"] == reply.tool_calls[0].id
    assert chat_server.requests[0]["thinking"] == {"type": "enabled", "budget_tokens": 3000}


async def test_a_recorded_anthropic_thinking_stream_is_reassembled(chat_server):
    chat_server.script([recorded_sse(recorded("anthropic_thinking_stream.sse"))])
    pieces: list = []
    client = anthropic(chat_server, stream=True)
    try:
        reply = await client.chat(
            ChatRequest([Message("user", "How do I cross the street?")], on_delta=pieces.append)
        )
    finally:
        await client.aclose()
    thinking = reply.raw[0]
    assert thinking["type"] == "thinking" and thinking["signature"].startswith("EvMCCkYICxgC")
    assert thinking["thinking"].startswith("This is a straightforward question")
    assert reply.text.startswith("Here are the basic steps for safely crossing the street")
    assert "".join(p for p in pieces if p) == reply.text == "".join(reply.chunks)
    assert reply.finish_reason == "stop" and reply.usage["output_tokens"] > 1
    assert reply.usage["input_tokens"] == 43


async def test_recorded_openai_streams_of_a_tool_call_and_an_answer(chat_server):
    chat_server.script(
        [
            recorded_sse(recorded("openai_tool_call_stream.sse")),
            recorded_sse(recorded("openai_answer_stream.sse")),
        ]
    )
    client = openai(chat_server, stream=True)
    tool = ToolSpec("get_capital", "", {"type": "object"})
    question = Message("user", "What is the capital of the UK? Use the tool, then answer.")
    try:
        reply = await client.chat(ChatRequest([question], tools=[tool]))
        (call,) = reply.tool_calls
        assert call.name == "get_capital" and json.loads(call.arguments) == {"country": "UK"}
        assert call.id == "call_ZR5UUuTt3pf61kjwAJIYdVMj"
        result = Message("tool", "London", tool_call_id=call.id)
        answer = await client.chat(ChatRequest([question, reply.to_message(), result]))
    finally:
        await client.aclose()
    assert "London" in answer.text and answer.usage["input_tokens"] > 0
    assert chat_server.requests[0]["stream_options"] == {"include_usage": True}


async def test_deepseek_reasoning_content_is_kept_and_sent_back(chat_server):
    body = json.loads(recorded("deepseek_reasoner.json"))
    chat_server.script([body, recorded_sse(recorded("deepseek_reasoner_stream.sse"))])
    client = openai(chat_server)
    hello = Message("user", "How do I cross the street?")
    try:
        reply = await client.chat(ChatRequest([hello]))
        streamed = await client.chat(
            ChatRequest([hello, reply.to_message(), Message("user", "Hello")])
        )
    finally:
        await client.aclose()
    reasoning = body["choices"][0]["message"]["reasoning_content"]
    assert reply.raw == {"reasoning_content": reasoning}
    sent = chat_server.requests[1]["messages"][1]
    assert sent["role"] == "assistant" and sent["reasoning_content"] == reasoning
    assert streamed.raw["reasoning_content"].startswith("Hmm")
    assert streamed.usage["reasoning_tokens"] == 198


@pytest.mark.parametrize("status_code", [529, 200])
async def test_the_recorded_overloaded_body_is_retried_with_either_status(chat_server, status_code):
    overloaded = Reply(status=status_code, body=json.loads(recorded("anthropic_overloaded.json")))
    first, _ = json.loads(recorded("anthropic_thinking_with_tool_call.json"))
    chat_server.script([overloaded, first["response"]])
    client = anthropic(chat_server)
    try:
        reply = await client.chat(ChatRequest([Message("user", "hi")]))
    finally:
        await client.aclose()
    assert reply.tool_calls and len(chat_server.requests) == 2


async def test_the_recorded_azure_content_filter_is_a_permanent_content_filter_error(
    chat_server,
):
    chat_server.script([status(400, json.loads(recorded("azure_content_filter_400.json")))])
    client = openai(chat_server)
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(ChatRequest([Message("user", "hi")]))
    finally:
        await client.aclose()
    assert info.value.kind == "content_filter" and len(chat_server.requests) == 1
    assert "content management policy" in str(info.value)
