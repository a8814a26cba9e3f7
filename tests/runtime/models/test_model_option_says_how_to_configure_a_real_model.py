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


def test_a_test_model_whose_seed_is_no_integer_says_seed_must_be_an_integer():
    """`test:abc` is the test model with a bad SEED, not a real model to configure."""
    said = _refused("test:abc")
    assert said == (
        "--model 'test:abc': the test model's SEED must be an integer (test:SEED, e.g. test:7), "
        "got 'abc'"
    )
    assert "real model" not in said
    assert "(test+tools:SEED, e.g. test+tools:7), got ''" in _refused("test+tools:")


def test_a_bare_model_name_is_advised_as_typed_under_its_provider():
    said = _refused("gpt-4o")
    assert '[models] default = "openai:gpt-4o" in flow.toml (its key from OPENAI_API_KEY)' in said
    assert "OPENAI_MODEL=gpt-4o in the environment" in said
    assert '"anthropic:claude-sonnet-4"' in _refused("claude-sonnet-4")
    assert '"openai:o3-mini"' in _refused("o3-mini")
    # a name of no family the implicit providers serve: the example reference
    assert '[models] default = "openai:gpt-4o-mini"' in _refused("llama3")


def test_the_message_names_the_option_as_its_caller_wrote_it():
    assert _refused("gpt").startswith("--model 'gpt': ")
    with pytest.raises(ValueError) as e:
        parse_model_option("gpt", "model")
    assert str(e.value).startswith('model="gpt": the only model that can be named here')


def test_run_from_python_names_its_model_keyword(tmp_path):
    from agentflow import run_sync
    from agentflow.errors import ConfigError

    (tmp_path / "f.flow").write_text('flow f "f"\nstage s -> int { return 1 }\n')
    with pytest.raises(ConfigError) as e:
        run_sync(str(tmp_path / "f.flow"), model="gpt")
    assert str(e.value).startswith('model="gpt": the only model that can be named here'), e.value
    with pytest.raises(ConfigError, match=r"^model=\"test:abc\": the test model's SEED must be"):
        run_sync(str(tmp_path / "f.flow"), model="test:abc")


def test_evaluate_from_python_refuses_a_bad_model_as_a_config_error_before_any_case(tmp_path):
    from agentflow import api
    from agentflow.errors import ConfigError

    (tmp_path / "f.flow").write_text(
        'flow f "f"\ninput { n: int }\nstage s -> int { return input.n }\n'
        'eval "e" {\n  dataset "cases.jsonl"\n  score same = output == expected\n}\n'
    )
    (tmp_path / "cases.jsonl").write_text('{"input": {"n": 1}, "expected": 1}\n')
    with pytest.raises(ConfigError, match=r"^model=\"test:x\": the test model's SEED must be"):
        api.evaluate(tmp_path / "f.flow", model="test:x", cache=None)
