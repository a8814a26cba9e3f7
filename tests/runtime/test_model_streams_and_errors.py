"""Streams (both providers, a streaming-only server, streams that fail), typed partial answers,
cassettes of streams, and how provider failures are classified."""

from __future__ import annotations

import json

import pytest
from support.chat_server import (
    TEST_API_KEY,
    answer,
    anthropic_message,
    anthropic_stream,
    completion,
    openai_stream,
    overloaded_200,
    sse,
    status,
    text,
    tool_calls,
)

from agentflow.errors import ModelError, RunError
from agentflow.runtime.agent import AgentSpec, run_agent
from agentflow.runtime.config import load_config
from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.models.cassette import ReplayRouter, recording_router
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.router import ModelRouter

FAST = RetryPolicy(max_retries=3, base=0.001, cap=0.002)
CONTRACT = {
    "type": "object",
    "required": ["title", "tags"],
    "properties": {
        "title": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "level": {"enum": ["low", "high"]},
    },
}
ANSWER = {"title": "Crash on start", "tags": ["ui", "crash"], "level": "high"}


def config(server, tmp_path, kind="openai", options="stream = true"):
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
    return load_config(tmp_path / "flow.toml", env={"K": TEST_API_KEY})


async def run(router, tools=(), **kw):
    events = []

    async def call_tool(name, args, path):
        return {"done": name}

    def emit(kind, path, **data):
        events.append((kind, data))

    result = await run_agent(
        AgentSpec(prompt="p", output_schema=CONTRACT, tools=list(tools), **kw),
        router=router,
        call_tool=call_tool,
        emit=emit,
        step_path="E1",
    )
    return result, events


async def test_openai_stream_gives_the_answer_and_typed_partial_values(chat_server, tmp_path):
    chat_server.script([openai_stream(completion(json.dumps(ANSWER)), pieces=12)])
    router = ModelRouter(config(chat_server, tmp_path), retry=FAST)
    seen = []
    try:
        result, events = await run(router, on_partial=seen.append)
    finally:
        await router.aclose()
    request = chat_server.requests[0]
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    assert result["output"] == ANSWER and result["final"]
    partials = [d["value"] for k, d in events if k == "partial_output"]
    assert partials == seen and len(partials) >= 2 and partials[-1] == ANSWER
    for value in partials:  # typed: a partial value never holds what the contract refuses
        assert set(value) <= {"title", "tags", "level"}
        assert value.get("level") in (None, "low", "high")
    assert router.usage["input_tokens"] == 10  # usage from the last chunk


async def test_openai_stream_of_tool_calls_runs_them(chat_server, tmp_path):
    from agentflow.runtime.models.base import ToolSpec

    calls = tool_calls(("look", {"q": "ü" * 20}, "c1"), ("look", {"q": "b"}, "c2"))
    chat_server.script([openai_stream(calls.body, pieces=5), answer(ANSWER)])
    router = ModelRouter(config(chat_server, tmp_path), retry=FAST)
    try:
        result, _ = await run(router, tools=[ToolSpec("look", "d", {})])
    finally:
        await router.aclose()
    assert [c["tool"] for c in result["tools_called"]] == ["look", "look"]
    sent = chat_server.requests[1]["messages"][2]["tool_calls"]
    assert json.loads(sent[0]["function"]["arguments"]) == {"q": "ü" * 20}


async def test_anthropic_stream_round_trips_thinking_with_its_signature(chat_server, tmp_path):
    from agentflow.runtime.models.base import ToolSpec

    thinking = {"type": "thinking", "thinking": "I should look first.", "signature": "RXJ0c2ln"}
    first = anthropic_message(
        [thinking, {"type": "tool_use", "id": "tu1", "name": "look", "input": {"q": "a"}}],
        "tool_use",
    )
    final = anthropic_message([{"type": "text", "text": json.dumps(ANSWER)}])
    chat_server.script([anthropic_stream(first), anthropic_stream(final, pieces=6)])
    router = ModelRouter(config(chat_server, tmp_path, kind="anthropic"), retry=FAST)
    try:
        result, events = await run(router, tools=[ToolSpec("look", "d", {})])
    finally:
        await router.aclose()
    assert result["output"] == ANSWER
    resent = chat_server.requests[1]["messages"][1]["content"]
    assert resent[0] == thinking  # text and signature reassembled from their deltas
    assert resent[1]["input"] == {"q": "a"}
    assert [d["value"] for k, d in events if k == "partial_output"][-1] == ANSWER


async def test_a_streaming_only_server_is_read_as_a_stream(chat_server, tmp_path):
    chat_server.stream_only = True
    chat_server.script([answer(ANSWER)])
    router = ModelRouter(config(chat_server, tmp_path, options=""), retry=FAST)
    try:
        result, _ = await run(router)
    finally:
        await router.aclose()
    assert "stream" not in chat_server.requests[0]  # not asked for …
    assert result["output"] == ANSWER and len(chat_server.requests) == 1  # … read all the same


@pytest.mark.parametrize(
    "broken",
    [
        openai_stream(completion(json.dumps(ANSWER)), pieces=6, cut_after=3),
        sse([{"error": {"message": "Overloaded", "type": "server_error"}}]),
        openai_stream(completion(json.dumps(ANSWER)), done=False, cut_after=2),
    ],
    ids=["cut", "error-event", "no-choices-before-the-end"],
)
async def test_a_broken_stream_is_retried_and_partials_start_over(chat_server, tmp_path, broken):
    chat_server.script([broken, openai_stream(completion(json.dumps(ANSWER)))])
    router = ModelRouter(config(chat_server, tmp_path), retry=FAST)
    retries = []
    router.on_event = lambda kind, data: retries.append(data) if kind == "retry" else None
    seen = []
    try:
        result, _ = await run(router, on_partial=seen.append)
    finally:
        await router.aclose()
    assert result["output"] == ANSWER and len(chat_server.requests) == 2
    assert len(retries) == 1 and retries[0]["kind"] == "transient"
    assert seen[-1] == ANSWER


async def test_anthropic_overloaded_error_event_in_a_stream_is_retried(chat_server, tmp_path):
    overloaded = sse(
        [
            (
                "error",
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            )
        ]
    )
    final = anthropic_message([{"type": "text", "text": json.dumps(ANSWER)}])
    chat_server.script([overloaded, anthropic_stream(final)])
    router = ModelRouter(config(chat_server, tmp_path, kind="anthropic"), retry=FAST)
    try:
        result, _ = await run(router)
    finally:
        await router.aclose()
    assert result["output"] == ANSWER and len(chat_server.requests) == 2


async def test_a_recorded_stream_replays_its_pieces(chat_server, tmp_path):
    cassette = tmp_path / "s.cassette.jsonl"
    chat_server.script([openai_stream(completion(json.dumps(ANSWER)), pieces=8)])
    recording = recording_router(config(chat_server, tmp_path), cassette, retry=FAST)
    live = []
    try:
        await run(recording, on_partial=live.append)
    finally:
        await recording.aclose()
    line = json.loads(cassette.read_text().splitlines()[0])
    assert "".join(line["response"]["chunks"]) == json.dumps(ANSWER)
    replayed = []
    result, _ = await run(ReplayRouter(cassette), on_partial=replayed.append)
    assert result["output"] == ANSWER and replayed == live


# ------------------------------------------------------------------------------ error mapping


async def chat_once(server, tmp_path, kind="openai"):
    router = ModelRouter(config(server, tmp_path, kind=kind, options=""), retry=FAST)
    try:
        return await router.client_for("chat").chat(ChatRequest([Message("user", "hi")]))
    finally:
        await router.aclose()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_200_overloaded_body_is_retried_like_a_529(chat_server, tmp_path, kind):
    final = (
        text("fine") if kind == "openai" else anthropic_message([{"type": "text", "text": "fine"}])
    )
    chat_server.script([overloaded_200(kind), final])
    response = await chat_once(chat_server, tmp_path, kind)
    assert response.text == "fine" and len(chat_server.requests) == 2


async def test_a_200_invalid_request_body_is_permanent(chat_server, tmp_path):
    chat_server.script(
        [{"error": {"message": "bad field", "type": "invalid_request_error"}}, text("never")]
    )
    with pytest.raises(ModelError) as info:
        await chat_once(chat_server, tmp_path)
    assert info.value.kind == "permanent" and len(chat_server.requests) == 1
    assert "HTTP 200 with an error body" in str(info.value)


@pytest.mark.parametrize(
    "reply",
    [
        text(None, finish_reason="content_filter"),
        status(
            400,
            {
                "error": {
                    "message": "The response was filtered due to the prompt triggering Azure "
                    "OpenAI's content management policy.",
                    "type": None,
                    "param": "prompt",
                    "code": "content_filter",
                    "status": 400,
                }
            },
        ),
    ],
    ids=["finish_reason", "http-400"],
)
async def test_a_content_filter_is_its_own_permanent_error(chat_server, tmp_path, reply):
    chat_server.script([reply, text("never")])
    with pytest.raises(ModelError) as info:
        await chat_once(chat_server, tmp_path)
    assert info.value.kind == "content_filter" and len(chat_server.requests) == 1


async def test_a_content_filter_ends_the_agent_step_with_content_filter(chat_server, tmp_path):
    chat_server.script([text(None, finish_reason="content_filter"), text("never")])
    router = ModelRouter(config(chat_server, tmp_path, options=""), retry=FAST)
    try:
        with pytest.raises(RunError) as info:
            await run(router)
    finally:
        await router.aclose()
    assert info.value.code == "content_filter" and len(chat_server.requests) == 1


async def test_a_host_gets_the_partial_answers_of_a_streaming_flow(chat_server, tmp_path):
    from agentflow import api
    from agentflow.ir.loader import load_plan_data

    chat_server.script([openai_stream(completion(json.dumps(ANSWER)), pieces=10)])
    plan = load_plan_data(
        {
            "version": 1,
            "name": "s",
            "steps": [
                {
                    "id": "E0",
                    "tool_name": "agent",
                    "input": {"prompt": "p", "output_schema": CONTRACT, "tools": "none"},
                }
            ],
        },
        "s.plan.yaml",
    )
    seen = []
    result = await api.run(
        plan,
        config=config(chat_server, tmp_path),
        workspace=tmp_path,
        shape_cache=False,
        on_partial=lambda path, value: seen.append((path, value)),
    )
    assert result.status == "ok" and result.output["output"] == ANSWER
    assert len(seen) >= 2 and all(path == "E0" for path, _ in seen)
    assert seen[-1][1] == ANSWER


# ------------------------------------------------------------- streams that just stop (FIN)


def _cut_text():
    # role, "The answer is", " 42" … : cut cleanly after the first piece of text
    return openai_stream(
        completion("The answer is 42."), pieces=2, done=False, cut_after=2, cut="close"
    )


def _cut_call():
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "add", "arguments": json.dumps({"a": 1, "b": 2})},
    }
    # role, the call's head, the first piece of its arguments `{"a": `, then an orderly close
    return openai_stream(completion(calls=[call]), pieces=3, done=False, cut_after=3, cut="close")


@pytest.mark.parametrize("cut", [_cut_text, _cut_call], ids=["text", "tool-call"])
async def test_an_openai_stream_that_stops_without_finish_or_done_is_retried(
    chat_server, tmp_path, cut
):
    chat_server.script([cut(), openai_stream(completion("whole"))])
    router = ModelRouter(config(chat_server, tmp_path), retry=FAST)
    retries = []
    router.on_event = lambda kind, data: retries.append(data) if kind == "retry" else None
    try:
        response = await router.client_for("chat").chat(ChatRequest([Message("user", "hi")]))
    finally:
        await router.aclose()
    assert response.text == "whole" and response.finish_reason == "stop"
    assert len(chat_server.requests) == 2
    assert [r["kind"] for r in retries] == ["transient"]


async def test_an_openai_stream_cut_every_time_ends_as_a_transient_error(chat_server, tmp_path):
    chat_server.script([_cut_text() for _ in range(4)])
    router = ModelRouter(config(chat_server, tmp_path), retry=FAST)
    try:
        with pytest.raises(RunError) as info:
            await run(router)
    finally:
        await router.aclose()
    assert info.value.code == "transient" and len(chat_server.requests) == 4  # 1 + 3 retries
    assert "broke off" in str(info.value)


@pytest.mark.parametrize("finish_only", [True, False], ids=["finish-then-close", "done-only"])
async def test_an_openai_stream_with_its_finish_or_done_is_complete(
    chat_server, tmp_path, finish_only
):
    whole = openai_stream(completion("The answer is 42."), done=not finish_only)
    if not finish_only:  # [DONE] without any finish_reason (some local servers)
        whole.events = [
            (n, d.replace('"finish_reason": "stop"', '"finish_reason": null'))
            for n, d in whole.events or []
        ]
    chat_server.script([whole])
    response = await chat_once_streamed(chat_server, tmp_path)
    assert response.text == "The answer is 42." and len(chat_server.requests) == 1


async def test_an_anthropic_stream_that_stops_before_message_stop_is_retried(chat_server, tmp_path):
    final = anthropic_message([{"type": "text", "text": "The answer is 42."}])
    chat_server.script([anthropic_stream(final, cut_after=3, cut="close"), anthropic_stream(final)])
    response = await chat_once_streamed(chat_server, tmp_path, kind="anthropic")
    assert response.text == "The answer is 42." and len(chat_server.requests) == 2


async def chat_once_streamed(server, tmp_path, kind="openai"):
    router = ModelRouter(config(server, tmp_path, kind=kind), retry=FAST)
    try:
        return await router.client_for("chat").chat(ChatRequest([Message("user", "hi")]))
    finally:
        await router.aclose()
