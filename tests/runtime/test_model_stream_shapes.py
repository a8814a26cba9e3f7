"""Streams of odd shape, from an outside battery: an Anthropic event with a field of the wrong
type fails the call as a malformed reply (transient, retried) instead of Python's
``AttributeError``/``TypeError``; streamed tool calls sharing one ``index`` but with their own
``id`` stay two calls; Server-Sent Events with CR-only or CRLF line ends are read
(docs/models.md "Streaming")."""

from __future__ import annotations

import json

import pytest
from support.chat_server import (
    TEST_API_KEY,
    anthropic_message,
    anthropic_stream,
    completion,
    openai_stream,
    sse,
)

from agentflow.runtime.config import load_config
from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.router import ModelRouter

FAST = RetryPolicy(max_retries=2, base=0.001, cap=0.002)


def _router(server, tmp_path, kind):
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "m"\n[models.named.m]\nprovider = "p"\nmodel = "test-model"\n'
        f'stream = true\n[providers.p]\nkind = "{kind}"\nbase_url = "{server.url}"\n'
        'api_key_env = "K"\n'
    )
    return ModelRouter(load_config(tmp_path / "flow.toml", env={"K": TEST_API_KEY}), retry=FAST)


async def _chat(server, tmp_path, kind="openai"):
    router = _router(server, tmp_path, kind)
    retries: list[dict] = []
    router.on_event = lambda k, data: retries.append(data) if k == "retry" else None
    try:
        response = await router.client_for("chat").chat(ChatRequest([Message("user", "hi")]))
    finally:
        await router.aclose()
    return response, retries


def _anthropic_with(event: dict):
    start = {"id": "m1", "type": "message", "role": "assistant", "content": [], "usage": {}}
    return sse(
        [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_delta", event),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


@pytest.mark.parametrize(
    "event",
    [
        {"type": "content_block_delta", "index": 0, "delta": "oops"},
        {"type": "content_block_delta", "index": "1", "delta": {"type": "text_delta", "text": "a"}},
        {"type": "content_block_delta", "index": [0], "delta": {"type": "text_delta", "text": "a"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
    ],
    ids=["delta-text", "index-text", "index-list", "text-number"],
)
async def test_a_malformed_anthropic_stream_event_is_a_retried_malformed_reply(
    chat_server, tmp_path, event
):
    final = anthropic_message([{"type": "text", "text": "The answer is 42."}])
    chat_server.script([_anthropic_with(event), anthropic_stream(final)])
    response, retries = await _chat(chat_server, tmp_path, kind="anthropic")
    assert response.text == "The answer is 42." and len(chat_server.requests) == 2
    assert [r["kind"] for r in retries] == ["transient"]
    assert "malformed" in retries[0]["message"]


async def test_a_malformed_anthropic_stream_every_time_ends_as_one_transient_error(
    chat_server, tmp_path
):
    from agentflow.errors import ModelError

    bad = {"type": "content_block_delta", "index": 0, "delta": "oops"}
    chat_server.script([_anthropic_with(bad) for _ in range(3)])
    with pytest.raises(ModelError) as info:
        await _chat(chat_server, tmp_path, kind="anthropic")
    assert info.value.kind == "transient"
    assert "content_block_delta's delta should be an object" in str(info.value)
    assert "AttributeError" not in str(info.value)


async def test_streamed_tool_calls_at_one_index_with_their_own_ids_stay_two_calls(
    chat_server, tmp_path
):
    def piece(call_id, path):
        fn = {"name": "read_file", "arguments": json.dumps({"path": path})}
        delta = {"tool_calls": [{"index": 0, "id": call_id, "type": "function", "function": fn}]}
        return {"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta}]}

    done = {
        "id": "c",
        "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
    }
    chat_server.script([sse([piece("call_1", "a.txt"), piece("call_2", "b.txt"), done, "[DONE]"])])
    response, _ = await _chat(chat_server, tmp_path)
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
        ("call_1", "read_file", {"path": "a.txt"}),
        ("call_2", "read_file", {"path": "b.txt"}),
    ]


async def test_a_tool_call_streamed_in_pieces_after_its_id_is_still_one_call(chat_server, tmp_path):
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "look", "arguments": '{"q": "abc"}'}}
    ]
    chat_server.script([openai_stream(completion(calls=calls), pieces=6)])
    response, _ = await _chat(chat_server, tmp_path)
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
        ("c1", "look", {"q": "abc"})
    ]


@pytest.mark.parametrize("line_end", ["\r", "\r\n"], ids=["cr", "crlf"])
async def test_a_stream_with_cr_or_crlf_line_ends_is_read(chat_server, tmp_path, line_end):
    reply = openai_stream(completion("The answer is 42."), pieces=5)
    reply.line_end = line_end
    chat_server.script([reply])
    response, retries = await _chat(chat_server, tmp_path)
    assert response.text == "The answer is 42." and retries == []
    assert len(chat_server.requests) == 1


# -- every provider's stream reader checks each field's type where it reads it ------------------


def _openai(chunk):
    done = {
        "id": "c",
        "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    return [("", json.dumps(chunk)), ("", json.dumps(done)), ("", "[DONE]")]


def _choice(delta):
    return {"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta}]}


def _call_piece(**piece):
    return _choice({"tool_calls": [{"index": 0, "id": "c1", "type": "function", **piece}]})


def _anthropic(*items):
    stop = {"type": "message_stop"}
    return [(i.get("type", "") if isinstance(i, dict) else "", json.dumps(i)) for i in items] + [
        ("message_stop", json.dumps(stop))
    ]


def _gemini(chunk):
    return [("", json.dumps(chunk))]


def _responses(item):
    done = {"type": "response.completed", "response": {"id": "r", "output": []}}
    return [("", json.dumps(item)), ("", json.dumps(done))]


def _bedrock(event, item):
    return [(event, json.dumps(item)), ("messageStop", json.dumps({"stopReason": "end_turn"}))]


_TEXT = {"type": "text_delta", "text": "a"}

#: (provider, the events of a stream holding one event of the wrong shape)
MALFORMED_STREAMS = {
    "openai-chunk-array": ("openai", _openai([1, 2])),
    "openai-choices-text": ("openai", _openai({"choices": "abc"})),
    "openai-choice-number": ("openai", _openai({"choices": [5]})),
    "openai-delta-array": ("openai", _openai(_choice([1, 2]))),
    "openai-delta-text": ("openai", _openai(_choice("abc"))),
    "openai-delta-null": ("openai", _openai(_choice(None))),
    "openai-content-number": ("openai", _openai(_choice({"content": 5}))),
    "openai-tool-calls-text": ("openai", _openai(_choice({"tool_calls": "abc"}))),
    "openai-call-index-text": (
        "openai",
        _openai(_choice({"tool_calls": [{"index": "x", "function": {"name": "f"}}]})),
    ),
    "openai-call-name-number": ("openai", _openai(_call_piece(function={"name": 5}))),
    "openai-call-function-text": ("openai", _openai(_call_piece(function="f"))),
    "openai-finish-number": (
        "openai",
        _openai({"choices": [{"index": 0, "delta": {}, "finish_reason": 5}]}),
    ),
    "anthropic-event-array": ("anthropic", _anthropic([1])),
    "anthropic-message-text": ("anthropic", _anthropic({"type": "message_start", "message": "m"})),
    "anthropic-block-number": (
        "anthropic",
        _anthropic({"type": "content_block_start", "index": 0, "content_block": 5}),
    ),
    "anthropic-index-text": (
        "anthropic",
        _anthropic({"type": "content_block_delta", "index": "x", "delta": _TEXT}),
    ),
    "anthropic-delta-array": (
        "anthropic",
        _anthropic({"type": "content_block_delta", "index": 0, "delta": [1]}),
    ),
    "gemini-chunk-array": ("gemini", _gemini([1])),
    "gemini-candidates-text": ("gemini", _gemini({"candidates": "abc"})),
    "gemini-candidate-number": ("gemini", _gemini({"candidates": [5]})),
    "gemini-content-text": ("gemini", _gemini({"candidates": [{"content": "x"}]})),
    "gemini-parts-text": ("gemini", _gemini({"candidates": [{"content": {"parts": "x"}}]})),
    "gemini-text-number": (
        "gemini",
        _gemini({"candidates": [{"content": {"parts": [{"text": 5}]}}]}),
    ),
    "responses-event-array": ("openai-responses", _responses([1])),
    "responses-delta-number": (
        "openai-responses",
        _responses({"type": "response.output_text.delta", "delta": 5}),
    ),
    "responses-item-text": (
        "openai-responses",
        _responses({"type": "response.output_item.done", "output_index": 0, "item": "x"}),
    ),
    "responses-index-text": (
        "openai-responses",
        _responses({"type": "response.output_item.done", "output_index": "x", "item": {}}),
    ),
    "bedrock-event-array": ("bedrock", _bedrock("contentBlockDelta", [1])),
    "bedrock-delta-array": ("bedrock", _bedrock("contentBlockDelta", {"delta": [1]})),
    "bedrock-text-number": ("bedrock", _bedrock("contentBlockDelta", {"delta": {"text": 5}})),
    "bedrock-index-text": (
        "bedrock",
        _bedrock("contentBlockDelta", {"contentBlockIndex": "x", "delta": {"text": "a"}}),
    ),
    "bedrock-tool-input-number": (
        "bedrock",
        _bedrock("contentBlockDelta", {"delta": {"toolUse": {"input": 5}}}),
    ),
}


def _reader(provider):
    from agentflow.runtime.models import anthropic, bedrock, gemini, openai, openai_responses

    return {
        "openai": openai.read_openai_stream,
        "anthropic": anthropic.read_anthropic_stream,
        "gemini": gemini.read_gemini_stream,
        "openai-responses": openai_responses.read_responses_stream,
        "bedrock": bedrock.read_bedrock_stream,
    }[provider]


@pytest.mark.parametrize(("provider", "events"), MALFORMED_STREAMS.values(), ids=MALFORMED_STREAMS)
async def test_a_stream_event_of_the_wrong_shape_is_malformed_for_every_provider(provider, events):
    from agentflow.runtime.models.http import StreamFailure, classify

    async def stream():
        for event in events:
            yield event

    with pytest.raises(StreamFailure) as info:
        await _reader(provider)(stream(), None, [])
    assert "a stream event is malformed" in info.value.body
    assert classify(info.value.status, info.value.body) == "transient"


@pytest.mark.parametrize(
    "bad",
    [
        _choice([1, 2]),
        _choice("abc"),
        _choice(None),
        {"id": "c", "model": "m", "choices": "abc"},
        _choice({"tool_calls": [{"index": "x", "function": {"name": 5}}]}),
    ],
    ids=["delta-array", "delta-text", "delta-null", "choices-text", "tool-call-index-and-name"],
)
async def test_a_streamed_openai_chunk_of_the_wrong_shape_is_retried_not_an_answer(
    chat_server, tmp_path, bad
):
    done = {
        "id": "c",
        "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    chat_server.script([sse([bad, done, "[DONE]"]), openai_stream(completion("The answer is 42."))])
    response, retries = await _chat(chat_server, tmp_path)
    assert response.text == "The answer is 42." and response.tool_calls == []
    assert len(chat_server.requests) == 2
    assert [r["kind"] for r in retries] == ["transient"] and "malformed" in retries[0]["message"]
