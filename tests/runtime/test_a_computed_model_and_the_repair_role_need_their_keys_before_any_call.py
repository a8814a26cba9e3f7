"""The keys a run's models need that the up-front check of a written model did not see: the
`repair` role's model (called only for an answer that does not conform) is checked before the
first step like the others, and so is a `model "${input.m}"` computed from the run's input
alone; a model computed from anything else (an earlier stage's value) is known only when its
step runs, and that step fails there — before any model call — with the up-front check's
message, naming the agent as written (docs/reference/configuration.md "Models (roles)")."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.local_provider import TWO_KEYED_PROVIDERS

from agentflow import api
from agentflow.errors import ConfigError
from agentflow.runtime.config import load_config
from agentflow.runtime.model_needs import plan_model_refs

CONFIG = (
    TWO_KEYED_PROVIDERS
    + """\
[agents.helper]
[tools]
modules = ["tools.py"]
"""
)

TOOLS = """\
from pathlib import Path


def mark(x: int) -> int:
    Path(__file__).with_name("marked").write_text("ran")
    return x


def pick(m: str) -> str:
    Path(__file__).with_name("marked").write_text("ran")
    return m
"""

COMPUTED = """\
use agent "helper" as helper
input { m: text }
extern tool user__mark(x: int) -> int
type Note { note: text }
stage a -> int { user__mark(x: 1) }
stage b -> Note { agent(helper) { task "hi ${a}" model "${input.m}" tools none expect Note } }
"""

# the model is an earlier stage's value: known only when stage `b` runs
FROM_A_STAGE = """\
use agent "helper" as helper
input { m: text }
extern tool user__pick(m: text) -> text
type Note { note: text }
stage a -> text { user__pick(m: input.m) }
stage b -> Note { agent(helper) { task "hi" model "${a}" tools none expect Note } }
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "c.flow").write_text(COMPUTED)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text(CONFIG)
    monkeypatch.setenv("FIRST_KEY", "sk-first")
    monkeypatch.delenv("SECOND_KEY", raising=False)
    return tmp_path


def test_a_model_computed_from_the_input_without_its_key_is_refused_before_the_first_step(
    project: Path,
) -> None:
    with pytest.raises(ConfigError) as refused:
        api.run_sync(
            project / "c.flow", {"m": "second:m2"}, config=project / "flow.toml", workspace=project
        )
    assert str(refused.value).startswith(
        "the environment variable SECOND_KEY (the API key of provider 'second', [providers.second]"
    )
    assert not (project / "marked").exists()  # nothing ran


def test_a_computed_model_without_its_key_fails_its_step_before_calling_with_the_same_message(
    project: Path,
) -> None:
    (project / "s.flow").write_text(FROM_A_STAGE)
    result = api.run_sync(
        project / "s.flow",
        {"m": "second:m2"},
        config=project / "flow.toml",
        workspace=project,
    )
    assert result.status == "error" and result.error is not None
    assert result.error.code == "model_error"
    message = result.error.message
    assert message.startswith(
        "the environment variable SECOND_KEY (the API key of provider 'second', [providers.second]"
    )
    assert "model 'second:m2', computed by agent(helper)'s" in message
    assert (project / "marked").exists()  # stage `a` ran: the model was known only at `b`
    assert result.usage["inferences"] == 0  # refused before any call, not after retries


def test_under_the_test_model_a_computed_model_needs_no_key(project: Path) -> None:
    result = api.run_sync(
        project / "c.flow",
        {"m": "second:m2"},
        config=project / "flow.toml",
        workspace=project,
        model="test",
    )
    assert result.status == "ok", result.error


def test_the_repair_roles_model_without_its_key_is_refused_before_the_first_step(
    project: Path,
) -> None:
    (project / "flow.toml").write_text(
        CONFIG.replace("[providers.first]", 'repair = "second:fix"\n[providers.first]')
    )
    (project / "r.flow").write_text(COMPUTED.replace('model "${input.m}" ', ""))
    with pytest.raises(ConfigError) as refused:
        api.run_sync(
            project / "r.flow", {"m": "x"}, config=project / "flow.toml", workspace=project
        )
    assert str(refused.value).startswith("the environment variable SECOND_KEY (the API key of")
    assert not (project / "marked").exists()  # nothing ran


def test_the_repair_role_is_among_the_refs_only_when_an_agent_may_repair(project: Path) -> None:
    config = load_config(project / "flow.toml")
    (project / "r.flow").write_text(COMPUTED.replace('model "${input.m}" ', ""))
    assert plan_model_refs(config, api.load(project / "r.flow")) == ("chat", "repair")
    (project / "n.flow").write_text("stage a -> int { 1 }\n")
    assert plan_model_refs(config, api.load(project / "n.flow")) == ("chat",)
