"""Every provider kind refuses, at load and at the key's line, a key it does not take: a key of
another kind (``region`` on an ``openai`` provider, ``seed`` on a ``gemini`` one — the older
kinds used to take them silently) and a typo, whose did-you-mean offers only the keys of the
provider's own kind (docs/reference/configuration.md "[providers.NAME]"). A command prints one
``error: flow.toml:LINE:COL: …`` line, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.errors import ConfigError
from agentflow.runtime.config import load_config


def _error(tmp_path: Path, table: str) -> str:
    path = tmp_path / "flow.toml"
    path.write_text(f'[models]\ndefault = "p:m"\n[providers.p]\n{table}', "utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    return str(info.value).removeprefix(str(path))


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (
            'region = "us-east-1"\n',
            ":4:1: [providers.p] `region` applies to kind bedrock, not 'openai'",
        ),
        (
            'kind = "anthropic"\nseed = 3\n',
            ":5:1: [providers.p] `seed` applies to kind test, not 'anthropic'",
        ),
        (
            'kind = "gemini"\ncall_tools = true\n',
            ":5:1: [providers.p] `call_tools` applies to kind test, not 'gemini'",
        ),
        (
            'kind = "openai-responses"\nentra_token_env = "T"\n',
            ":5:1: [providers.p] `entra_token_env` applies to kind azure-openai / "
            "azure-openai-responses, not 'openai-responses'",
        ),
        (
            'kind = "test"\nregion = "us-east-1"\n',
            ":5:1: [providers.p] `region` applies to kind bedrock, not 'test'",
        ),
        (
            'kind = "bedrock"\napi_version = "1"\n',
            ":5:1: [providers.p] `api_version` applies to kind azure-openai / "
            "azure-openai-responses, not 'bedrock'",
        ),
    ],
)
def test_a_key_of_another_kind_is_refused_on_every_kind(
    tmp_path: Path, table: str, expected: str
) -> None:
    assert _error(tmp_path, table) == expected


def test_a_typo_is_offered_only_the_keys_of_its_own_kind(tmp_path: Path) -> None:
    assert _error(tmp_path, 'kind = "anthropic"\napi_key_evn = "K"\n') == (
        ":5:1: unknown key 'providers.p.api_key_evn'; did you mean 'api_key_env'?"
    )
    # `sed` is a typo of `seed`, which an openai provider does not take: its own keys instead
    assert _error(tmp_path, 'kind = "openai"\nsed = 3\n') == (
        ":5:1: unknown key 'providers.p.sed'; [providers.p] (kind openai) takes: api_key_env, "
        "backoff_base, backoff_max, base_url, headers, kind, max_retries, max_retry_after, "
        "timeout"
    )
    assert _error(tmp_path, 'kind = "test"\nsed = 3\n') == (
        ":5:1: unknown key 'providers.p.sed'; did you mean 'seed'?"
    )


def test_every_wrong_key_is_named_at_once(tmp_path: Path) -> None:
    message = _error(tmp_path, 'region = "us-east-1"\nseed = 1\n')
    assert message.splitlines()[0].endswith(
        ":4:1: [providers.p] `region` applies to kind bedrock, not 'openai'"
    )
    assert message.splitlines()[1].endswith(
        ":5:1: [providers.p] `seed` applies to kind test, not 'openai'"
    )


def test_the_keys_of_its_own_kind_load(tmp_path: Path) -> None:
    path = tmp_path / "flow.toml"
    path.write_text(
        '[providers.aws]\nkind = "bedrock"\nregion = "eu-west-3"\n'
        '[providers.fake]\nkind = "test"\nseed = 2\ncall_tools = true\n'
        '[providers.az]\nkind = "azure-openai"\nbase_url = "https://r.openai.azure.com"\n'
        'api_version = "2024-10-21"\nazure_api = "deployments"\nentra_token_env = "T"\n',
        "utf-8",
    )
    config = load_config(path, env={})
    assert config.providers["aws"].region == "eu-west-3" and config.providers["fake"].seed == 2


def test_a_run_prints_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "p:m"\n[providers.p]\nkind = "openai"\nregion = "us-east-1"\n'
    )
    (tmp_path / "a.flow").write_text("stage s -> int {\n  return 1\n}\n")
    res = CliRunner().invoke(main, ["run", "a.flow"])
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    assert res.stderr == (
        f"error: {tmp_path / 'flow.toml'}:5:1: [providers.p] `region` applies to kind bedrock, "
        "not 'openai'\n"
    )
