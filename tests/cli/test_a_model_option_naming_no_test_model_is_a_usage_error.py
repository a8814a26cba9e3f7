"""A ``--model`` that names no test model is a usage error (exit 2) said before anything runs, on
every command that takes it: ``test:abc`` says the SEED must be an integer, ``gpt-4o`` how a
real model is configured with the name typed (docs/reference/cli.md "flowc run")."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from agentflow.cli import main

FLOW = 'flow f "f"\nstage s -> int { return 1 }\n'


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "f.flow").write_text(FLOW, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "command",
    [
        ["run", "f.flow"],
        ["ask", "Hi?"],
        ["serve", "--mcp", "."],
        ["redrive", "r1"],
        ["eval", "f.flow"],
    ],
)
def test_a_test_model_with_a_seed_that_is_no_integer_is_a_usage_error(project, command):
    said = CliRunner().invoke(main, [*command, "--model", "test:abc"])
    assert said.exit_code == 2, said.output
    assert (
        "Error: --model 'test:abc': the test model's SEED must be an integer "
        "(test:SEED, e.g. test:7), got 'abc'"
    ) in said.output
    assert "real model is configured" not in said.output


def test_a_real_model_name_is_a_usage_error_advising_the_name_typed(project):
    said = CliRunner().invoke(main, ["run", "f.flow", "--model", "gpt-4o"])
    assert said.exit_code == 2, said.output
    assert "Error: --model 'gpt-4o': the only model that can be named here" in said.output
    assert '[models] default = "openai:gpt-4o" in flow.toml' in said.output
    assert "gpt-4o-mini" not in said.output


def test_a_test_model_with_a_seed_runs(project):
    said = CliRunner().invoke(main, ["run", "f.flow", "--model", "test:7"])
    assert said.exit_code == 0, said.output
