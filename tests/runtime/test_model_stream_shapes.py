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
