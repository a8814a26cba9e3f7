"""`kind = "bedrock"` against real recorded replies (tests/runtime/recorded/bedrock/, vendored
from pydantic-ai's cassettes, MIT): every exchange — Converse JSON and ConverseStream AWS event
streams — served through the loopback server is read right; reasoning blocks go back with
their signatures as the real API took them; every request carries a SigV4 signature, computed
by botocore's signer over the exact bytes sent; a Bedrock API key goes as a bearer token."""

from __future__ import annotations

import json

import pytest
from support.chat_server import Reply
from support.recorded import AWS_ENV, RECORDED, classes, exchanges, replay

from agentflow.errors import ConfigError, ModelError
from agentflow.runtime.config import load_config
from agentflow.runtime.models.base import ChatRequest, Message, ToolSpec
from agentflow.runtime.models.bedrock import BedrockClient
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.router import ModelRouter

FAST = RetryPolicy(max_retries=1, base=0.001, cap=0.002)
ALL = exchanges("bedrock")


async def test_every_recorded_bedrock_reply_is_read_right(chat_server):
    # one server for all of them (bench/recorded_replies.py prints the table by class)
    problems = {}
    for name, index, exchange in ALL:
        found = await replay(chat_server, "bedrock", exchange)
        if found:
            problems[f"{name}#{index}"] = found
    assert len(ALL) > 40 and problems == {}


def test_the_recorded_replies_cover_every_class_bedrock_has():
    seen = {c for _, _, e in ALL for c in classes("bedrock", e)}
    # Converse has no schema-constrained output agentflow uses: the contract goes as text
    assert seen == {"text", "tool calls", "stream", "reasoning", "cache", "errors"}


def _client(server, **kw) -> BedrockClient:
    return BedrockClient(
        provider="bedrock",
        base_url=server.url.removesuffix("/v1"),
        model=kw.pop("model", "us.anthropic.claude-3-7-sonnet-20250219-v1:0"),
        retry=FAST,
        env=AWS_ENV,
        **kw,
    )


def _recorded(name: str) -> list[dict]:
    path = RECORDED / "bedrock" / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))["exchanges"]


async def test_reasoning_blocks_go_back_with_their_signature_as_the_real_api_took_them(
    chat_server,
):
    first, second = _recorded("test_bedrock_anthropic_tool_with_thinking")
    chat_server.script([Reply(body=first["response"]), Reply(body=second["response"])])
    client = _client(chat_server, thinking_budget=1024)
    tool = ToolSpec("get_user_country", "", {"type": "object", "properties": {}})
    question = Message("user", "What is the largest city in the user country?")
    try:
        reply = await client.chat(ChatRequest([question], tools=[tool]))
        (call,) = reply.tool_calls
        result = Message("tool", "Mexico", tool_call_id=call.id, name=call.name)
        answer = await client.chat(
            ChatRequest([question, reply.to_message(), result], tools=[tool])
        )
    finally:
        await client.aclose()
    assert "Mexico City" in answer.text
    sent = chat_server.requests[1]["messages"]
    recorded = second["request"]["messages"]
    # fails if the reasoning state is not sent back: the block, its text and signature
    assert sent[1] == recorded[1]
    assert "signature" in sent[1]["content"][0]["reasoningContent"]["reasoningText"]
    assert sent[2]["content"][0]["toolResult"]["toolUseId"] == call.id
    assert chat_server.requests[0]["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 1024}
    }


async def test_every_request_is_signed_with_sigv4_over_the_bytes_sent(chat_server):
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    ok = _recorded("test_bedrock_model")[0]["response"]
    chat_server.script([Reply(status=503, body={"message": "busy"}), Reply(body=ok)])
    client = _client(chat_server, model="us.amazon.nova-micro-v1:0")
    try:
        await client.chat(ChatRequest([Message("user", "hi")]))
    finally:
        await client.aclose()
    assert chat_server.paths == ["/model/us.amazon.nova-micro-v1%3A0/converse"] * 2
    credentials = Credentials(AWS_ENV["AWS_ACCESS_KEY_ID"], AWS_ENV["AWS_SECRET_ACCESS_KEY"])
    for headers, body, path in zip(
        chat_server.headers, chat_server.raw_bodies, chat_server.paths, strict=True
    ):
        got = headers["Authorization"]
        assert got.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
        assert "/us-east-1/bedrock/aws4_request" in got

        def signature(data: bytes, headers=headers, path=path) -> str:
            """The signature a verifier computes over what arrived, at the request's own time
            (botocore's canonical request → string to sign → signature, as AWS does)."""
            check = AWSRequest(
                method="POST",
                url=f"{chat_server.url.removesuffix('/v1')}{path}",
                data=data,
                headers={
                    "Content-Type": headers["Content-Type"],
                    "X-Amz-Date": headers["X-Amz-Date"],
                },
            )
            check.context["timestamp"] = headers["X-Amz-Date"]
            auth = SigV4Auth(credentials, "bedrock", "us-east-1")
            return auth.signature(auth.string_to_sign(check, auth.canonical_request(check)), check)

        assert got.endswith(f"Signature={signature(body)}")  # verified over what was received
        assert not got.endswith(f"Signature={signature(body + b' ')}")
        assert "SignedHeaders=content-type;host;x-amz-date," in got
    assert AWS_ENV["AWS_SECRET_ACCESS_KEY"] not in json.dumps(chat_server.headers)


async def test_a_bedrock_api_key_goes_as_a_bearer_token_unsigned(chat_server):
    chat_server.script([Reply(body=_recorded("test_bedrock_model")[0]["response"])])
    client = _client(chat_server, api_key="ABSKbedrockapikey0123456789")
    try:
        await client.chat(ChatRequest([Message("user", "hi")]))
    finally:
        await client.aclose()
    headers = chat_server.headers[0]
    assert headers["Authorization"] == "Bearer ABSKbedrockapikey0123456789"
    assert "X-Amz-Date" not in headers


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (429, {"message": "Too many requests, please wait before trying again."}, "rate_limit"),
        (400, {"message": "The provided model identifier is invalid."}, "permanent"),
    ],
)
async def test_http_errors_are_classified(chat_server, status, body, kind):
    chat_server.script([Reply(status=status, body=body)] * 2)
    client = _client(chat_server)
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(ChatRequest([Message("user", "hi")]))
    finally:
        await client.aclose()
    assert info.value.kind == kind


async def test_a_guardrail_intervention_is_a_content_filter_error(chat_server):
    body = dict(_recorded("test_bedrock_model")[0]["response"], stopReason="guardrail_intervened")
    chat_server.script([Reply(body=body)])
    client = _client(chat_server)
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(ChatRequest([Message("user", "hi")]))
    finally:
        await client.aclose()
    assert info.value.kind == "content_filter"


def test_a_bedrock_provider_takes_its_url_from_the_region(tmp_path):
    (tmp_path / "flow.toml").write_text(
        '[providers.aws]\nkind = "bedrock"\nregion = "eu-west-3"\n'
        '[models]\ndefault = "aws:anthropic.claude-3-5-sonnet-20240620-v1:0"\n'
    )
    router = ModelRouter(load_config(tmp_path / "flow.toml", env=AWS_ENV))
    (resolved, client) = router.client_for("chat").candidates[0]
    assert client.url(False) == (
        "https://bedrock-runtime.eu-west-3.amazonaws.com/model/"
        "anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"
    )
    assert client.region == "eu-west-3"
    price = router.price(resolved, {"input_tokens": 1000, "output_tokens": 100})
    assert price is not None and price > 0  # genai-prices knows Bedrock by its URL
    (tmp_path / "flow.toml").write_text(
        '[providers.aws]\nkind = "bedrock"\n[models]\ndefault = "aws:m"\n'
    )
    with pytest.raises(ConfigError, match="no region"):
        ModelRouter(load_config(tmp_path / "flow.toml", env={})).client_for("chat")
