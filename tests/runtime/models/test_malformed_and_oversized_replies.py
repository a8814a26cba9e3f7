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
