"""Replaying the vendored real provider replies (tests/runtime/recorded/<provider>/, written by
scripts/vendor_recorded_replies.py) through the loopback server into flowc's clients, and what
each one must be read as — worked out here independently of the adapters, from the recorded
body itself.

:func:`exchanges` lists ``(provider, file, index, exchange)``; :func:`classes` names the classes
an exchange belongs to (text, tool calls, structured output, stream, reasoning, cache usage,
errors); :func:`replay` serves it and returns a list of problems (empty: read right).
``bench/recorded_replies.py`` prints the table of pass counts; the suite runs every exchange.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentflow.errors import ModelError
from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.models.http import RetryPolicy, classify
from agentflow.testing.chat_server import TEST_API_KEY, ChatServer, Reply, recorded_sse

RECORDED = Path(__file__).resolve().parents[1] / "runtime" / "recorded"
PROVIDERS = ("openai_responses", "gemini", "bedrock")
#: the AWS credentials the Bedrock client signs with against the loopback server
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "AWS_REGION": "us-east-1",
}
CLASSES = ("text", "tool calls", "structured", "stream", "reasoning", "cache", "errors")
NO_RETRY = RetryPolicy(max_retries=0, base=0.001, cap=0.002)
#: Gemini finish reasons of a safety stop (from the API reference's FinishReason)
GEMINI_SAFETY = {
    "SAFETY",
    "PROHIBITED_CONTENT",
    "BLOCKLIST",
    "SPII",
    "RECITATION",
    "IMAGE_SAFETY",
    "MODEL_ARMOR",
}


def exchanges(provider: str) -> list[tuple[str, int, dict[str, Any]]]:
    """``(file name, index, exchange)`` of every vendored exchange of ``provider``."""
    out = []
    for path in sorted((RECORDED / provider).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for index, exchange in enumerate(data["exchanges"]):
            out.append((path.stem, index, exchange))
    return out


def _sse_data(text: str) -> list[Any]:
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if not lines:
            continue
        try:
            out.append(json.loads("\n".join(lines)))
        except ValueError:
            continue
    return out


# ------------------------------------------------------------------ what the reply says


def expected(provider: str, exchange: dict[str, Any]) -> dict[str, Any]:
    """``{text, calls: [(id, name, arguments)], input, output, cached, reasoning, error}`` read
    straight from the recorded body."""
    if provider == "openai_responses":
        return _expected_responses(exchange)
    if provider == "bedrock":
        return _expected_bedrock(exchange)
    return _expected_gemini(exchange)


def eventstream_messages(exchange: dict[str, Any]) -> list[tuple[str, Any]]:
    """``[(event type, payload)]`` of a recorded AWS event stream (botocore's parser)."""
    import base64

    from botocore.eventstream import EventStreamBuffer

    buffer = EventStreamBuffer()
    buffer.add_data(base64.b64decode(exchange["eventstream_b64"]))
    return [(m.headers.get(":event-type", ""), json.loads(m.payload)) for m in buffer]


def _expected_bedrock(exchange: dict[str, Any]) -> dict[str, Any]:
    if exchange["status"] >= 400:
        return {"error": classify(exchange["status"], json.dumps(exchange.get("response")))}
    texts, calls, reasoning = [], [], False
    usage: dict[str, Any] = {}
    stop = None
    if "eventstream_b64" in exchange:
        arguments: dict[int, str] = {}
        starts: dict[int, dict[str, Any]] = {}
        for event, payload in eventstream_messages(exchange):
            index = payload.get("contentBlockIndex", 0)
            if event == "contentBlockStart" and "toolUse" in (payload.get("start") or {}):
                starts[index] = payload["start"]["toolUse"]
            elif event == "contentBlockDelta":
                delta = payload["delta"]
                if "text" in delta:
                    texts.append(delta["text"])
                if "toolUse" in delta:
                    arguments[index] = arguments.get(index, "") + delta["toolUse"]["input"]
                if "reasoningContent" in delta:
                    reasoning = True
            elif event == "messageStop":
                stop = payload.get("stopReason")
            elif event == "metadata":
                usage = payload.get("usage") or {}
        for index, start in sorted(starts.items()):
            calls.append((start["toolUseId"], start["name"], arguments.get(index, "{}")))
    else:
        body = exchange["response"]
        stop = body.get("stopReason")
        usage = body.get("usage") or {}
        for block in ((body.get("output") or {}).get("message") or {}).get("content") or []:
            if "text" in block:
                texts.append(block["text"])
            if "toolUse" in block:
                use = block["toolUse"]
                calls.append((use["toolUseId"], use["name"], use["input"]))
            if "reasoningContent" in block:
                reasoning = True
    if stop in ("guardrail_intervened", "content_filtered"):
        return {"error": "content_filter"}
    cached = usage.get("cacheReadInputTokens", 0) or 0
    written = usage.get("cacheWriteInputTokens", 0) or 0
    return {
        "text": "".join(texts) if texts else None,
        "calls": calls,
        "input": usage.get("inputTokens", 0) + cached + written,
        "output": usage.get("outputTokens", 0),
        "cached": cached,
        "written": written,
        "reasoning": reasoning,
        "error": None,
    }


def _expected_responses(exchange: dict[str, Any]) -> dict[str, Any]:
    if exchange["status"] >= 400:
        return {"error": classify(exchange["status"], json.dumps(exchange.get("response")))}
    if "sse" in exchange:
        events = _sse_data(exchange["sse"])
        final: dict[str, Any] = {}
        done = []
        for event in events:
            if event.get("type") in ("response.completed", "response.incomplete"):
                final = event["response"]
            if event.get("type") == "response.output_item.done":
                done.append(event["item"])
        body = dict(final)
        if not body.get("output"):
            body["output"] = done
    else:
        body = exchange["response"]
    texts, calls, reasoning = [], [], False
    for item in body.get("output") or []:
        if item.get("type") == "message":
            texts += [
                p["text"] for p in item.get("content") or [] if p.get("type") == "output_text"
            ]
        elif item.get("type") == "function_call":
            calls.append((item["call_id"], item["name"], item["arguments"]))
        elif item.get("type") == "reasoning":
            reasoning = True
    usage = body.get("usage") or {}
    return {
        "text": "".join(texts) if texts else None,
        "calls": calls,
        "input": usage.get("input_tokens", 0),
        "output": usage.get("output_tokens", 0),
        "cached": (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0,
        "reasoning": reasoning,
        "error": None,
    }


def _gemini_bodies(exchange: dict[str, Any]) -> list[dict[str, Any]]:
    if "sse" in exchange:
        return [e for e in _sse_data(exchange["sse"]) if isinstance(e, dict)]
    body = exchange["response"]
    return body if isinstance(body, list) else [body]


def _expected_gemini(exchange: dict[str, Any]) -> dict[str, Any]:
    if exchange["status"] >= 400:
        return {"error": classify(exchange["status"], json.dumps(exchange.get("response")))}
    texts, calls, reasoning = [], [], False
    usage: dict[str, Any] = {}
    for body in _gemini_bodies(exchange):
        usage = body.get("usageMetadata") or usage
        if (body.get("promptFeedback") or {}).get("blockReason"):
            return {"error": "content_filter"}
        for candidate in (body.get("candidates") or [])[:1]:
            if candidate.get("finishReason") in GEMINI_SAFETY:
                return {"error": "content_filter"}
            for part in (candidate.get("content") or {}).get("parts") or []:
                if part.get("thought"):
                    reasoning = True
                elif "text" in part:
                    texts.append(part["text"])
                if "functionCall" in part:
                    call = part["functionCall"]
                    calls.append((call.get("id") or "", call["name"], call.get("args") or {}))
                if part.get("thoughtSignature"):
                    reasoning = True
    return {
        "text": "".join(texts) if texts else None,
        "calls": calls,
        "input": usage.get("promptTokenCount", 0),
        "output": usage.get("candidatesTokenCount", 0) + usage.get("thoughtsTokenCount", 0),
        "cached": usage.get("cachedContentTokenCount", 0),
        "reasoning": reasoning,
        "error": None,
    }


def classes(provider: str, exchange: dict[str, Any]) -> list[str]:
    """The classes of the replay table ``exchange`` counts in."""
    want = expected(provider, exchange)
    if want["error"] is not None:
        return ["errors"] + (["stream"] if _streamed(exchange) else [])
    out = []
    request = exchange.get("request") or {}
    if provider == "openai_responses":
        structured = ((request.get("text") or {}).get("format") or {}).get("type") == "json_schema"
    elif provider == "bedrock":
        structured = False  # Converse has no schema-constrained output agentflow uses
    else:
        config = request.get("generationConfig") or {}
        structured = "responseSchema" in config or "responseJsonSchema" in config
    if want["calls"]:
        out.append("tool calls")
    if structured:
        out.append("structured")
    if _streamed(exchange):
        out.append("stream")
    if want["reasoning"]:
        out.append("reasoning")
    if want["cached"] or want.get("written"):
        out.append("cache")
    if want["text"] is not None and not out:
        out.append("text")
    return out or ["text"]


def _streamed(exchange: dict[str, Any]) -> bool:
    return "sse" in exchange or "eventstream_b64" in exchange


# ------------------------------------------------------------------ the replay


def client_for(provider: str, server: ChatServer, *, stream: bool) -> Any:
    if provider == "openai_responses":
        from agentflow.runtime.models.openai_responses import OpenAIResponsesClient

        return OpenAIResponsesClient(
            provider="openai",
            base_url=server.url,
            model="gpt-5",
            api_key=TEST_API_KEY,
            retry=NO_RETRY,
            stream=stream,
        )
    if provider == "bedrock":
        from agentflow.runtime.models.bedrock import BedrockClient

        return BedrockClient(
            provider="bedrock",
            base_url=server.url.removesuffix("/v1"),
            model="us.amazon.nova-micro-v1:0",
            retry=NO_RETRY,
            stream=stream,
            env=AWS_ENV,
        )
    from agentflow.runtime.models.gemini import GeminiClient

    return GeminiClient(
        provider="gemini",
        base_url=server.url.removesuffix("/v1"),
        model="gemini-2.5-flash",
        api_key=TEST_API_KEY,
        retry=NO_RETRY,
        stream=stream,
    )


def _same_arguments(got: Any, want: Any) -> bool:
    def decoded(value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else {}
            except ValueError:
                return value
        return value

    return decoded(got) == decoded(want)


async def replay(server: ChatServer, provider: str, exchange: dict[str, Any]) -> list[str]:
    """Serve ``exchange``'s recorded reply to flowc's client of ``provider``; the problems with
    how it was read (empty: read right)."""
    want = expected(provider, exchange)
    if "sse" in exchange:
        reply = recorded_sse(exchange["sse"])
    elif "eventstream_b64" in exchange:
        import base64

        reply = Reply(
            body=base64.b64decode(exchange["eventstream_b64"]),
            headers={"Content-Type": "application/vnd.amazon.eventstream"},
        )
    else:
        reply = Reply(status=exchange["status"], body=exchange["response"])
    server.script([reply])
    client = client_for(provider, server, stream=_streamed(exchange))
    pieces: list[Any] = []
    problems: list[str] = []
    try:
        got = await client.chat(ChatRequest([Message("user", "hi")], on_delta=pieces.append))
    except ModelError as exc:
        if want["error"] is None:
            return [f"raised {exc.kind}: {exc}"]
        if exc.kind != want["error"]:
            problems.append(f"error kind {exc.kind}, want {want['error']}")
        return problems
    finally:
        await client.aclose()
    if want["error"] is not None:
        return [f"read as an answer, want a {want['error']} error"]
    if (got.text or None) != (want["text"] or None):
        problems.append(f"text {got.text!r:.80}, want {want['text']!r:.80}")
    calls = [(c.id, c.name, c.arguments) for c in got.tool_calls]
    if len(calls) != len(want["calls"]) or any(
        (g[1] != w[1] or (w[0] and g[0] != w[0]) or not _same_arguments(g[2], w[2]))
        for g, w in zip(calls, want["calls"], strict=False)
    ):
        problems.append(f"tool calls {calls!r:.200}, want {want['calls']!r:.200}")
    if want["calls"] and got.finish_reason != "tool_calls":
        problems.append(f"finish_reason {got.finish_reason}")
    usage = got.usage
    if usage.get("input_tokens", 0) != want["input"]:
        problems.append(f"input_tokens {usage.get('input_tokens')}, want {want['input']}")
    if usage.get("output_tokens", 0) != want["output"]:
        problems.append(f"output_tokens {usage.get('output_tokens')}, want {want['output']}")
    if usage.get("cache_write_tokens", 0) != want.get("written", 0):
        problems.append(f"cache_write_tokens {usage.get('cache_write_tokens')}")
    if usage.get("cache_read_tokens", 0) != want["cached"]:
        problems.append(
            f"cache_read_tokens {usage.get('cache_read_tokens')}, want {want['cached']}"
        )
    if want["reasoning"] and not got.raw:
        problems.append("the reasoning state was not kept")
    if _streamed(exchange) and want["text"] and "".join(p for p in pieces if p) != want["text"]:
        problems.append("the streamed pieces do not make the answer")
    return problems
