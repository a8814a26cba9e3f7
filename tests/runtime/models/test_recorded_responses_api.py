"""`kind = "openai-responses"` against real recorded replies (tests/runtime/recorded/
openai_responses/, vendored from pydantic-ai's cassettes, MIT): every exchange served through the
loopback server is read right (text, tool calls by call id, usage with cached tokens, reasoning
kept, streams, errors); the reasoning round trip sends back what the real API accepted; and what
the adapter sends is the stateless Responses request (store false, encrypted reasoning)."""

from __future__ import annotations

import json

import pytest
from support.chat_server import TEST_API_KEY, Reply, recorded_sse
from support.recorded import RECORDED, classes, exchanges, replay

from agentflow.errors import ModelError
from agentflow.runtime.models.base import ChatRequest, Message, ToolSpec
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.openai_responses import OpenAIResponsesClient

FAST = RetryPolicy(max_retries=1, base=0.001, cap=0.002)
ALL = exchanges("openai_responses")


async def test_every_recorded_responses_reply_is_read_right(chat_server):
    # one server for all of them (bench/recorded_replies.py prints the table by class)
    problems = {}
    for name, index, exchange in ALL:
        found = await replay(chat_server, "openai_responses", exchange)
        if found:
            problems[f"{name}#{index}"] = found
    assert len(ALL) > 40 and problems == {}


def test_the_recorded_replies_cover_every_class():
    seen = {c for _, _, e in ALL for c in classes("openai_responses", e)}
    assert seen == {"text", "tool calls", "structured", "stream", "reasoning", "cache", "errors"}


def _client(server, **kw) -> OpenAIResponsesClient:
    return OpenAIResponsesClient(
        provider="openai",
        base_url=server.url,
        model=kw.pop("model", "gpt-5"),
        api_key=TEST_API_KEY,
        retry=FAST,
        **kw,
    )


def _recorded(name: str) -> list[dict]:
    path = RECORDED / "openai_responses" / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))["exchanges"]


async def test_reasoning_items_go_back_with_their_encrypted_content_as_the_real_api_took_them(
    chat_server,
):
    first, second = _recorded("test_openai_responses_thinking_with_tool_calls")
    chat_server.script([Reply(body=first["response"]), Reply(body=second["response"])])
    client = _client(chat_server, reasoning_effort="high")
    tool = ToolSpec("get_user_country", "", {"type": "object", "properties": {}})
    question = Message("user", first["request"]["input"][-1]["content"])
    try:
        reply = await client.chat(ChatRequest([question], tools=[tool]))
        (call,) = reply.tool_calls
        result = Message("tool", "Mexico", tool_call_id=call.id)
        await client.chat(ChatRequest([question, reply.to_message(), result], tools=[tool]))
    finally:
        await client.aclose()
    sent = chat_server.requests[1]["input"]
    recorded = second["request"]["input"]
    sent_reasoning = [i for i in sent if i.get("type") == "reasoning"]
    recorded_reasoning = [i for i in recorded if i.get("type") == "reasoning"]
    # fails if the reasoning state is not sent back: the item, its id and encrypted content
    assert sent_reasoning and sent_reasoning == recorded_reasoning
    assert sent_reasoning[0]["encrypted_content"].startswith("gAAAA")
    (sent_call,) = [i for i in sent if i.get("type") == "function_call"]
    (recorded_call,) = [i for i in recorded if i.get("type") == "function_call"]
    for key in ("id", "call_id", "name", "arguments"):
        assert sent_call[key] == recorded_call[key]
    assert sent[-1] == {"type": "function_call_output", "call_id": call.id, "output": "Mexico"}
    for request in chat_server.requests:
        assert request["store"] is False
        assert request["include"] == ["reasoning.encrypted_content"]
        assert request["reasoning"] == {"effort": "high"}


async def test_a_recorded_stream_with_a_tool_call_then_the_answer(chat_server):
    first, second = _recorded("test_openai_responses_stream")
    chat_server.script([recorded_sse(first["sse"]), recorded_sse(second["sse"])])
    client = _client(chat_server, stream=True, model="gpt-4o")
    tool = ToolSpec("get_capital", "", {"type": "object", "properties": {}})
    question = Message("user", "What is the capital of France?")
    pieces: list = []
    try:
        reply = await client.chat(ChatRequest([question], tools=[tool]))
        (call,) = reply.tool_calls
        assert json.loads(call.arguments) == {"country": "France"}
        answer = await client.chat(
            ChatRequest(
                [question, reply.to_message(), Message("tool", "Paris", tool_call_id=call.id)],
                tools=[tool],
                on_delta=pieces.append,
            )
        )
    finally:
        await client.aclose()
    assert "Paris" in answer.text and "".join(p for p in pieces if p) == answer.text
    assert chat_server.requests[1]["stream"] is True
    assert chat_server.requests[1]["input"][-1]["call_id"] == call.id


async def test_native_output_goes_as_text_format_and_tools_are_not_strict_unless_kept(
    chat_server,
):
    chat_server.script([Reply(body=_recorded("test_native_output")[1]["response"])])
    client = _client(chat_server, structured_output=True, model="gpt-4o")
    contract = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 40}, "country": {"type": "string"}},
        "required": ["city", "country"],
        "additionalProperties": False,
    }
    loose = ToolSpec("look", "", {"type": "object", "properties": {"q": {"type": "string"}}})
    chat_server.schema_subset = "openai"
    try:
        reply = await client.chat(
            ChatRequest(
                [Message("system", "Be brief."), Message("user", "Largest city in Mexico?")],
                tools=[loose],
                response_schema=contract,
            )
        )
    finally:
        await client.aclose()
    assert json.loads(reply.text) == {"city": "Mexico City", "country": "Mexico"}
    (request,) = chat_server.requests
    assert chat_server.refused == []
    fmt = request["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["strict"] is True
    assert fmt["schema"]["properties"]["city"]["description"] == "(maxLength: 40)"
    assert request["instructions"] == "Be brief." and "JSON Schema" not in request["instructions"]
    assert request["tools"][0]["strict"] is False


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}, "rate_limit"),
        ({"type": "error", "code": "server_error", "message": "boom"}, "transient"),
        (
            {"type": "response.failed", "response": {"error": {"code": "invalid_prompt"}}},
            "content_filter",
        ),
    ],
)
async def test_an_error_event_in_a_stream_is_classified(chat_server, body, kind):
    chat_server.script([Reply(events=[("", json.dumps(body))])] * 2)
    client = _client(chat_server, stream=True)
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(ChatRequest([Message("user", "hi")]))
    finally:
        await client.aclose()
    assert info.value.kind == kind


async def test_an_incomplete_answer_cut_by_the_token_limit_is_length(chat_server):
    body = dict(_recorded("test_openai_responses_model_simple_response")[0]["response"])
    body.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    chat_server.script([Reply(body=body)])
    client = _client(chat_server, max_tokens=5)
    try:
        reply = await client.chat(ChatRequest([Message("user", "hi")]))
    finally:
        await client.aclose()
    assert reply.finish_reason == "length"
    assert chat_server.requests[0]["max_output_tokens"] == 5


async def test_a_refusal_part_is_the_models_refusal(chat_server):
    body = dict(_recorded("test_openai_responses_model_simple_response")[0]["response"])
    body["output"] = [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "refusal", "refusal": "I can't help with that."}],
        }
    ]
    chat_server.script([Reply(body=body)])
    client = _client(chat_server)
    try:
        reply = await client.chat(ChatRequest([Message("user", "hi")]))
    finally:
        await client.aclose()
    assert reply.refusal == "I can't help with that." and reply.text is None
