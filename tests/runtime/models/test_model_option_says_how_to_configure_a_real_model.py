"""``--model`` names only the built-in test model; any other value is refused with how a real
model is configured — the reference given, in flow.toml or the environment (docs/decisions.md
"--model names only the test model")."""

from __future__ import annotations

import pytest

from agentflow.runtime.models.test_model import parse_model_option


def _refused(value: str) -> str:
    with pytest.raises(ValueError) as e:
        parse_model_option(value)
    return str(e.value)


def test_a_provider_model_reference_is_refused_with_where_it_is_configured():
    said = _refused("openai:gpt-4o-mini")
    assert said.startswith("--model 'openai:gpt-4o-mini': the only model that can be named here")
    assert (
        'a real model is configured: [models] default = "openai:gpt-4o-mini" in flow.toml ' in said
    )
    assert "(its key from OPENAI_API_KEY)" in said
    assert "OPENAI_API_KEY and OPENAI_MODEL=gpt-4o-mini in the environment" in said
    assert "ANTHROPIC_API_KEY and ANTHROPIC_MODEL=claude-x" in _refused("anthropic:claude-x")
    assert "[providers.local] table" in _refused("local:llama3")


def test_a_misspelt_test_model_is_refused_and_the_test_models_spellings_listed():
    said = _refused("tset")
    assert "('test', 'test:SEED', 'test+tools' or 'test+tools:SEED')" in said
    assert parse_model_option("test+tools:3") == (3, True)
