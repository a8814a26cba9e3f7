"""Hostile model I/O, configuration and run files: API keys that cannot travel in an HTTP header
never leak; deeply nested JSON from a model or ``--input`` never raises RecursionError; retries and
config values are bounded and validated; malformed replies are clean ModelErrors; flow.toml errors
carry a column; ``--trace``/``--replay``/``--input`` file problems are clean errors. Real HTTP on
127.0.0.1.
"""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner
from support.chat_server import (
    TEST_API_KEY,
    ChatServer,
    Reply,
    completion,
    status,
    text,
    tool_calls,
)

from agentflow import api
from agentflow.cli import main
from agentflow.errors import ConfigError, InputError, ModelError
from agentflow.runtime.agent import check_answer, parse_arguments
from agentflow.runtime.config import load_config
from agentflow.runtime.extract import ExtractionError, extract_json, validate
from agentflow.runtime.models.anthropic import AnthropicClient, parse_anthropic_response
from agentflow.runtime.models.base import ChatRequest, Message, ReplyShapeError
from agentflow.runtime.models.http import (
    RetryPolicy,
    api_key_problem,
    parse_retry_after,
    redact,
)
from agentflow.runtime.models.openai import OpenAIClient, parse_openai_response
from agentflow.runtime.models.router import ModelRouter

FLOW = """\
use agent "bot" as bot
type R { ok: bool, n: int? }
stage s -> R {
  agent(bot) {
    task "do it"
    tools [read_file, list_dir]
    expect R
    max_iterations 2
  }
}
"""
FAKE_KEY = "sk-FAKE-RECOGNISABLE-7f3a9c"
DEEP = "[" * 1500 + "]" * 1500


def _request() -> ChatRequest:
    return ChatRequest(messages=[Message(role="user", content="hi")])


def _invoke(args, env=None):
    return CliRunner().invoke(main, args, env=env or {}, catch_exceptions=False)


def _setup(tmp_path, server: ChatServer, extra: str = "", retries: int = 0):
    server.write_config(tmp_path, retries=retries, extra=extra)
    flow = tmp_path / "ag.flow"
    flow.write_text(FLOW, encoding="utf-8")
    return flow, tmp_path / "flow.toml"


# --------------------------------------------------------------------------- API keys


@pytest.mark.parametrize("key", [FAKE_KEY + "\n", FAKE_KEY + "\r\nX-Evil: 1", FAKE_KEY + " x"])
def test_bad_api_key_refused_before_the_run_never_shown(chat_server, tmp_path, key):
    chat_server.script([text('{"ok": true}')])
    flow, cfg = _setup(tmp_path, chat_server)
    trace = tmp_path / "t.jsonl"
    res = _invoke(
        [
            "run",
            str(flow),
            "--config",
            str(cfg),
            "--json",
            "--trace",
            str(trace),
            "--workspace",
            str(tmp_path),
        ],
        env={"SCRIPTED_API_KEY": key},
    )
    out = res.output + (trace.read_text() if trace.exists() else "")
    assert res.exit_code == 1
    assert "FAKE-RECOGNISABLE" not in out and "Traceback" not in out
    assert "$SCRIPTED_API_KEY" in out and "not allowed in an HTTP header" in out
    assert chat_server.requests == []  # nothing was sent


@pytest.mark.parametrize("cls", [OpenAIClient, AnthropicClient])
async def test_client_refuses_bad_key_permanently_without_showing_it(chat_server, cls):
    client = cls(
        provider="p",
        base_url=chat_server.url,
        model="m",
        api_key=FAKE_KEY + "\r\nX-Evil: 1",
        api_key_env="MY_KEY",
        retry=RetryPolicy(max_retries=3, base=0.001, cap=0.001),
    )
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(_request())
    finally:
        await client.aclose()
    assert info.value.kind == "permanent"
    assert "FAKE" not in str(info.value) and "$MY_KEY" in str(info.value)
    assert chat_server.requests == []


async def test_malformed_extra_header_is_permanent_and_redacted(chat_server):
    # a header httpx refuses: its error quotes the header; it is permanent, and any Bearer value
    # in the message is redacted
    client = OpenAIClient(
        provider="p",
        base_url=chat_server.url,
        model="m",
        api_key=FAKE_KEY,
        headers={"X-Other": "Bearer sk-OTHER-SECRET\n"},
        retry=RetryPolicy(max_retries=3, base=0.001, cap=0.001),
    )
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(_request())
    finally:
        await client.aclose()
    assert info.value.kind == "permanent"
    assert "OTHER-SECRET" not in str(info.value) and FAKE_KEY not in str(info.value)


def test_redact_covers_escaped_forms_and_auth_headers():
    key = FAKE_KEY + "\n"
    msg = f"Illegal header value b'Bearer {FAKE_KEY}\\n' and {key!r}"
    assert "FAKE" not in redact(msg, key)
    assert "FAKE" not in redact(f"headers {{'x-api-key': '{FAKE_KEY}'}}", None)
    assert "FAKE" not in redact(f"Authorization: Bearer {FAKE_KEY}", None)
    assert api_key_problem(FAKE_KEY) is None and api_key_problem(None) is None
    problem = api_key_problem(FAKE_KEY + "\n", "K")
    assert problem and "line break" in problem and "FAKE" not in problem


# --------------------------------------------------------------------------- deep JSON


def test_deep_json_is_refused_plainly_everywhere():
    with pytest.raises(ExtractionError, match="nested too deeply"):
        extract_json('{"ok": true, "x": ' + DEEP + "}")
    value, errors, _ = check_answer('{"ok": true, "x": ' + DEEP + "}", {"type": "object"})
    assert errors and "nested too deeply" in errors[0]
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_arguments(DEEP)
    deep_value: list = []
    for _ in range(1200):
        deep_value = [deep_value]
    assert "nested too deeply" in validate({"type": "array"}, deep_value)[0]
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_arguments({"a": deep_value})
    assert validate({"type": "array"}, [[[1]]]) == []


def test_deep_tool_arguments_and_answer_cost_a_round(chat_server, tmp_path):
    flow, cfg = _setup(tmp_path, chat_server)
    chat_server.script(
        [
            tool_calls(("builtin__read_file", DEEP)),
            text('{"ok": true, "x": ' + DEEP + "}"),
            text('{"ok": true}'),
        ]
    )
    flow.write_text(FLOW.replace("max_iterations 2", "max_iterations 3"), encoding="utf-8")
    res = _invoke(
        [
            "run",
            str(flow),
            "--config",
            str(cfg),
            "--json",
            "--trace",
            str(tmp_path / "t.jsonl"),
            "--workspace",
            str(tmp_path),
        ],
        env={"SCRIPTED_API_KEY": TEST_API_KEY},
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["output"] == {"ok": True}
    # round 2 saw the tool error; round 3 saw the invalid-answer feedback
    tool_msg = [m for m in chat_server.requests[1]["messages"] if m["role"] == "tool"]
    assert "nested too deeply" in tool_msg[0]["content"]
    assert "nested too deeply" in chat_server.requests[-1]["messages"][-1]["content"]


def test_deep_and_binary_input_files_are_input_errors(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP, encoding="utf-8")
    with pytest.raises(InputError, match="nested too deeply"):
        api.parse_input(f"@{deep}")
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError, match="not UTF-8"):
        api.parse_input(f"@{binary}")
    flow = tmp_path / "ok.flow"
    flow.write_text("stage a -> int { return 1 }\n", encoding="utf-8")
    for arg in (f"@{deep}", f"@{binary}"):
        res = _invoke(["run", str(flow), "--input", arg])
        assert res.exit_code == 1 and "Traceback" not in res.output
        assert res.output.startswith("error: ")


# --------------------------------------------------------------------------- retries, config values


def test_retry_after_is_capped():
    policy = RetryPolicy(max_retry_after=7.0)
    assert parse_retry_after("inf") == math.inf
    assert policy.delay(1, parse_retry_after("inf")) == 7.0
    assert policy.delay(1, parse_retry_after("99999999999")) == 7.0
    assert parse_retry_after("nan") is None
    assert policy.delay(1, math.nan) == 0.0
    assert parse_retry_after("-5") == 0.0


async def test_infinite_retry_after_waits_only_the_configured_cap(chat_server, tmp_path):
    chat_server.script([status(429, headers={"Retry-After": "inf"}), text('{"ok": true}')])
    cfg_text = chat_server.config_text(retries=1) + "max_retry_after = 0.05\n"
    (tmp_path / "flow.toml").write_text(cfg_text, encoding="utf-8")
    config = load_config(tmp_path / "flow.toml", env={"SCRIPTED_API_KEY": TEST_API_KEY})
    assert config.providers["scripted"].max_retry_after == 0.05
    router = ModelRouter(config)
    seen = []
    router.on_event = lambda kind, data: seen.append(data)
    try:
        response = await router.client_for("chat").chat(_request())
    finally:
        await router.aclose()
    assert response.text == '{"ok": true}'
    assert seen[0]["delay_s"] == 0.05


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ('base_url = "http://127.0.0.1:99999/v1"', "port must be 1-65535"),
        ('base_url = "ftp://x/v1"', "http:// or https://"),
        ('base_url = "http:///v1"', "has no host"),
        ('base_url = "http://exa mple.com/v1"', "space or control character"),
        ("max_retries = -1", "expected an integer from 0 to 20"),
        ("max_retries = 99999999999999999999", "from 0 to 20, e.g. `max_retries = 4`; got the"),
        ("backoff_base = -5.0", "seconds (more than 0)"),
        ("timeout = -1", "seconds (more than 0)"),
        ("timeout = inf", "expected a finite number of seconds"),
        ("max_retry_after = nan", "expected a finite number of seconds"),
    ],
)
def test_provider_values_validated_at_load_with_line_and_column(tmp_path, line, needle):
    text_ = f'[models]\ndefault = "p:m"\n[providers.p]\nkind = "openai"\n  {line}\n'
    if "base_url" not in line:
        text_ += 'base_url = "http://127.0.0.1:1/v1"\n'
    path = tmp_path / "flow.toml"
    path.write_text(text_, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert str(info.value).startswith(f"{path}:5:3: [providers.p] ")
    assert needle in str(info.value)


def test_bad_env_base_url_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL"):
        load_config(cwd=tmp_path, env={"OPENAI_BASE_URL": "http://127.0.0.1:99999/v1"})


def test_run_with_bad_port_fails_at_config_load_no_traceback(tmp_path):
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "p:m"\n[providers.p]\nbase_url = "http://127.0.0.1:99999/v1"\n',
        encoding="utf-8",
    )
    flow = tmp_path / "ag.flow"
    flow.write_text(FLOW, encoding="utf-8")
    res = _invoke(["run", str(flow), "--config", str(tmp_path / "flow.toml")])
    assert res.exit_code == 1 and "flow.toml:4:1: [providers.p] base_url" in res.output


def test_unknown_key_error_has_a_column(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text('[models]\ndefault = "openai:x"\n[providers.p]\n   colour = 1\n', "utf-8")
    with pytest.raises(ConfigError, match=r"flow\.toml:4:4: unknown key 'providers\.p\.colour'"):
        load_config(path, env={})


# --------------------------------------------------------------------------- malformed replies


def _msg(message, **extra):
    return {"choices": [{"message": message, "finish_reason": "stop"}], **extra}


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ([], "the reply is an array"),
        ({}, "`choices` should be a non-empty array, got null"),
        ({"choices": []}, "got an empty array"),
        ({"choices": [5]}, "`choices[0]` should be an object"),
        (_msg({"content": 42}), "`message.content` should be a string or null, got a number"),
        (_msg({"content": {"ok": True}}), "got an object"),
        (_msg({"content": None, "tool_calls": "x"}), "`message.tool_calls` should be an array"),
        (_msg({"content": None, "tool_calls": [5]}), "`tool_calls[0]` should be an object"),
    ],
)
async def test_malformed_openai_reply_is_a_plain_model_error(chat_server, body, needle):
    chat_server.script([Reply(status=200, body=body)])
    client = OpenAIClient(  # one attempt: a malformed reply is retried like a 500 (its own test)
        provider="p", base_url=chat_server.url, model="m", api_key=FAKE_KEY,
        retry=RetryPolicy(max_retries=0),
    )  # fmt: skip
    try:
        with pytest.raises(ModelError) as info:
            await client.chat(_request())
    finally:
        await client.aclose()
    assert info.value.kind == "transient"
    assert needle in str(info.value)
    assert "Error" not in str(info.value)  # no AttributeError/TypeError/KeyError text


def test_malformed_usage_is_counted_as_zero():
    data = completion('{"ok": true}')
    data["usage"] = {"prompt_tokens": "abc", "completion_tokens": None}
    response = parse_openai_response(data)
    assert response.usage == {"input_tokens": 0, "output_tokens": 0}
    data["usage"] = [1]
    assert parse_openai_response(data).usage["input_tokens"] == 0
    data["usage"] = {"prompt_tokens": 7.0, "completion_tokens": True}
    assert parse_openai_response(data).usage == {"input_tokens": 7, "output_tokens": 0}


def test_malformed_anthropic_reply():
    with pytest.raises(ReplyShapeError, match="`content` should be an array"):
        parse_anthropic_response({"content": "x"})
    with pytest.raises(ReplyShapeError, match="`content\\[0\\].text` should be a string"):
        parse_anthropic_response({"content": [{"type": "text", "text": 5}]})
    ok = parse_anthropic_response(
        {"content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": "x"}}
    )
    assert ok.text == "hi" and ok.usage["input_tokens"] == 0


def test_usage_abc_through_the_cli_succeeds(chat_server, tmp_path):
    flow, cfg = _setup(tmp_path, chat_server)
    data = completion('{"ok": true}')
    data["usage"] = {"prompt_tokens": "abc"}
    chat_server.script([Reply(status=200, body=data)])
    res = _invoke(
        ["run", str(flow), "--config", str(cfg), "--workspace", str(tmp_path)],
        env={"SCRIPTED_API_KEY": TEST_API_KEY},
    )
    assert res.exit_code == 0, res.output


# --------------------------------------------------------------------------- run files


def test_trace_into_missing_directory_is_a_usage_error(tmp_path):
    flow = tmp_path / "ok.flow"
    flow.write_text("stage a -> int { return 1 }\n", encoding="utf-8")
    res = _invoke(["run", str(flow), "--trace", str(tmp_path / "no" / "such" / "t.jsonl")])
    assert res.exit_code == 2 and "--trace" in res.output and "no such directory" in res.output
    res = _invoke(["ask", "hi", "--trace", str(tmp_path / "no" / "t.jsonl")])
    assert res.exit_code == 2 and "no such directory" in res.output


async def test_api_run_trace_unwritable_is_a_config_error(tmp_path):
    flow = tmp_path / "ok.flow"
    flow.write_text("stage a -> int { return 1 }\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot write trace file"):
        await api.run(flow, {}, trace=tmp_path / "no" / "t.jsonl", shape_cache=False)


def test_non_utf8_or_malformed_cassette_is_a_config_error_with_line(tmp_path):
    flow = tmp_path / "ok.flow"
    flow.write_text("stage a -> int { return 1 }\n", encoding="utf-8")
    cassette = tmp_path / "c.jsonl"
    cassette.write_bytes(b"\n\xff\xfe\x00garbage\n")
    res = _invoke(["run", str(flow), "--replay", str(cassette)])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert f"{cassette}:2:1: cannot read cassette: not UTF-8" in res.output
    bad = {"key": "k", "request": {}, "response": {"text": 42}}
    cassette.write_text(json.dumps(bad) + "\n", encoding="utf-8")
    res = _invoke(["run", str(flow), "--replay", str(cassette)])
    assert res.exit_code == 1 and f"{cassette}:1:1: not a cassette line" in res.output
    cassette.write_text('{"key": "k", "response": ' + DEEP + "}\n", encoding="utf-8")
    res = _invoke(["run", str(flow), "--replay", str(cassette)])
    assert res.exit_code == 1 and f"{cassette}:1:1: not a cassette line" in res.output


@pytest.mark.parametrize(
    ("usage", "said"),
    [
        (
            {"input_tokens": -5, "output_tokens": 10},
            "`response.usage.input_tokens` is not a token count",
        ),
        (
            {"input_tokens": 5, "output_tokens": 10**30},
            "`response.usage.output_tokens` is not a token count",
        ),
        ({"input_tokens": "lots"}, "`response.usage.input_tokens` is not a token count"),
        ({"input_tokens": 1.5}, "`response.usage.input_tokens` is not a token count"),
        ({"cache_read_tokens": True}, "`response.usage.cache_read_tokens` is not a token count"),
    ],
)
def test_a_cassette_line_whose_usage_is_not_token_counts_is_refused(tmp_path, usage, said):
    """A replayed call's usage is what was recorded: a count that is not one (negative, past
    1e9, text, a fraction, a bool) is refused with its line like a malformed tool call, never
    read as 0 tokens (which dropped the call from the run's totals)."""
    flow = tmp_path / "ok.flow"
    flow.write_text("stage a -> int { return 1 }\n", encoding="utf-8")
    cassette = tmp_path / "c.jsonl"
    line = {"key": "k", "request": {}, "response": {"text": "x", "usage": usage}}
    cassette.write_text(json.dumps(line) + "\n", encoding="utf-8")
    res = _invoke(["run", str(flow), "--replay", str(cassette)])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert f"{cassette}:1:1: not a cassette line" in res.output and said in res.output
