"""An unknown key in flow.toml names its line and column — also a table whose header is the
only line (``[providrs.x]``) — and, when it is a typo of a key the table takes, the key meant."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentflow.errors import ConfigError
from agentflow.runtime.config import load_config


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "flow.toml"
    path.write_text(text, "utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "where", "meant"),
    [
        ("[providrs.x]\n", ":1:2", "providers"),
        ('[durabel]\ndatabase = "x.sqlite"\n', ":1:2", "durable"),
        ('[tools]\nisolation = "thread"\n[telemetry]\nendpont = "http://x"\n', ":4:1", "endpoint"),
        ('[tools]\nisolaton = "process"\n', ":2:1", "isolation"),
        (
            '[providers.p]\nbase_url = "http://127.0.0.1:1"\napi_key_evn = "K"\n',
            ":3:1",
            "api_key_env",
        ),
    ],
)
def test_an_unknown_key_that_is_a_typo_names_its_place_and_the_key_meant(
    tmp_path: Path, text: str, where: str, meant: str
) -> None:
    message = _error(tmp_path, text)
    assert message.startswith(f"{tmp_path / 'flow.toml'}{where}: unknown key"), message
    assert f"did you mean '{meant}'?" in message, message


def test_an_unknown_key_that_is_no_typo_gets_no_guess(tmp_path: Path) -> None:
    message = _error(tmp_path, "[limits]\ntimeout = 5\n")
    assert "unknown key 'limits'" in message and "did you mean" not in message, message


def test_an_unknown_key_with_no_close_match_lists_the_keys_of_its_table(tmp_path: Path) -> None:
    message = _error(tmp_path, '[agents.x]\nsytem = "hi"\n')
    assert message == (
        f"{tmp_path / 'flow.toml'}:2:1: unknown key 'agents.x.sytem'; "
        "[agents.x] takes: model, system_prompt"
    ), message
    message = _error(tmp_path, "[limits]\ntimeout = 5\n")
    assert "; the top level takes: agents, budget, chat, durable," in message, message
