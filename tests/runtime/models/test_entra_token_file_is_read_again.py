"""``entra_token_file`` (Azure kinds; docs/models.md "Azure OpenAI", docs/decisions.md): a file
that something else keeps holding a current Microsoft Entra ID token (``az account
get-access-token … > FILE`` on a timer, a sidecar). flowc reads it before each request — a token
renewed between two calls is sent on the next — and once more after an HTTP 401: a token renewed
while the refused request was in flight is sent in one more try; an unchanged one makes the 401
the error, naming the file, never the token. Against the real scripted server on loopback."""

from __future__ import annotations

import pytest
from support.chat_server import Reply, status

from agentflow.core.redaction import redact
from agentflow.errors import ConfigError, ModelError
from agentflow.runtime.config import load_config, missing_key_message
from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.router import ModelRouter

FAST = RetryPolicy(max_retries=2, base=0.001, cap=0.002)
OLD = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra-token-one"
NEW = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra-token-two"
EXPIRED = {"error": {"code": "401", "message": "Access token has expired or is not yet valid."}}


def _reply(text: str) -> Reply:
    body = {
        "id": "c1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
    return Reply(body=body)


def _router(server, tmp_path, extra: str = "") -> ModelRouter:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "flow.toml").write_text(
        '[models]\ndefault = "m"\n[models.named.m]\nprovider = "az"\nmodel = "gpt-4o"\n'
        f'[providers.az]\nkind = "azure-openai"\nbase_url = "{server.url.removesuffix("/v1")}"\n'
        f'entra_token_file = "secrets/entra.token"\n{extra}'
    )
    return ModelRouter(load_config(project / "flow.toml", env={}), retry=FAST)


def _token(tmp_path, token: str) -> None:
    (tmp_path / "project" / "secrets").mkdir(parents=True, exist_ok=True)
    (tmp_path / "project" / "secrets" / "entra.token").write_text(token + "\n", encoding="utf-8")


async def _ask(router, times: int = 1) -> list[str]:
    try:
        client = router.client_for("m")
        return [
            (await client.chat(ChatRequest([Message("user", "Capital of France?")]))).text or ""
            for _ in range(times)
        ]
    finally:
        await router.aclose()


async def test_a_401_then_the_renewed_token_from_the_file_succeeds(
    chat_server, tmp_path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)  # the file is relative to flow.toml, not to here
    router = _router(chat_server, tmp_path)
    _token(tmp_path, OLD)

    def script(body):
        if len(chat_server.requests) == 1:  # the token expires in flight; the file is renewed
            _token(tmp_path, NEW)
            return status(401, EXPIRED)
        return _reply("Paris")

    chat_server.script(script)
    assert await _ask(router) == ["Paris"]
    assert [h["Authorization"] for h in chat_server.headers] == [f"Bearer {OLD}", f"Bearer {NEW}"]
    assert "api-key" not in chat_server.headers[0]


async def test_a_token_renewed_between_two_calls_is_sent_on_the_next(chat_server, tmp_path):
    router = _router(chat_server, tmp_path)
    _token(tmp_path, OLD)

    def script(body):
        _token(tmp_path, NEW)  # renewed after the first call was answered
        return _reply("Paris")

    chat_server.script(script)
    assert await _ask(router, times=2) == ["Paris", "Paris"]
    assert [h["Authorization"] for h in chat_server.headers] == [f"Bearer {OLD}", f"Bearer {NEW}"]


async def test_a_401_with_the_token_unchanged_is_the_error_naming_the_file(chat_server, tmp_path):
    router = _router(chat_server, tmp_path)
    _token(tmp_path, OLD)
    chat_server.script([status(401, {"error": {"code": "401", "message": f"bad {OLD}"}})])
    with pytest.raises(ModelError) as info:
        await _ask(router)
    assert len(chat_server.requests) == 1  # not asked again with the same token
    file = tmp_path / "project" / "secrets" / "entra.token"
    assert f"the Entra ID token in {file} (entra_token_file) was refused" in str(info.value)
    assert info.value.status == 401 and OLD not in str(info.value)
    assert OLD not in redact(f"x {OLD} y")  # a token read from the file is a secret


def test_a_missing_or_empty_token_file_stops_the_run_before_its_first_step(chat_server, tmp_path):
    router = _router(chat_server, tmp_path)
    file = tmp_path / "project" / "secrets" / "entra.token"
    message = missing_key_message(router.config)
    assert message == (
        f"provider 'az': cannot read the Entra ID token file {file} (entra_token_file): "
        "No such file or directory"
    )
    _token(tmp_path, "")
    assert missing_key_message(router.config) == (
        f"provider 'az': the Entra ID token file {file} (entra_token_file) is empty"
    )
    _token(tmp_path, OLD)
    assert missing_key_message(router.config) is None


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('kind = "openai"\nentra_token_file = "t"\n', "`entra_token_file` applies to kind azure"),
        (
            'kind = "azure-openai"\nentra_token_env = "T"\nentra_token_file = "t"\n',
            "give one credential",
        ),
    ],
)
def test_the_token_file_is_one_azure_credential(tmp_path, table: str, expected: str):
    (tmp_path / "flow.toml").write_text(f"[providers.az]\n{table}")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "flow.toml", env={})
    assert expected in str(info.value)
