"""A reply without the provider's shape is retried like any transient fault, and a reply too
large to be a model's answer fails the call at once (docs/models.md "Errors"): against the
scripted server on loopback, both protocols."""

from __future__ import annotations

import pytest
from support.chat_server import Reply, anthropic_text, text

from agentflow.errors import ModelError
from agentflow.runtime.models import http
from agentflow.runtime.models.anthropic import AnthropicClient
from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.openai import OpenAIClient

FAST = RetryPolicy(max_retries=2, base=0.01, cap=0.02)


def _client(kind, server, **kw):
    if kind == "openai":
        return OpenAIClient(provider="p", base_url=server.url, model="m", api_key="k" * 20, **kw)
    return AnthropicClient(
        provider="p", base_url=f"http://127.0.0.1:{server.port}", model="m", api_key="k" * 20, **kw
    )


async def _chat(client):
    try:
        return await client.chat(ChatRequest(messages=[Message(role="user", content="hi")]))
    finally:
        await client.aclose()


MALFORMED = {
    "openai": [{"choices": []}, {"choices": [{"message": "a string"}]}, [1, 2]],
    "anthropic": [{"content": "not blocks"}, [1, 2]],
}


@pytest.mark.parametrize(
    ("kind", "body"), [(k, b) for k, bodies in MALFORMED.items() for b in bodies]
)
async def test_a_malformed_reply_is_retried_then_succeeds(chat_server, kind, body):
    ok = text("fine") if kind == "openai" else anthropic_text("fine")
    chat_server.script([Reply(body=body), ok])
    retries: list[dict] = []
    response = await _chat(_client(kind, chat_server, retry=FAST, on_retry=retries.append))
    assert response.text == "fine"
    assert len(chat_server.requests) == 2
    assert [r["kind"] for r in retries] == ["transient"]
    assert "malformed reply" in retries[0]["message"]


async def test_malformed_replies_fail_after_the_retries(chat_server):
    chat_server.script([Reply(body={"choices": []})] * 3)
    with pytest.raises(ModelError) as info:
        await _chat(_client("openai", chat_server, retry=FAST))
    assert info.value.kind == "transient" and len(chat_server.requests) == 3
    assert "after 3 attempts: sent a malformed reply: `choices`" in str(info.value)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_reply_larger_than_the_cap_fails_at_once(chat_server, monkeypatch, stream):
    monkeypatch.setattr(http, "MAX_REPLY_BYTES", 64 * 1024)
    big = "x" * (200 * 1024)
    if stream:
        chunk = '{"choices":[{"index":0,"delta":{"content":"' + "x" * 1000 + '"}}]}'
        reply = Reply(events=[("", chunk)] * 100 + [("", "[DONE]")])
    else:
        reply = text(big)
    chat_server.script([reply, text("never asked")])
    with pytest.raises(ModelError) as info:
        await _chat(_client("openai", chat_server, retry=FAST, stream=stream))
    assert info.value.kind == "permanent"
    assert "the reply is larger than 64 KiB" in str(info.value)
    assert len(chat_server.requests) == 1


async def test_one_streamed_event_larger_than_the_cap_fails_at_once(chat_server, monkeypatch):
    # one `content` delta of 2 MiB past a 1 MiB cap: permanent, not retried, not timed out
    monkeypatch.setattr(http, "MAX_REPLY_BYTES", 1024 * 1024)
    chunk = '{"choices":[{"index":0,"delta":{"content":"' + "x" * (2 * 1024 * 1024) + '"}}]}'
    chat_server.script([Reply(events=[("", chunk), ("", "[DONE]")]), text("never asked")])
    with pytest.raises(ModelError) as info:
        await _chat(_client("openai", chat_server, retry=FAST, stream=True))
    assert info.value.kind == "permanent"
    assert "the reply is larger than 1 MiB" in str(info.value)
    assert len(chat_server.requests) == 1


async def test_one_streamed_event_of_a_few_mib_is_read_whole(chat_server):
    # read in linear time (bench/stream_event_size.py has the figures by size)
    big = "é" * (3 * 1024 * 1024)  # two bytes each: characters split across network chunks
    chunk = '{"choices":[{"index":0,"delta":{"content":"' + big + '"},"finish_reason":"stop"}]}'
    chat_server.script([Reply(events=[("", chunk), ("", "[DONE]")])])
    response = await _chat(_client("openai", chat_server, retry=FAST, stream=True))
    assert response.text == big


class _Body:
    """A streamed HTTP body handed over in the given chunks."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.headers: dict[str, str] = {}

    async def aiter_bytes(self):
        for chunk in self.chunks:
            yield chunk


@pytest.mark.parametrize("size", [1, 2, 3, 7])
async def test_stream_lines_are_the_same_however_the_body_is_cut(size):
    body = "data: a\r\n\r\ndata: \u00e9\u2028b\rdata: c\n\ndata: long" + "y" * 50 + "\r"
    raw = body.encode()
    chunks = [raw[i : i + size] for i in range(0, len(raw), size)]
    lines = [line async for line in http._decoded_lines(_Body(chunks))]  # type: ignore[arg-type]
    assert lines == ["data: a", "", "data: \u00e9\u2028b", "data: c", "", "data: long" + "y" * 50]


def _aws_message(event: str, payload: dict) -> bytes:
    """One AWS event stream message (prelude, string headers, payload, CRCs)."""
    import binascii
    import json
    import struct

    headers = b""
    for name, value in ((":message-type", "event"), (":event-type", event)):
        headers += bytes([len(name)]) + name.encode() + b"\x07"
        headers += struct.pack(">H", len(value)) + value.encode()
    body = json.dumps(payload).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack(">I", binascii.crc32(message))


async def test_an_aws_event_stream_of_one_big_message_cut_anywhere_is_read_whole():
    pytest.importorskip("botocore")
    big = "x" * (3 * 1024 * 1024)
    raw = _aws_message("contentBlockDelta", {"delta": {"text": big}}) + _aws_message(
        "messageStop", {"stopReason": "end_turn"}
    )
    chunks = [raw[i : i + 65536] for i in range(0, len(raw), 65536)]
    events = [e async for e in http._eventstream_events(_Body(chunks))]  # type: ignore[arg-type]
    assert [name for name, _ in events] == ["contentBlockDelta", "messageStop"]
    assert len(events[0][1]) > len(big)


async def test_a_damaged_aws_event_stream_message_is_a_malformed_reply():
    pytest.importorskip("botocore")
    raw = bytearray(_aws_message("contentBlockDelta", {"delta": {"text": "hi"}}))
    raw[-1] ^= 0xFF  # its CRC no longer matches
    with pytest.raises(http.StreamFailure) as info:
        [e async for e in http._eventstream_events(_Body([bytes(raw)]))]  # type: ignore[arg-type]
    assert info.value.status == 500 and "malformed" in info.value.body
