"""`kind = "gemini"` against real recorded replies (tests/runtime/recorded/gemini/, vendored from
pydantic-ai's cassettes, MIT): every exchange served through the loopback server is read right
(text, function calls, usage with cached and thought tokens, thought signatures kept, streams,
safety blocks); thought signatures go back with the function calls as the real API took them;
structured output is the contract fitted into Gemini's subset."""

from __future__ import annotations

import base64
import json

import pytest
from support.chat_server import TEST_API_KEY, Reply, recorded_sse
from support.recorded import RECORDED, classes, exchanges, replay

from agentflow.errors import ModelError
from agentflow.runtime.models.base import ChatRequest, Message, ToolSpec
from agentflow.runtime.models.gemini import GeminiClient
from agentflow.runtime.models.http import RetryPolicy

FAST = RetryPolicy(max_retries=1, base=0.001, cap=0.002)
ALL = exchanges("gemini")


async def test_every_recorded_gemini_reply_is_read_right(chat_server):
    # one server for all of them (bench/recorded_replies.py prints the table by class)
    problems = {}
    for name, index, exchange in ALL:
        found = await replay(chat_server, "gemini", exchange)
        if found:
            problems[f"{name}#{index}"] = found
    assert len(ALL) > 40 and problems == {}


def test_the_recorded_replies_cover_every_class():
    seen = {c for _, _, e in ALL for c in classes("gemini", e)}
    assert seen == {"text", "tool calls", "structured", "stream", "reasoning", "cache", "errors"}


def _client(server, **kw) -> GeminiClient:
    return GeminiClient(
        provider="gemini",
        base_url=server.url.removesuffix("/v1"),
        model=kw.pop("model", "gemini-3-pro-preview"),
        api_key=TEST_API_KEY,
        retry=FAST,
        **kw,
    )


def _recorded(name: str) -> list[dict]:
    path = RECORDED / "gemini" / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))["exchanges"]


def _signature_bytes(text: str) -> bytes:
    return base64.b64decode(text.replace("-", "+").replace("_", "/") + "==")


async def test_thought_signatures_go_back_with_the_function_call_as_the_real_api_took_them(
    chat_server,
):
    first, second = _recorded("test_google_streaming_tool_call_thought_signature")
    chat_server.script([recorded_sse(first["sse"]), recorded_sse(second["sse"])])
    client = _client(chat_server, stream=True)
    tool = ToolSpec("get_country", "", {"type": "object", "properties": {}})
    question = Message("user", first["request"]["contents"][0]["parts"][0]["text"])
    try:
        reply = await client.chat(ChatRequest([question], tools=[tool]))
        (call,) = reply.tool_calls
        call.id = call.id or "call-1"  # the agent loop gives an id Gemini did not
        result = Message("tool", "Mexico", tool_call_id=call.id, name="get_country")
        answer = await client.chat(
            ChatRequest([question, reply.to_message(), result], tools=[tool])
        )
    finally:
        await client.aclose()
    assert answer.text == "The capital of Mexico is Mexico City."
    sent_model_turn = chat_server.requests[1]["contents"][1]
    recorded_model_turn = second["request"]["contents"][1]
    (sent_part,) = sent_model_turn["parts"]
    (recorded_part,) = recorded_model_turn["parts"]
    # fails if the reasoning state is not sent back: the signature, byte for byte
    assert sent_part["thoughtSignature"]
    assert _signature_bytes(sent_part["thoughtSignature"]) == _signature_bytes(
        recorded_part["thoughtSignature"]
    )
    assert sent_part["functionCall"] == {"name": "get_country", "args": {}, "id": call.id}
    assert chat_server.requests[1]["contents"][2] == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "id": call.id,
                    "name": "get_country",
                    "response": {"result": "Mexico"},
                }
            }
        ],
    }
    assert chat_server.paths[0].endswith(":streamGenerateContent?alt=sse")
    assert chat_server.headers[0]["x-goog-api-key"] == TEST_API_KEY


async def test_native_output_is_the_contract_fitted_into_geminis_subset(chat_server):
    chat_server.script([Reply(body=_recorded("test_google_native_output")[0]["response"])])
    chat_server.schema_subset = "gemini"
    client = _client(chat_server, structured_output=True, model="gemini-2.0-flash")
    contract = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1, "pattern": "^[A-Z]"},
            "country": {"type": "string"},
            "size": {"enum": ["small", "large"]},
        },
        "required": ["city", "country"],
        "additionalProperties": False,
    }
    try:
        reply = await client.chat(
            ChatRequest(
                [Message("system", "Be brief."), Message("user", "Largest city in Mexico?")],
                response_schema=contract,
            )
        )
    finally:
        await client.aclose()
    assert json.loads(reply.text) == {"city": "Mexico City", "country": "Mexico"}
    assert chat_server.refused == []
    config = chat_server.requests[0]["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    schema = config["responseJsonSchema"]
    assert schema["properties"]["city"]["description"] == '(minLength: 1, pattern: "^[A-Z]")'
    assert schema["properties"]["size"]["type"] == "string"
    assert chat_server.requests[0]["systemInstruction"] == {"parts": [{"text": "Be brief."}]}


@pytest.mark.parametrize(
    "name",
    ["test_google_model_safety_settings", "test_google_model_armor_response_template_real_block"],
)
async def test_a_recorded_safety_block_is_a_content_filter_error_never_retried(chat_server, name):
    chat_server.script([Reply(body=_recorded(name)[0]["response"])] * 2)
    client = _client(chat_server)
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(ChatRequest([Message("user", "hi")]))
    finally:
        await client.aclose()
    assert info.value.kind == "content_filter" and len(chat_server.requests) == 1


async def test_a_prompt_blocked_before_any_candidate_is_a_content_filter_error(chat_server):
    blocked = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {}}
    chat_server.script([Reply(body=blocked)])
    client = _client(chat_server)
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(ChatRequest([Message("user", "hi")]))
    finally:
        await client.aclose()
    assert info.value.kind == "content_filter" and "PROHIBITED_CONTENT" in str(info.value)


async def test_a_429_resource_exhausted_is_retried_after_retry_after(chat_server):
    quota = {
        "error": {"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED"}
    }
    ok = _recorded("test_google_native_output")[0]["response"]
    chat_server.script(
        [Reply(status=429, body=quota, headers={"Retry-After": "0"}), Reply(body=ok)]
    )
    retries: list = []
    client = _client(chat_server, on_retry=retries.append)
    try:
        reply = await client.chat(ChatRequest([Message("user", "hi")]))
    finally:
        await client.aclose()
    assert reply.text and retries[0]["kind"] == "rate_limit"
