"""Extra request headers of a provider (`headers` in `[providers.NAME]`, docs/models.md "Extra
request headers"): sent with every request over the loopback server, `${VAR}` filled from the
environment and redacted everywhere, an unset variable named before the run starts, and the
headers that would override the request's framing or the provider's own key refused at their
line of flow.toml (by `flowc run` too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from support.chat_server import TEST_API_KEY, status, text

from agentflow.cli import main
from agentflow.core.redaction import redact
from agentflow.errors import ConfigError, ModelError
from agentflow.runtime.config import load_config, missing_key_message
from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.router import ModelRouter
from agentflow.runtime.telemetry_settings import config_secrets

FAST = RetryPolicy(max_retries=0, base=0.001, cap=0.002)
GATEWAY_KEY = "hk-gateway-secret-0123456789"


def _config(tmp_path: Path, provider: str, env: dict[str, str]):
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "gw:gpt-4o-mini"\n[providers.gw]\n' + provider
    )
    return load_config(tmp_path / "flow.toml", env=env)


async def _ask(config):
    router = ModelRouter(config, retry=FAST)
    try:
        return await router.client_for("chat").chat(ChatRequest([Message("user", "hi")]))
    finally:
        await router.aclose()


async def test_headers_are_sent_with_env_values_filled_and_kept_secret(chat_server, tmp_path):
    provider = (
        f'base_url = "{chat_server.url}"\napi_key_env = "K"\n'
        'headers = { "X-Title" = "triage bot", "Helicone-Auth" = "Bearer ${HELICONE_KEY}" }\n'
    )
    env = {"K": TEST_API_KEY, "HELICONE_KEY": GATEWAY_KEY}
    config = _config(tmp_path, provider, env)
    # the gateway echoes the header back in its error: the message never shows it
    chat_server.script(
        [text("ok"), status(400, {"error": {"message": f"bad auth Bearer {GATEWAY_KEY}"}})]
    )
    assert (await _ask(config)).text == "ok"
    sent = chat_server.headers[0]
    assert sent["X-Title"] == "triage bot" and sent["Helicone-Auth"] == f"Bearer {GATEWAY_KEY}"
    assert sent["Authorization"] == f"Bearer {TEST_API_KEY}"  # the provider's key is its own
    with pytest.raises(ModelError) as info:
        await _ask(config)
    assert GATEWAY_KEY not in str(info.value)
    assert GATEWAY_KEY not in redact(f"header {GATEWAY_KEY}")
    assert GATEWAY_KEY in config_secrets(config)  # telemetry redacts it too


def test_an_unset_header_variable_is_named_before_the_run(tmp_path):
    provider = 'base_url = "http://127.0.0.1:9/v1"\nheaders = { "X-Key" = "${GW_KEY}" }\n'
    config = _config(tmp_path, provider, {})
    message = missing_key_message(config)
    assert message == (
        "provider 'gw': the environment variable GW_KEY (in header 'X-Key' of [providers.gw]) "
        "is not set"
    )
    with pytest.raises(ConfigError, match="GW_KEY"):
        ModelRouter(config).client_for("chat")
    bad = _config(tmp_path, provider, {"GW_KEY": "abc\n"})
    assert "line break" in (missing_key_message(bad) or "") and "abc" not in str(
        missing_key_message(bad)
    )


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        (
            'headers = { "Content-Type" = "text/plain" }\n',
            "header 'Content-Type' is written by flowc",
        ),
        (
            'api_key_env = "K"\nheaders = { "authorization" = "Bearer x" }\n',
            "header 'authorization' would override the provider's own authentication",
        ),
        (
            'kind = "azure-openai"\napi_key_env = "K"\nheaders = { "API-Key" = "${X}" }\n',
            "header 'API-Key' would override",
        ),
    ],
)
def test_headers_overriding_framing_or_the_key_are_refused_at_their_line(
    tmp_path, provider, expected
):
    with pytest.raises(ConfigError) as info:
        _config(tmp_path, provider, {})
    line = 3 + provider.count("\n")  # the `headers` line
    column = provider.splitlines()[-1].index("{ ") + 3  # the header's own key in its table
    assert f"flow.toml:{line}:{column}: [providers.gw] {expected}" in str(info.value)


def test_an_auth_header_is_allowed_when_the_provider_has_no_key(tmp_path):
    config = _config(tmp_path, 'headers = { "Authorization" = "Bearer ${T}" }\n', {"T": "t" * 12})
    assert config.providers["gw"].headers == {"Authorization": "Bearer ${T}"}


def test_flowc_run_reports_a_provider_key_error_at_its_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.flow").write_text("stage s -> int { return 1 }\n")
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "az:gpt-4o"\n[providers.az]\nkind = "azure-openai"\n'
        'api_verison = "2024-10-21"\n'
    )
    result = CliRunner().invoke(main, ["run", "a.flow"])
    assert result.exit_code != 0
    assert "flow.toml:5:1: unknown key 'providers.az.api_verison'" in result.output
    assert "did you mean 'api_version'?" in result.output


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", "the environment variable GW_SECRET (in header 'X-Gw' of [providers.gw]) is set "),
        ("s3cr3t-value ", "header 'X-Gw' of [providers.gw] is padded with whitespace once the "),
    ],
)
def test_flowc_run_refuses_a_header_that_ends_up_empty_or_padded_before_any_request(
    tmp_path, monkeypatch, value, expected
):
    # "Gw ${GW_SECRET}" with GW_SECRET empty sent "Gw ", which httpx refused at the first
    # request (model_error … Illegal header value); now refused as the run starts
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GW_SECRET", value)
    (tmp_path / "a.flow").write_text(
        'use agent "sre" as sre\nstage s -> text {\n'
        '  return agent(sre) { task "Look" tools none expect text }\n}\n'
    )
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "gw:gpt-4o-mini"\n[providers.gw]\n'
        'base_url = "http://127.0.0.1:9/v1"\nheaders = { "X-Gw" = "Gw ${GW_SECRET}" }\n'
    )
    result = CliRunner().invoke(main, ["run", "a.flow"])
    assert result.exit_code == 1, result.output
    assert f"error: provider 'gw': {expected}" in result.stderr, result.stderr
    assert "GW_SECRET" in result.stderr and "s3cr3t" not in result.output
    assert "model call" not in result.output  # no request was made
