"""Model I/O (docs/spec/RUNTIME.md §3, §5, §10): what models send back (fenced and trailing-text
answers, bad tool arguments, truncation, optional fields under strict mode, several tool calls and
results per round, raising tools, repeated calls, mixed Anthropic blocks, 429/401), then the
loopback server's faults, the error table, usage per role and per step, record/replay with the
Anthropic protocol, and key hygiene.

Everything talks to the real loopback server of :mod:`support.chat_server` over HTTP.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import pytest
from support.chat_server import (
    ChatServer,
    answer,
    anthropic_error,
    anthropic_message,
    anthropic_text,
    reset,
    status,
    system_text,
    text,
    tool_calls,
    tool_messages,
    tool_use,
)

import agentflow
from agentflow.errors import ModelError, RunError
from agentflow.runtime.agent import AgentSpec, run_agent
from agentflow.runtime.config import load_config
from agentflow.runtime.models.anthropic import AnthropicClient
from agentflow.runtime.models.base import ChatRequest, Message, ToolSpec
from agentflow.runtime.models.http import RetryPolicy, classify
from agentflow.runtime.models.openai import OpenAIClient, strict_schema
from agentflow.runtime.models.router import ModelRouter
from agentflow.runtime.tools.builtin import default_catalog
from agentflow.runtime.tools.catalog import Tool

#: A recognisable fake key: it must never show up in a cassette, trace, log or error.
FAKE_KEY = "sk-fake-AGENTFLOW-CANARY-7f3a9c2e51"
FAST = RetryPolicy(max_retries=2, base=0.01, cap=0.02)
SCHEMA = {
    "type": "object",
    "required": ["answer"],
    "properties": {"answer": {"type": "string"}},
    "additionalProperties": False,
}
CITY_TOOL = ToolSpec(
    "weather", "Weather of a city.", {"type": "object", "properties": {"city": {"type": "string"}}}
)


class Recorder:
    """``call_tool`` + ``emit`` for run_agent: records calls and events."""

    def __init__(self, fail: dict[str, BaseException] | None = None):
        self.calls: list[tuple[str, dict, str]] = []
        self.events: list[tuple[str, str, dict]] = []
        self.fail = fail or {}

    async def call_tool(self, name, args, path):
        self.calls.append((name, args, path))
        if name in self.fail:
            await asyncio.sleep(0.05)
            raise self.fail[name]
        return {"tool": name, "args": args}

    def emit(self, kind, path, **data):
        self.events.append((kind, path, data))

    def warnings(self):
        return [d for k, _, d in self.events if k == "warning"]


def toml(server: ChatServer, kind: str = "openai", *, timeout: float = 5, retries: int = 2) -> str:
    """flow.toml: provider ``p`` (``kind`` protocol) on ``server``, a ``strict`` named model."""
    base = server.url if kind == "openai" else f"http://127.0.0.1:{server.port}"
    return (
        '[models]\ndefault = "p:test-model"\n'
        '[models.named.strict]\nprovider = "p"\nmodel = "test-model"\nstructured_output = true\n'
        f'[providers.p]\nkind = "{kind}"\nbase_url = "{base}"\napi_key_env = "FAKE_KEY_VAR"\n'
        f"max_retries = {retries}\nbackoff_base = 0.01\nbackoff_max = 0.02\ntimeout = {timeout}\n"
        '[agents.helper]\nsystem_prompt = "Be brief."\n'
    )


def make_router(server, tmp_path, kind="openai", **kw):
    path = tmp_path / "flow.toml"
    path.write_text(toml(server, kind, **kw))
    return ModelRouter(load_config(path, env={"FAKE_KEY_VAR": FAKE_KEY}))


async def agent(router, rec, **kw):
    kw.setdefault("prompt", "Do the task.")
    kw.setdefault("output_schema", SCHEMA)
    kw.setdefault("tools", [CITY_TOOL])
    try:
        return await run_agent(
            AgentSpec(**kw), router=router, call_tool=rec.call_tool, emit=rec.emit, step_path="E1"
        )
    finally:
        await router.aclose()


def results_by_id(request):
    return {m["tool_call_id"]: json.loads(m["content"]) for m in tool_messages(request)}


# ------------------------------------------------------------------------ replies and tool calls


async def test_one_wrapping_fence_removed_inner_backticks_survive(chat_server, tmp_path):
    chat_server.script([text('```json\n{"answer": "a ```code``` b"}\n```')])
    result = await agent(make_router(chat_server, tmp_path), Recorder())
    assert result["output"] == {"answer": "a ```code``` b"}
    assert result["final"] is True and result["iterations"] == 1


async def test_trailing_text_noted_no_repair(chat_server, tmp_path):
    chat_server.script([text('{"answer": "yes"} Hope this helps!')])
    rec = Recorder()
    result = await agent(make_router(chat_server, tmp_path), rec)
    assert result["output"] == {"answer": "yes"} and result["final"] is True
    assert len(chat_server.requests) == 1  # no repair pass
    (warning,) = rec.warnings()
    assert warning["trailing"] == "Hope this helps!"


@pytest.mark.parametrize(
    ("n", "arguments", "quoted"),
    [
        (3, '{"city": "Paris"}{"city": "Rome"}', "Extra data"),
        (4, '{"city": "Par', "Unterminated string"),
    ],
    ids=["acc03_two_objects_back_to_back", "acc04_cut_off_mid_string"],
)
async def test_bad_arguments_never_run(chat_server, tmp_path, n, arguments, quoted):
    chat_server.script(
        [
            tool_calls(("weather", arguments, "c1")),
            tool_calls(("weather", {"city": "Paris"}, "c2")),
            answer({"answer": "sunny"}),
        ]
    )
    rec = Recorder()
    result = await agent(make_router(chat_server, tmp_path), rec)
    # the bad call was not run; the model got a tool error quoting the parse error; the loop went on
    assert [args for _, args, _ in rec.calls] == [{"city": "Paris"}]
    error = results_by_id(chat_server.requests[1])["c1"]["error"]
    assert error["code"] == "tool_error" and quoted in error["message"]
    assert arguments in error["message"]
    assert result["final"] is True and result["iterations"] == 3
    assert any("not run" in w["message"] for w in rec.warnings())


async def test_openai_length_with_tool_call_is_truncation(chat_server, tmp_path):
    chat_server.script(
        [
            tool_calls(("weather", '{"city": "Par', "c1"), finish_reason="length"),
            answer({"answer": "ok"}),
        ]
    )
    rec = Recorder()
    result = await agent(make_router(chat_server, tmp_path), rec)
    assert rec.calls == [] and result["final"] is True and result["iterations"] == 2
    error = results_by_id(chat_server.requests[1])["c1"]["error"]
    assert error["code"] == "truncated" and "output token limit" in error["message"]
    assert "schema" not in error["message"].lower()
    assert any(w.get("truncated") for w in rec.warnings())


async def test_anthropic_max_tokens_partial_tool_use_is_truncation(chat_server, tmp_path):
    chat_server.script(
        [
            anthropic_message(
                [
                    {"type": "text", "text": "Checking."},
                    tool_use("weather", {"city": "Par"}, "tu1"),
                ],
                "max_tokens",
            ),
            anthropic_text('{"answer": "ok"}'),
        ]
    )
    rec = Recorder()
    result = await agent(make_router(chat_server, tmp_path, "anthropic"), rec)
    assert rec.calls == []  # parsable, but possibly incomplete: never run
    assert result["final"] is True and result["iterations"] == 2
    results = chat_server.requests[1]["messages"][-1]
    assert results["role"] == "user"
    (block,) = results["content"]
    assert block["type"] == "tool_result" and block["tool_use_id"] == "tu1"
    assert block["is_error"] is True and "truncated" in block["content"]
    assert any(w.get("truncated") for w in rec.warnings())


async def test_truncated_text_answer_reported_as_truncation(chat_server, tmp_path):
    chat_server.script(
        [anthropic_text('{"answer": "a very lo', "max_tokens"), anthropic_text('{"answer": "a"}')]
    )
    rec = Recorder()
    result = await agent(make_router(chat_server, tmp_path, "anthropic"), rec)
    assert result["output"] == {"answer": "a"} and len(chat_server.requests) == 2  # no repair
    feedback = chat_server.requests[1]["messages"][-1]["content"][-1]["text"]
    assert "truncated" in feedback and "does not conform" not in feedback
    assert [w["message"] for w in rec.warnings()] == [
        "the model's reply was truncated by the output token limit"
    ]


async def test_truncated_repair_reply_is_reported(chat_server, tmp_path):
    def script(request):
        if request["messages"][0]["content"].startswith("You fix JSON"):
            return text('{"answer": "fix', finish_reason="length")
        return answer({"answer": 1}) if len(chat_server.requests) == 1 else answer({"answer": "b"})

    chat_server.script(script)
    rec = Recorder()
    result = await agent(make_router(chat_server, tmp_path), rec)
    assert result["output"] == {"answer": "b"}
    assert any("repair pass's reply was truncated" in w["message"] for w in rec.warnings())


def _walk_schemas(node, found):
    """Collect every keyword of every schema node (property *names* are not keywords)."""
    if isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            if key in ("properties", "$defs", "patternProperties"):
                for sub in value.values():
                    _walk_schemas(sub, found)
            else:
                _walk_schemas(value, found)
    elif isinstance(node, list):
        for item in node:
            _walk_schemas(item, found)


def _contracts(plan, out):
    if isinstance(plan, dict):
        for key, value in plan.items():
            if key in ("output_schema", "input_schema") and isinstance(value, dict):
                out.append(value)
            else:
                _contracts(value, out)
    elif isinstance(plan, list):
        for item in plan:
            _contracts(item, out)


OPT_FLOW = """\
flow optdemo "Answer with optional fields"
input Q

use agent "helper" as helper

type Q {
  q: text
}

type A {
  answer: text
  note: text?
  tags: text[]?
}

stage answer -> A {
  let r = agent(helper) {
    task "Answer the question."
    input { q: input.q }
    tools [read_file]
    expect A
  }
  let s = agent(helper) {
    task "Check the answer."
    input { previous: r.answer }
    tools none
    expect A
    model "strict"
  }
  return s
}
"""


def test_no_compiled_contract_contains_default():
    from support.paths import REPO as root

    files = sorted((root / "examples").glob("*.flow"))
    assert files
    contracts: list[dict] = []
    for path in files:
        _contracts(agentflow.compile_flow(path).plan, contracts)
    _contracts(agentflow.compile_source(OPT_FLOW, "opt.flow").plan, contracts)
    assert len(contracts) > 5
    for contract in contracts:
        keywords: set[str] = set()
        _walk_schemas(contract, keywords)
        assert "default" not in keywords, contract


async def test_optional_field_strict_required_nullable_null_validates(chat_server, tmp_path):
    contract = _contracts_of(agentflow.compile_source(OPT_FLOW, "opt.flow").plan)[-1]
    assert contract["required"] == ["answer"]  # the original: note/tags optional
    strict = strict_schema(contract)
    assert strict["required"] == ["answer", "note", "tags"]
    assert strict["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert "$schema" not in strict and "default" not in json.dumps(strict)
    # the provider gets the strict form; the answer is validated against the original contract
    chat_server.script([answer({"answer": "x", "note": None, "tags": None})])
    result = await agent(
        make_router(chat_server, tmp_path), Recorder(), output_schema=contract, model="strict"
    )
    assert result["output"] == {"answer": "x", "note": None, "tags": None} and result["final"]
    fmt = chat_server.requests[0]["response_format"]["json_schema"]
    assert fmt["strict"] is True and fmt["schema"] == strict
    # the original contract (not the strict one) decides: an answer omitting note is fine
    chat_server.script([answer({"answer": "y"})])
    result = await agent(
        make_router(chat_server, tmp_path), Recorder(), output_schema=contract, model="strict"
    )
    assert result["output"] == {"answer": "y"} and result["final"] is True


def _contracts_of(plan):
    out: list[dict] = []
    _contracts(plan, out)
    return [c for c in out if "answer" in c.get("properties", {})]


async def test_two_calls_one_raising_one_result_per_id(chat_server, tmp_path):
    chat_server.script(
        [
            tool_calls(("weather", {"city": "Oslo"}, "ok1"), ("explode", {}, "bad1")),
            answer({"answer": "partial"}),
        ]
    )
    rec = Recorder(fail={"explode": RuntimeError("sensor offline")})
    tools = [CITY_TOOL, ToolSpec("explode", "Fails.", {"type": "object"})]
    result = await agent(make_router(chat_server, tmp_path), rec, tools=tools)
    assert result["final"] is True and result["iterations"] == 2
    messages = tool_messages(chat_server.requests[1])
    assert sorted(m["tool_call_id"] for m in messages) == ["bad1", "ok1"]  # exactly one each
    by_id = results_by_id(chat_server.requests[1])
    assert by_id["ok1"] == {"tool": "weather", "args": {"city": "Oslo"}}
    assert by_id["bad1"]["error"] == {
        "code": "tool_error",
        "message": "RuntimeError: sensor offline",
    }


async def test_anthropic_two_results_in_one_user_message(chat_server, tmp_path):
    chat_server.script(
        [
            anthropic_message(
                [
                    tool_use("weather", {"city": "Oslo"}, "t1"),
                    tool_use("weather", {"city": "Rome"}, "t2"),
                ],
                "tool_use",
            ),
            anthropic_text('{"answer": "done"}'),
        ]
    )
    result = await agent(make_router(chat_server, tmp_path, "anthropic"), Recorder())
    assert result["final"] is True
    messages = chat_server.requests[1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    blocks = messages[2]["content"]
    assert [(b["type"], b["tool_use_id"]) for b in blocks] == [
        ("tool_result", "t1"),
        ("tool_result", "t2"),
    ]
    assert "Oslo" in blocks[0]["content"] and "Rome" in blocks[1]["content"]


@pytest.mark.parametrize(
    "exc", [ZeroDivisionError("division by zero"), KeyError("x"), OSError(5, "I/O error")]
)
async def test_raising_tool_never_ends_the_run(chat_server, tmp_path, exc):
    """Through the whole stack: a catalog tool that raises inside a compiled flow's agent."""

    def boom(args, ctx):
        raise exc

    catalog = default_catalog()
    catalog.register(
        Tool("builtin__read_file", "Read a file.", {"type": "object"}, boom), replace=True
    )

    def script(request):
        results = tool_messages(request)
        if "Check the answer" in json.dumps(request["messages"]):
            return answer({"answer": "checked"})
        if not results:
            return tool_calls(("builtin__read_file", {"path": "a.txt"}, "r1"))
        assert type(exc).__name__ in results[0]["content"]
        return answer({"answer": "could not read"})

    chat_server.script(script)
    flow = tmp_path / "opt.flow"
    flow.write_text(OPT_FLOW)
    (tmp_path / "flow.toml").write_text(toml(chat_server))
    result = await agentflow.run(
        flow,
        {"q": "?"},
        config=load_config(tmp_path / "flow.toml", env={"FAKE_KEY_VAR": FAKE_KEY}),
        workspace=tmp_path,
        catalog=catalog,
    )
    assert result.status == "ok", result.error
    assert result.output == {"answer": "checked"}


async def test_identical_call_three_rounds_reported_round_limit_ends(chat_server, tmp_path):
    chat_server.script([tool_calls(("weather", {"city": "Oslo"})) for _ in range(3)])
    rec = Recorder()
    result = await agent(make_router(chat_server, tmp_path), rec, max_iterations=3)
    assert result == {
        "output": {},
        "iterations": 3,
        "tools_called": [{"tool": "weather", "round": r} for r in (1, 2, 3)],
        "final": False,
        "errors": ["the agent was still calling tools when its rounds ran out"],
    }
    # reported to the model (round 2's result, seen in round 3's request) …
    (second,) = tool_messages(chat_server.requests[2])[-1:]
    assert "repeats one you made in round 1" in second["content"]
    # … and in the trace, for both repetitions
    repeats = [w for w in rec.warnings() if "repeated" in w]
    assert [w["repeated"] for w in repeats] == [2, 3]
    assert len(chat_server.requests) == 3


async def test_anthropic_mixed_blocks_selected_by_type_nothing_lost(chat_server, tmp_path):
    blocks = [
        {"type": "thinking", "thinking": "Weather first.", "signature": "c2lnbmF0dXJl"},
        {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
        {"type": "text", "text": "Let me check "},
        tool_use("weather", {"city": "Zürich"}, "tu_9"),
        {"type": "text", "text": "the sky."},
    ]
    chat_server.script([anthropic_message(blocks, "tool_use"), anthropic_text('{"answer": "ok"}')])
    rec = Recorder()
    result = await agent(make_router(chat_server, tmp_path, "anthropic"), rec)
    assert result["final"] is True
    assert rec.calls == [("weather", {"city": "Zürich"}, "E1/agent.1/weather")]
    second = chat_server.requests[1]["messages"]
    assert second[1] == {"role": "assistant", "content": blocks}  # block for block, in order
    assert second[2]["content"][0]["tool_use_id"] == "tu_9"


async def test_429_retry_after_one_second_rounds_unchanged(chat_server, tmp_path):
    chat_server.script(
        [status(429, headers={"Retry-After": "1"}), answer({"answer": "after the wait"})]
    )
    started = time.perf_counter()
    result = await agent(make_router(chat_server, tmp_path), Recorder(), max_iterations=1)
    assert time.perf_counter() - started >= 1.0
    assert len(chat_server.requests) == 2  # exactly one retry
    assert result["final"] is True and result["iterations"] == 1


async def test_401_no_retry_names_provider_never_the_key(chat_server, tmp_path):
    body = {
        "error": {"message": f"Incorrect API key provided: {FAKE_KEY}", "code": "invalid_api_key"}
    }
    chat_server.script([status(401, body=body), answer({"answer": "never"})])
    with pytest.raises(RunError) as info:
        await agent(make_router(chat_server, tmp_path), Recorder())
    assert len(chat_server.requests) == 1
    message = str(info.value)
    assert "model provider 'p'" in message and "401" in message
    assert FAKE_KEY not in message and FAKE_KEY not in repr(info.value.details)


# ------------------------------------------------------------------------ faults, both protocols


def _client(kind, server, **kw):
    if kind == "openai":
        return OpenAIClient(provider="p", base_url=server.url, model="m", api_key=FAKE_KEY, **kw)
    return AnthropicClient(
        provider="p", base_url=f"http://127.0.0.1:{server.port}", model="m", api_key=FAKE_KEY, **kw
    )


def _ok(kind):
    return text("fine") if kind == "openai" else anthropic_text("fine")


async def _chat(client):
    try:
        return await client.chat(ChatRequest(messages=[Message(role="user", content="hi")]))
    finally:
        await client.aclose()


PROTOCOLS = ["openai", "anthropic"]


@pytest.mark.parametrize("kind", PROTOCOLS)
@pytest.mark.parametrize(
    "fault",
    ["500", "529", "reset", "drop", "429"],
)
async def test_fault_is_retried_then_succeeds(chat_server, kind, fault):
    first = {
        "500": status(500),
        "529": anthropic_error(529),
        "reset": reset(),
        "drop": reset(before_reply=True),
        "429": status(429, headers={"Retry-After": "0.05"}),
    }[fault]
    chat_server.script([first, _ok(kind)])
    retries = []
    response = await _chat(_client(kind, chat_server, retry=FAST, on_retry=retries.append))
    assert response.text == "fine"
    assert len(chat_server.requests) == 2
    assert [r["kind"] for r in retries] == ["rate_limit" if fault == "429" else "transient"]


@pytest.mark.parametrize("kind", PROTOCOLS)
async def test_slow_reply_times_out_is_retried_then_errors(chat_server, kind):
    slow = text("late", delay=1.5)  # never seen: the client gives up after 0.25 s
    chat_server.script([slow, slow, slow])
    started = time.perf_counter()
    with pytest.raises(ModelError) as info:
        await _chat(_client(kind, chat_server, retry=FAST, timeout=0.25))
    assert time.perf_counter() - started < 1.4  # three attempts of 0.25 s, never the full 1.5 s
    assert info.value.kind == "transient" and "timed out" in str(info.value)
    assert "after 3 attempts" in str(info.value)
    assert len(chat_server.requests) == 3


async def test_slow_reply_then_fast_reply_succeeds(chat_server):
    chat_server.script([text("late", delay=1.0), text("quick")])
    response = await _chat(_client("openai", chat_server, retry=FAST, timeout=0.25))
    assert response.text == "quick"


@pytest.mark.parametrize("kind", PROTOCOLS)
async def test_reset_every_time_gives_transient_error(chat_server, kind):
    chat_server.script([reset(), reset(), reset()])
    with pytest.raises(ModelError) as info:
        await _chat(_client(kind, chat_server, retry=FAST))
    assert info.value.kind == "transient" and "connection failed" in str(info.value)


@pytest.mark.parametrize(
    ("kind", "reply", "expected_text"),
    [
        ("openai", text('{"a": "cut', finish_reason="length"), '{"a": "cut'),
        ("anthropic", anthropic_text('{"a": "cut', "max_tokens"), '{"a": "cut'),
    ],
)
async def test_reply_cut_off_by_token_limit(chat_server, kind, reply, expected_text):
    chat_server.script([reply])
    response = await _chat(_client(kind, chat_server, retry=FAST))
    assert response.finish_reason == "length" and response.text == expected_text


# ------------------------------------------------------------------------ error classification

QUOTA = '{"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "code": "insufficient_quota"}}'
ANTHROPIC_RATE = '{"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}}'
OVERLOADED = '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
OPENAI_RATE = '{"error": {"message": "Rate limit reached for gpt-4o-mini on tokens per min (TPM)", "type": "tokens", "code": "rate_limit_exceeded"}}'


@pytest.mark.parametrize(
    ("status_code", "body", "kind"),
    [
        (429, "{}", "rate_limit"),
        (429, OPENAI_RATE, "rate_limit"),
        (429, ANTHROPIC_RATE, "rate_limit"),
        (429, QUOTA, "permanent"),
        (
            429,
            '{"error": {"message": "Quota exceeded for metric requests per minute"}}',
            "rate_limit",
        ),
        (429, '{"error": {"message": "You have reached your spend limit"}}', "permanent"),
        (408, "", "transient"),
        (409, "", "transient"),
        (500, "", "transient"),
        (502, "<html>Bad Gateway</html>", "transient"),
        (503, "", "transient"),
        (504, "", "transient"),
        (529, OVERLOADED, "transient"),
        (400, OVERLOADED, "transient"),
        (400, '{"error": {"message": "bad request"}}', "permanent"),
        (401, "{}", "permanent"),
        (403, "{}", "permanent"),
        (404, "{}", "permanent"),
        (413, "{}", "permanent"),
        (422, "{}", "permanent"),
        (
            400,
            '{"type": "error", "error": {"type": "invalid_request_error", "message": "Your credit balance is too low"}}',
            "permanent",
        ),
    ],
)
def test_error_classification_table(status_code, body, kind):
    assert classify(status_code, body) == kind


@pytest.mark.parametrize("code", [400, 401, 403, 404, 413, 422])
async def test_permanent_statuses_are_never_retried(chat_server, code):
    chat_server.script([status(code), text("never")])
    with pytest.raises(ModelError) as info:
        await _chat(_client("openai", chat_server, retry=FAST))
    assert info.value.kind == "permanent" and len(chat_server.requests) == 1


# ------------------------------------------------------------------------ usage, events, keys


def _two_agent_script(request):
    """E0 reads a file then answers; E1 answers invalid, the repair role fixes it."""
    messages = request["messages"]
    system = messages[0]["content"] if isinstance(messages[0].get("content"), str) else ""
    if system.startswith("You fix JSON"):
        return answer({"answer": "repaired"}, usage=(30, 3))
    if "Check the answer" in json.dumps(messages):
        return answer({"note": "no answer field"}, usage=(20, 2))
    if not tool_messages(request):
        return tool_calls(("builtin__read_file", {"path": "a.txt"}, "r1"), usage=(11, 1))
    return answer({"answer": "read it"}, usage=(12, 2))


def _run_two_agents(server, tmp_path, **kw):
    flow = tmp_path / "opt.flow"
    flow.write_text(OPT_FLOW)
    (tmp_path / "a.txt").write_text("hello")
    (tmp_path / "flow.toml").write_text(toml(server))
    config = load_config(tmp_path / "flow.toml", env={"FAKE_KEY_VAR": FAKE_KEY})
    return agentflow.run_sync(flow, {"q": "?"}, config=config, workspace=tmp_path, **kw)


def test_usage_per_role_and_per_step_in_result_and_events(chat_server, tmp_path):
    chat_server.script(_two_agent_script)
    trace = tmp_path / "trace.jsonl"
    result = _run_two_agents(chat_server, tmp_path, trace=trace)
    assert result.status == "ok", result.error
    usage = result.usage
    assert (usage["inferences"], usage["input_tokens"], usage["output_tokens"]) == (4, 73, 8)
    assert usage["by_role"] == {
        "chat": {"inferences": 2, "input_tokens": 23, "output_tokens": 3},
        "strict": {"inferences": 1, "input_tokens": 20, "output_tokens": 2},
        "repair": {"inferences": 1, "input_tokens": 30, "output_tokens": 3},
    }
    assert usage["by_step"] == {
        "E0": {
            "inferences": 2,
            "input_tokens": 23,
            "output_tokens": 3,
            "by_role": {"chat": {"inferences": 2, "input_tokens": 23, "output_tokens": 3}},
        },
        "E1": {
            "inferences": 2,
            "input_tokens": 50,
            "output_tokens": 5,
            "by_role": {
                "strict": {"inferences": 1, "input_tokens": 20, "output_tokens": 2},
                "repair": {"inferences": 1, "input_tokens": 30, "output_tokens": 3},
            },
        },
    }
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    calls = [e for e in events if e["kind"] == "model_call"]
    assert [(e["path"], e["data"]["role"], e["data"]["input_tokens"]) for e in calls] == [
        ("E0", "chat", 11),
        ("E0", "chat", 12),
        ("E1", "strict", 20),
        ("E1", "repair", 30),
    ]
    finished = {e["path"]: e["data"] for e in events if e["kind"] == "step_finished"}
    assert finished["E0"]["usage"] == {"inferences": 2, "input_tokens": 23, "output_tokens": 3}
    assert finished["E1"]["usage"] == {"inferences": 2, "input_tokens": 50, "output_tokens": 5}
    (run_finished,) = [e for e in events if e["kind"] == "run_finished"]
    assert run_finished["data"]["usage"] == usage


@pytest.mark.parametrize("kind", PROTOCOLS)
def test_key_never_in_cassette_trace_log_or_error(chat_server, tmp_path, kind, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    leak = {"error": {"message": f"upstream echoed {FAKE_KEY}", "type": "server_error"}}
    chat_server.script(_leaky(kind, leak))
    flow = tmp_path / "opt.flow"
    flow.write_text(OPT_FLOW)
    (tmp_path / "a.txt").write_text("hello")
    (tmp_path / "flow.toml").write_text(toml(chat_server, kind))
    config = load_config(tmp_path / "flow.toml", env={"FAKE_KEY_VAR": FAKE_KEY})
    trace, cassette = tmp_path / "trace.jsonl", tmp_path / "run.cassette.jsonl"
    result = agentflow.run_sync(
        flow, {"q": "?"}, config=config, workspace=tmp_path, trace=trace, record=cassette
    )
    assert result.status == "ok", result.error
    header = "Authorization" if kind == "openai" else "x-api-key"
    assert any(FAKE_KEY in h.get(header, "") for h in chat_server.headers)  # it was sent …
    retries = [e for e in map(json.loads, trace.read_text().splitlines()) if e["kind"] == "retry"]
    assert len(retries) == 2 and "***" in retries[0]["data"]["message"]
    # … a permanent failure echoing the key
    chat_server.script([status(401, body=leak)])
    failed = agentflow.run_sync(
        flow, {"q": "?"}, config=config, workspace=tmp_path, trace=tmp_path / "t2.jsonl"
    )
    assert failed.status == "error" and "'p'" in failed.error["message"]
    out = capsys.readouterr()
    for haystack in (
        cassette.read_text(),
        trace.read_text(),
        (tmp_path / "t2.jsonl").read_text(),
        caplog.text,
        out.out + out.err,
        json.dumps(result.to_dict(), default=str),
        json.dumps(failed.to_dict(), default=str),
    ):
        assert FAKE_KEY not in haystack
    for written in (cassette, trace, tmp_path / "t2.jsonl"):
        lowered = written.read_text().lower()
        assert "authorization" not in lowered and "x-api-key" not in lowered


def _leaky(kind, leak):
    """Script: a 500 and a 429 (both echoing the key), then the two-agent conversation."""
    state = {"n": 0}

    def script(request):
        state["n"] += 1
        if state["n"] == 1:
            return status(500, body=leak)
        if state["n"] == 2:
            return status(429, body=leak, headers={"Retry-After": "0"})
        if kind == "openai":
            return _two_agent_script(request)
        return _anthropic_two_agent(request)

    return script


def _anthropic_two_agent(request):
    system = system_text(request)
    flat = json.dumps(request["messages"])
    if system.startswith("You fix JSON"):
        return anthropic_text('{"answer": "repaired"}')
    if "Check the answer" in flat:
        return anthropic_message(
            [
                {"type": "thinking", "thinking": "Hm.", "signature": "c2ln"},
                {"type": "text", "text": '{"answer": "checked"}'},
            ]
        )
    if "tool_result" not in flat:
        return anthropic_message(
            [tool_use("builtin__read_file", {"path": "a.txt"}, "r1")], "tool_use"
        )
    return anthropic_text('{"answer": "read it"}')


# ------------------------------------------------------------------------ record / replay


def test_anthropic_cassette_replays_and_replay_miss_shows_nearest(chat_server, tmp_path):
    chat_server.script(_anthropic_two_agent)
    flow = tmp_path / "opt.flow"
    flow.write_text(OPT_FLOW)
    (tmp_path / "a.txt").write_text("hello")
    (tmp_path / "flow.toml").write_text(toml(chat_server, "anthropic"))
    config = load_config(tmp_path / "flow.toml", env={"FAKE_KEY_VAR": FAKE_KEY})
    cassette = tmp_path / "anthropic.cassette.jsonl"
    recorded = agentflow.run_sync(
        flow, {"q": "first question"}, config=config, workspace=tmp_path, record=cassette
    )
    assert recorded.status == "ok", recorded.error
    assert FAKE_KEY not in cassette.read_text()
    chat_server.stop()
    empty = load_config(cwd=tmp_path / "nowhere", env={})  # no model, no key, no provider
    replayed = agentflow.run_sync(
        flow, {"q": "first question"}, config=empty, workspace=tmp_path, replay=cassette
    )
    assert replayed.status == "ok", replayed.error
    assert replayed.output == recorded.output == {"answer": "checked"}
    assert replayed.usage["by_step"].keys() == recorded.usage["by_step"].keys()
    missed = agentflow.run_sync(
        flow, {"q": "second question"}, config=empty, workspace=tmp_path, replay=cassette
    )
    assert missed.status == "error" and missed.error["code"] == "replay_miss"
    assert missed.error["step_path"] == "E0"
    message = missed.error["message"]
    assert "nearest recorded request" in message
    # the diff shows the recorded input against this one
    assert any(line.startswith("-") and "first question" in line for line in message.splitlines())
    assert any(line.startswith("+") and "second question" in line for line in message.splitlines())


def test_openai_options_tool_choice_and_parallel_calls(chat_server, tmp_path):
    (tmp_path / "flow.toml").write_text(
        toml(chat_server).replace(
            "structured_output = true\n",
            'structured_output = true\ntool_choice = "required"\nparallel_tool_calls = false\n',
        )
    )
    config = load_config(tmp_path / "flow.toml", env={"FAKE_KEY_VAR": FAKE_KEY})
    router = ModelRouter(config)
    chat_server.script([text("ok"), text("ok")])

    async def go():
        try:
            client = router.client_for("strict")
            await client.chat(
                ChatRequest(messages=[Message(role="user", content="x")], tools=[CITY_TOOL])
            )
            await client.chat(ChatRequest(messages=[Message(role="user", content="x")]))
        finally:
            await router.aclose()

    asyncio.run(go())
    with_tools, without = chat_server.requests
    assert with_tools["tool_choice"] == "required" and with_tools["parallel_tool_calls"] is False
    assert "tool_choice" not in without and "parallel_tool_calls" not in without
