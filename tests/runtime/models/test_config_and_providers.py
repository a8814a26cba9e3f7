"""Configuration (docs/spec/RUNTIME.md §5–6) and the OpenAI-compatible provider against a real HTTP
server."""

from __future__ import annotations

import json
import time

import pytest
from support.chat_server import (
    TEST_API_KEY,
    ChatServer,
    anthropic_message,
    anthropic_text,
    status,
    system_text,
    text,
    tool_calls,
)

from agentflow.errors import ConfigError, ModelError
from agentflow.runtime.agent import AgentSpec, run_agent
from agentflow.runtime.config import load_config, no_model_message
from agentflow.runtime.models.base import ChatRequest, Message, ToolSpec
from agentflow.runtime.models.http import RetryPolicy, classify, parse_retry_after
from agentflow.runtime.models.openai import OpenAIClient
from agentflow.runtime.models.router import ModelRouter

FAST = RetryPolicy(max_retries=3, base=0.01, cap=0.02)

EXAMPLE = """\
[models]
default = "openai:gpt-4o-mini"
judge = ["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest"]   # failover order
[models.named.fast]
provider = "local"
model = "qwen2.5:7b"
[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
api_key_env = "OLLAMA_API_KEY"          # optional
[agents.repo-investigator]
model = "fast"
system_prompt = "You investigate repositories."
[teams.dev-team]
main = "lead"
members = { lead = { model = "default" }, backend = { system_prompt = "You own the API." } }
[mcp.linear]
command = "npx"
args = ["-y", "some-linear-mcp-server"]
[policy]
allowed_tools = ["builtin__*", "linear__*", "plan__*"]
"""


# --------------------------------------------------------------------------- configuration


def test_spec_example_loads(tmp_path):
    (tmp_path / "flow.toml").write_text(EXAMPLE)
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    config = load_config(cwd=sub, env={})
    assert config.path == tmp_path / "flow.toml"
    assert config.has_model()
    assert config.agents["repo-investigator"].model == "fast"
    assert config.teams["dev-team"].members["backend"].system_prompt == "You own the API."
    assert config.mcp["linear"].command == "npx"
    assert config.policy.allowed_tools == ["builtin__*", "linear__*", "plan__*"]
    # roles fall back to default; a list is a failover order; named models resolve
    assert [m.label for m in config.resolve("chat")] == ["openai:gpt-4o-mini"]
    judge = config.resolve("judge")
    assert [(m.provider_name, m.model) for m in judge] == [
        ("openai", "gpt-4o-mini"),
        ("anthropic", "claude-3-5-haiku-latest"),
    ]
    assert judge[1].provider.kind == "anthropic"
    fast = config.resolve("fast")[0]
    assert (fast.provider.base_url, fast.model) == ("http://127.0.0.1:11434/v1", "qwen2.5:7b")
    assert config.resolve("repair")[0].model == "gpt-4o-mini"


def test_env_only_default(tmp_path):
    config = load_config(cwd=tmp_path, env={"OPENAI_BASE_URL": "http://x/v1"})
    assert config.path is None
    resolved = config.resolve("chat")[0]
    assert (resolved.provider.base_url, resolved.model) == ("http://x/v1", "gpt-4o-mini")
    config = load_config(cwd=tmp_path, env={"OPENAI_API_KEY": "k", "OPENAI_MODEL": "m1"})
    assert config.resolve("planner")[0].model == "m1"
    assert config.api_key(config.resolve("planner")[0].provider) == "k"


def test_no_model_message(tmp_path):
    config = load_config(cwd=tmp_path, env={})
    assert not config.has_model()
    with pytest.raises(ConfigError) as info:
        config.resolve("chat")
    message = str(info.value)
    assert "OPENAI_BASE_URL" in message and "OPENAI_API_KEY" in message and "flow.toml" in message
    assert message == no_model_message(config, role="chat")
    # the offline options too: the built-in test model, a recorded cassette
    assert message.endswith(
        "Or try it offline with the built-in test model (made-up answers, no network, no key): "
        '`--model test`, or a provider with kind = "test" in flow.toml; `--replay CASSETTE` '
        "answers from a recorded run (`--record CASSETTE`)."
    )


def test_toml_syntax_error_names_file_and_line(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text('[models]\ndefault = "openai:x"\nchat = \n')
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert str(info.value).startswith(f"{path}:3:")


def test_unknown_key_names_line(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text(
        '[models]\ndefault = "openai:x"\n\n[providers.local]\nkind = "openai"\nbase_ur = "http://x"\n'
    )
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert f"{path}:6:" in str(info.value)
    assert "base_ur" in str(info.value)


def test_bad_provider_kind_and_unknown_provider(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text('[providers.p]\nkind = "cohere"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert f"{path}:2:" in str(info.value)
    path.write_text('[models]\ndefault = "nowhere:m"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert f"{path}:2:" in str(info.value) and "nowhere" in str(info.value)
    path.write_text('[models.named.fast]\nprovider = "ghost"\nmodel = "m"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert f"{path}:2:" in str(info.value) and "ghost" in str(info.value)


@pytest.mark.parametrize(
    ("toml", "suggestion"),
    [
        ('[models]\ndefault = "gpt-4o"\n', "did you mean 'openai:gpt-4o'?"),
        ('[models]\ndefault = "claude-sonnet-4"\n', "did you mean 'anthropic:claude-sonnet-4'?"),
        ('[models]\ndefault = "plannr"\n', "did you mean 'planner'?"),
        (
            '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
            '[models]\ndefault = "llama3"\n',
            "did you mean 'local:llama3'?",
        ),
    ],
)
def test_a_model_without_its_provider_suggests_the_provider(tmp_path, toml, suggestion):
    path = tmp_path / "flow.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert suggestion in str(info.value)


def test_team_main_must_be_member(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text('[teams.t]\nmain = "boss"\nmembers = { a = {} }\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert f"{path}:2:" in str(info.value)


def test_unknown_model_reference(tmp_path):
    config = load_config(cwd=tmp_path, env={"OPENAI_API_KEY": "k"})
    with pytest.raises(ConfigError, match="unknown model 'fastest'"):
        config.resolve("fastest")


def test_unknown_model_of_an_agent_profile_or_team_member_fails_at_load(tmp_path):
    """docs/spec/RUNTIME.md §6: a model reference in `[agents.X]` or a team member that names no
    role, named model or provider is a ConfigError with file:line at load, not a `validation` error
    when the agent's step runs (after earlier steps did their work); roles still need no
    model at load (`--replay` runs without one)."""
    import pytest

    from agentflow.errors import ConfigError

    base = '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
    bad = {
        '[agents.inv]\nmodel = "fsat"\n': ("flow.toml:5:1:", "[agents.inv] model", "'fsat'"),
        '[teams.dev]\nmain = "lead"\nmembers = { lead = {}, be = { model = "nope:x" } }\n': (
            "flow.toml:6:1:",
            "[teams.dev] member 'be' model",
            "provider 'nope'",
        ),
    }
    for extra, needles in bad.items():
        (tmp_path / "flow.toml").write_text(base + extra)
        with pytest.raises(ConfigError) as info:
            load_config(tmp_path / "flow.toml", env={})
        assert all(n in str(info.value) for n in needles), str(info.value)
    (tmp_path / "flow.toml").write_text(
        base + '[agents.inv]\nmodel = "chat"\n[agents.two]\nmodel = "local:m"\n'
    )
    config = load_config(tmp_path / "flow.toml", env={})  # no model at all: still loads
    assert config.agents["inv"].model == "chat"


def test_missing_explicit_path(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml", env={})


# --------------------------------------------------------------------------- provider


def _client(server: ChatServer, **kw) -> OpenAIClient:
    return OpenAIClient(
        provider="scripted",
        base_url=server.url,
        model="test-model",
        api_key=TEST_API_KEY,
        retry=kw.pop("retry", FAST),
        **kw,
    )


async def test_provider_text_answer(chat_server):
    chat_server.script([text("héllo ✓")])
    client = _client(chat_server)
    try:
        response = await client.chat(
            ChatRequest(messages=[Message(role="user", content="hi ✓")], max_tokens=50)
        )
    finally:
        await client.aclose()
    assert response.text == "héllo ✓"
    assert response.finish_reason == "stop"
    assert response.usage == {"input_tokens": 10, "output_tokens": 5}
    request = chat_server.requests[0]
    assert request["model"] == "test-model" and request["max_tokens"] == 50
    assert request["messages"] == [{"role": "user", "content": "hi ✓"}]
    assert chat_server.headers[0]["Authorization"] == f"Bearer {TEST_API_KEY}"


async def test_provider_tool_calls_raw_arguments(chat_server):
    chat_server.script(
        [
            tool_calls(
                ("search", {"q": "ünï"}, "c1"),
                ("search", '{"q": 1}{"q": 2}', "c2"),
                ("read", ("object", {"path": "a"}), None),
            )
        ]
    )
    client = _client(chat_server)
    tools = [
        ToolSpec("search", "Search.", {"type": "object", "properties": {"q": {"type": "string"}}})
    ]
    try:
        response = await client.chat(
            ChatRequest(messages=[Message(role="user", content="x")], tools=tools)
        )
    finally:
        await client.aclose()
    assert response.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in response.tool_calls] == [
        ("c1", "search"),
        ("c2", "search"),
        ("", "read"),
    ]
    assert json.loads(response.tool_calls[0].arguments) == {"q": "ünï"}
    assert response.tool_calls[1].arguments == '{"q": 1}{"q": 2}'  # raw, not "fixed"
    assert response.tool_calls[2].arguments == {"path": "a"}
    sent = chat_server.requests[0]["tools"]
    assert sent == [
        {
            "type": "function",
            "function": {
                "name": "search",
                "description": "Search.",
                "parameters": tools[0].input_schema,
            },
        }
    ]


async def test_provider_429_retry_after_then_success(chat_server):
    chat_server.script([status(429, headers={"Retry-After": "0.3"}), text("ok")])
    retries = []
    client = _client(chat_server, on_retry=retries.append)
    started = time.perf_counter()
    try:
        response = await client.chat(ChatRequest(messages=[Message(role="user", content="x")]))
    finally:
        await client.aclose()
    assert response.text == "ok"
    assert time.perf_counter() - started >= 0.3  # Retry-After honoured (not the 0.01 s backoff)
    assert len(chat_server.requests) == 2
    assert retries[0]["kind"] == "rate_limit" and retries[0]["delay_s"] == 0.3


async def test_provider_500_retried_then_gives_up(chat_server):
    chat_server.script([status(500), status(503), status(529), status(502)])
    client = _client(chat_server)
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(ChatRequest(messages=[Message(role="user", content="x")]))
    finally:
        await client.aclose()
    assert info.value.kind == "transient"
    assert "scripted" in str(info.value)
    assert len(chat_server.requests) == 4  # 1 + max_retries


async def test_provider_401_not_retried_key_not_in_message(chat_server):
    body = {
        "error": {
            "message": f"Incorrect API key provided: {TEST_API_KEY}",
            "code": "invalid_api_key",
        }
    }
    chat_server.script([status(401, body=body), text("never")])
    client = _client(chat_server)
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(ChatRequest(messages=[Message(role="user", content="x")]))
    finally:
        await client.aclose()
    assert info.value.kind == "permanent"
    assert len(chat_server.requests) == 1
    assert TEST_API_KEY not in str(info.value)
    assert TEST_API_KEY not in repr(info.value.args)
    assert "scripted" in str(info.value) and "401" in str(info.value)


async def test_provider_insufficient_quota_is_permanent(chat_server):
    body = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}
    chat_server.script([status(429, body=body), text("never")])
    client = _client(chat_server)
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(ChatRequest(messages=[Message(role="user", content="x")]))
    finally:
        await client.aclose()
    assert info.value.kind == "permanent"
    assert len(chat_server.requests) == 1


async def test_provider_connection_refused_is_transient():
    server = ChatServer().start()
    url = server.url
    server.stop()
    client = OpenAIClient(
        provider="gone",
        base_url=url,
        model="m",
        retry=RetryPolicy(max_retries=1, base=0.01, cap=0.01),
    )
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(ChatRequest(messages=[Message(role="user", content="x")]))
    finally:
        await client.aclose()
    assert info.value.kind == "transient"


def test_classification_table():
    assert classify(429, "{}") == "rate_limit"
    assert classify(429, '{"error": {"code": "insufficient_quota"}}') == "permanent"
    for code in (408, 409, 500, 502, 503, 529):
        assert classify(code, "") == "transient"
    assert (
        classify(400, '{"error": {"type": "overloaded_error", "message": "Overloaded"}}')
        == "transient"
    )
    for code in (400, 401, 403, 404, 413, 422):
        assert classify(code, "{}") == "permanent"
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after(None) is None


# --------------------------------------------------------------------------- router


async def test_router_failover_and_usage(tmp_path):
    with ChatServer() as bad, ChatServer() as good:
        bad.script([status(503)] * 10)
        good.script([text("from good"), text("judge again")])
        (tmp_path / "flow.toml").write_text(
            f"""[models]
default = "good:g1"
judge = ["bad:b1", "good:g1"]
[providers.bad]
base_url = "{bad.url}"
max_retries = 1
backoff_base = 0.01
backoff_max = 0.01
[providers.good]
base_url = "{good.url}"
"""
        )
        config = load_config(cwd=tmp_path, env={})
        events = []
        router = ModelRouter(config, on_event=lambda kind, data: events.append((kind, data)))
        try:
            client = router.client_for("judge")
            response = await client.chat(ChatRequest(messages=[Message(role="user", content="x")]))
            assert response.text == "from good"
            response = await router.client_for().chat(
                ChatRequest(messages=[Message(role="user", content="y")])
            )
        finally:
            await router.aclose()
        assert len(bad.requests) == 2  # the bad model's own retry, then failover
        assert [k for k, _ in events] == ["retry", "failover"]
        assert router.usage == {
            "inferences": 2,
            "input_tokens": 20,
            "output_tokens": 10,
            "by_role": {
                "judge": {"inferences": 1, "input_tokens": 10, "output_tokens": 5},
                "chat": {"inferences": 1, "input_tokens": 10, "output_tokens": 5},
            },
        }


async def test_router_permanent_error_does_not_fail_over(tmp_path):
    with ChatServer() as first, ChatServer() as second:
        first.script([status(400)])
        second.script([text("never")])
        (tmp_path / "flow.toml").write_text(
            f'[models]\ndefault = ["a:m", "b:m"]\n[providers.a]\nbase_url = "{first.url}"\n'
            f'[providers.b]\nbase_url = "{second.url}"\n'
        )
        router = ModelRouter(load_config(cwd=tmp_path, env={}))
        try:
            with pytest.raises(ModelError):
                await router.client_for("chat").chat(
                    ChatRequest(messages=[Message(role="user", content="x")])
                )
        finally:
            await router.aclose()
        assert second.requests == []


async def test_router_uses_env_key(chat_server, scripted_router):
    chat_server.script([text("hi")])
    await scripted_router.client_for("solver").chat(
        ChatRequest(messages=[Message(role="user", content="x")])
    )
    assert chat_server.headers[0]["Authorization"] == f"Bearer {TEST_API_KEY}"
    assert scripted_router.usage["by_role"]["solver"]["inferences"] == 1


# --------------------------------------------------------------------------- anthropic


def _anthropic_reply(blocks, stop_reason, usage=(7, 3)):
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": blocks,
        "stop_reason": stop_reason,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


async def test_anthropic_agent_round_trip(chat_server, tmp_path):
    from agentflow.runtime.agent import AgentSpec, run_agent

    thinking = {"type": "thinking", "thinking": "let me look", "signature": "sig=="}
    chat_server.script(
        [
            _anthropic_reply(
                [
                    thinking,
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "tu_1", "name": "look", "input": {"q": "ü"}},
                    {"type": "tool_use", "id": "tu_2", "name": "fail", "input": {}},
                ],
                "tool_use",
            ),
            _anthropic_reply([{"type": "text", "text": '{"answer": "found"}'}], "end_turn"),
        ]
    )
    (tmp_path / "flow.toml").write_text(
        f'[models]\ndefault = "claude:claude-test"\n[providers.claude]\nkind = "anthropic"\n'
        f'base_url = "http://127.0.0.1:{chat_server.port}"\napi_key_env = "ANTHROPIC_API_KEY"\n'
    )
    router = ModelRouter(load_config(cwd=tmp_path, env={"ANTHROPIC_API_KEY": TEST_API_KEY}))

    async def call_tool(name, args, path):
        if name == "fail":
            raise RuntimeError("nope")
        return {"seen": args["q"]}

    try:
        result = await run_agent(
            AgentSpec(
                prompt="find it",
                output_schema={"type": "object", "required": ["answer"]},
                tools=[
                    ToolSpec("look", "Look.", {"type": "object"}),
                    ToolSpec("fail", "Fail.", {"type": "object"}),
                ],
            ),
            router=router,
            call_tool=call_tool,
            emit=None,
            step_path="E1",
        )
    finally:
        await router.aclose()
    assert result["output"] == {"answer": "found"} and result["iterations"] == 2
    assert chat_server.paths == ["/v1/messages", "/v1/messages"]
    assert chat_server.headers[0]["x-api-key"] == TEST_API_KEY
    first, second = chat_server.requests
    assert "JSON Schema" in system_text(first) and first["messages"][0]["role"] == "user"
    assert first["tools"][0] == {
        "name": "look",
        "description": "Look.",
        "input_schema": {"type": "object"},
    }
    # the assistant turn is round-tripped block for block (thinking included) …
    assert second["messages"][1]["role"] == "assistant"
    assert second["messages"][1]["content"][0] == thinking
    # … and both tool results go in ONE user message, the failure flagged is_error
    results = second["messages"][2]
    assert results["role"] == "user"
    assert [b["type"] for b in results["content"]] == ["tool_result", "tool_result"]
    assert (
        results["content"][0]["tool_use_id"] == "tu_1" and "ü" in results["content"][0]["content"]
    )
    assert results["content"][1]["is_error"] is True and "nope" in results["content"][1]["content"]
    assert router.usage["input_tokens"] == 14


async def test_anthropic_max_tokens_is_length_and_overloaded_retried(chat_server):
    from agentflow.runtime.models.anthropic import AnthropicClient

    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    chat_server.script(
        [
            status(529, body=overloaded),
            _anthropic_reply([{"type": "text", "text": '{"a'}], "max_tokens"),
        ]
    )
    client = AnthropicClient(
        provider="claude", base_url=chat_server.url, model="m", api_key="k-123456", retry=FAST
    )
    try:
        response = await client.chat(ChatRequest(messages=[Message(role="user", content="x")]))
    finally:
        await client.aclose()
    assert response.finish_reason == "length" and response.text == '{"a'
    assert chat_server.paths[-1] == "/v1/messages"


def _anthropic_router(chat_server, tmp_path) -> ModelRouter:
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "claude:claude-test"\n[providers.claude]\nkind = "anthropic"\n'
        f'base_url = "http://127.0.0.1:{chat_server.port}"\napi_key_env = "ANTHROPIC_API_KEY"\n'
        "max_retries = 0\n"
    )
    return ModelRouter(load_config(cwd=tmp_path, env={"ANTHROPIC_API_KEY": TEST_API_KEY}))


async def test_anthropic_round_trip_uses_the_generated_ids_and_drops_empty_text(
    chat_server, tmp_path
):
    """docs/spec/RUNTIME.md §10: missing call ids get stable generated ids, and every result is
    matched by id. With Anthropic the assistant turn is sent back from its raw blocks: their
    `tool_use` ids must be the generated ones (a missing or duplicate id left as it was matched no
    `tool_result`), and empty text blocks (which the API sends but refuses) are left out."""
    chat_server.script(
        [
            anthropic_message(
                [
                    {"type": "thinking", "thinking": "hm", "signature": "s=="},
                    {"type": "text", "text": ""},
                    {"type": "tool_use", "name": "look", "input": {"q": 1}},
                    {"type": "tool_use", "id": "dup", "name": "look", "input": {"q": 2}},
                    {"type": "tool_use", "id": "dup", "name": "look", "input": {"q": 3}},
                ],
                "tool_use",
            ),
            anthropic_text('{"answer": "ok"}'),
        ]
    )
    router = _anthropic_router(chat_server, tmp_path)

    async def call_tool(name, args, path):
        return {"q": args["q"]}

    try:
        result = await run_agent(
            AgentSpec(
                prompt="find",
                output_schema={"type": "object"},
                tools=[ToolSpec("look", "Look.", {"type": "object"})],
            ),
            router=router,
            call_tool=call_tool,
            emit=None,
            step_path="E1",
        )
    finally:
        await router.aclose()
    assert result["final"] is True
    assistant, results = chat_server.requests[1]["messages"][1:3]
    uses = [b for b in assistant["content"] if b["type"] == "tool_use"]
    answered = [b["tool_use_id"] for b in results["content"] if b["type"] == "tool_result"]
    assert [u["id"] for u in uses] == answered
    assert len(set(answered)) == 3 and all(answered)
    assert assistant["content"][0]["type"] == "thinking"  # kept, unchanged
    assert not any(b["type"] == "text" and not b["text"].strip() for b in assistant["content"])
    # each result is the one of its own call
    by_id = {b["tool_use_id"]: json.loads(b["content"]) for b in results["content"]}
    assert [by_id[u["id"]]["q"] for u in uses] == [1, 2, 3]


async def test_anthropic_empty_prompt_is_never_an_empty_text_block(chat_server, tmp_path):
    """An agent prompt that renders empty (missing data renders as empty text,
    docs/spec/PLAN_IR.md §3) must not produce a request the Messages API refuses (`text content
    blocks must be non-empty`)."""
    chat_server.script([anthropic_text('{"answer": "ok"}')])
    router = _anthropic_router(chat_server, tmp_path)
    try:
        await run_agent(
            AgentSpec(prompt="", output_schema={"type": "object"}),
            router=router,
            call_tool=None,
            emit=None,
            step_path="E1",
        )
    finally:
        await router.aclose()
    (first,) = chat_server.requests[0]["messages"]
    assert all(b["text"].strip() for b in first["content"] if b["type"] == "text")


def test_strict_schema_for_structured_output():
    from agentflow.runtime.models.openai import strict_schema

    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"type": "string"}},
        "required": ["a"],
        "$defs": {"A": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
    assert strict_schema(schema) == {
        "type": "object",
        "properties": {
            "a": {
                "type": "object",
                "properties": {"x": {"type": ["integer", "null"]}},
                "required": ["x"],
                "additionalProperties": False,
            },
            "b": {"type": ["string", "null"]},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    recursive = {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N"}},
        "$defs": {"N": {"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}}},
    }
    # recursion cannot be inlined: $defs are kept (converted the same way)
    out = strict_schema(recursive)
    assert out["properties"]["n"] == {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}]}
    assert out["$defs"]["N"]["required"] == ["n"]
    assert out["$defs"]["N"]["additionalProperties"] is False
    # a map type has no strict form: no response_format at all
    assert strict_schema({"type": "object", "additionalProperties": {"type": "string"}}) is None


STRICT_FLOW = """
use agent "a" as a
type Link {
  url: text @format("uri")
  day: text @format("date")
  file: path
  kind: "a" | "b" | int
}
stage s -> Link {
  let s = agent(a) {
    task "find"
    tools none
    expect Link
  }
  return s
}
"""


def _agent_contract(plan) -> dict:
    for step in plan["steps"]:
        if step["tool_name"] == "agent":
            return step["input"]["output_schema"]
    raise AssertionError("no agent step")


def test_strict_schema_is_one_openai_accepts():
    """docs/spec/RUNTIME.md §3/§10: the strict copy sent as `response_format` must be accepted by
    OpenAI's strict mode, which refuses `format` values it does not know (`'uri' is not a valid
    format`), `oneOf`, `allOf`, `not`; the contract (with its formats) is still validated."""
    import agentflow
    from agentflow.runtime.models.openai import strict_schema

    contract = _agent_contract(agentflow.compile_source(STRICT_FLOW, "s.flow").plan)
    strict = strict_schema(contract)
    assert strict is not None
    text = json.dumps(strict)
    assert '"uri"' not in text and "x-flow-type" not in text
    assert strict["properties"]["day"]["format"] == "date"  # a format strict mode knows stays
    one_of = {"type": "object", "properties": {"v": {"oneOf": [{"type": "string"}]}}}
    assert "oneOf" not in json.dumps(strict_schema(one_of))
    for refused in ({"allOf": [{"type": "string"}]}, {"not": {"type": "string"}}):
        assert strict_schema({"type": "object", "properties": {"v": refused}}) is None


async def test_structured_output_option_sends_response_format(chat_server):
    chat_server.script([text('{"b": null}')])
    client = _client(chat_server, structured_output=True)
    schema = {"type": "object", "properties": {"b": {"type": "string"}}}
    try:
        await client.chat(
            ChatRequest(messages=[Message(role="user", content="x")], response_schema=schema)
        )
    finally:
        await client.aclose()
    fmt = chat_server.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["required"] == ["b"]


def test_an_unknown_model_with_no_flow_toml_says_the_configuration_is_the_environments(tmp_path):
    """`flowc eval F --models fast,slow` with no flow.toml used to begin `environment: unknown
    model 'fast'`: it says there is no flow.toml, so no model is named, and what a model may
    be."""
    config = load_config(cwd=tmp_path, env={"OPENAI_API_KEY": "k"})
    with pytest.raises(ConfigError) as info:
        config.resolve("fast")
    said = str(info.value)
    assert said.startswith(
        "unknown model 'fast': there is no flow.toml, so no model is named (the configuration "
        "comes from the environment: OPENAI_API_KEY, OPENAI_MODEL …); name a role (default, "
        "chat, planner, solver, repair, judge), a named model ([models.named.fast] in "
        "flow.toml) or 'provider:model'"
    ), said
    assert not said.startswith("environment:")


def test_an_unknown_model_names_the_files_named_models(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text(
        '[models]\ndefault = "openai:m"\n[models.named.small]\nprovider = "openai"\nmodel = "s"\n'
        '[models.named.large]\nprovider = "openai"\nmodel = "l"\n'
    )
    with pytest.raises(ConfigError) as info:
        load_config(path, env={"OPENAI_API_KEY": "k"}).resolve("fast")
    assert str(info.value).startswith(
        f"{path}: unknown model 'fast': its named models ([models.named.NAME]) are large, small; "
    ), info.value
    path.write_text('[models]\ndefault = "openai:m"\n')
    with pytest.raises(ConfigError, match=r"unknown model 'fast': it names no model \("):
        load_config(path, env={"OPENAI_API_KEY": "k"}).resolve("fast")
