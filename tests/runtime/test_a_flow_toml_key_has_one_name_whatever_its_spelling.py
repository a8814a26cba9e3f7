"""A `flow.toml` key is named in its table's form — `[providers.p] timeout` — whether the file
writes it under a header, as a dotted key or inside an inline table, at the key's own column;
and an item of a failover list of models is named by its position with what it holds, wrong in
type (`[models] chat (item 2): expected a model reference …; got the integer 3`) or in
meaning (an empty or unknown reference) (docs/reference/configuration.md "Errors",
docs/decisions.md "A flow.toml key has one name")."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentflow.errors import ConfigError
from agentflow.runtime.config import load_config

WRONG = (
    "[providers.p] timeout: expected a number of seconds (more than 0), e.g. `timeout = 120`; "
    'got the string "x"'
)


def _load(tmp_path: Path, text: str) -> str:
    file = tmp_path / "flow.toml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(file, env={})
    return str(info.value).replace(str(file), "flow.toml")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('[providers.p]\nkind = "openai"\ntimeout = "x"\n', "3:1"),
        ('providers = { p = { kind = "openai", timeout = "x" } }\n', "1:38"),
        ('[providers]\np = { kind = "openai", timeout = "x" }\n', "2:24"),
        ('providers.p.kind = "openai"\nproviders.p.timeout = "x"\n', "2:1"),
        ('[providers]\np.kind = "openai"\np.timeout = "x"\n', "3:1"),
    ],
)
def test_a_key_reads_as_its_table_whichever_way_the_file_writes_it(tmp_path, text, where):
    assert _load(tmp_path, text) == f"flow.toml:{where}: {WRONG}"


@pytest.mark.parametrize(
    ("models", "said"),
    [
        ('["openai:gpt-4o", 3]', 'expected a model reference (a role, a named model or '
                                 '"provider:model"); got the integer 3'),
        ('["openai:gpt-4o", ["x"]]', 'expected a model reference (a role, a named model or '
                                     '"provider:model"); got the array ["x"]'),
        ('["openai:gpt-4o", ""]', 'a model reference cannot be empty; got the string ""'),
        ('["openai:gpt-4o", "nosuch:x"]', "unknown provider 'nosuch'"),
        ('["openai:gpt-4o", "gpt-5"]', "unknown model 'gpt-5'"),
    ],
)  # fmt: skip
def test_an_item_of_a_model_list_is_named_with_what_it_holds(tmp_path, models, said):
    assert _load(tmp_path, f"[models]\nchat = {models}\n").startswith(
        f"flow.toml:2:1: [models] chat (item 2): {said}"
    )
    inline = _load(tmp_path, f"models = {{ chat = {models} }}\n")
    assert inline.startswith(f"flow.toml:1:12: [models] chat (item 2): {said}"), inline


def test_one_model_reference_is_not_called_an_item(tmp_path):
    assert _load(tmp_path, '[models]\nchat = "gpt-5"\n').startswith(
        "flow.toml:2:1: [models] chat: unknown model 'gpt-5'"
    )
    assert _load(tmp_path, '[models]\nchat = " "\n') == (
        "flow.toml:2:1: [models] chat: a model reference cannot be empty"
    )
