"""A run needs the API key of every provider its agents use, not only the `chat` role's: an
agent whose `[agents.NAME] model` (a team member's `model`, an agent's written `model "…"`)
names a provider whose key is unset is refused before the first step, with the message a
missing `chat` key gets — not found mid-run, after earlier stages spent their calls
(docs/reference/configuration.md "Environment variables")."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.local_provider import TWO_KEYED_PROVIDERS

from agentflow import api
from agentflow.errors import ConfigError
from agentflow.runtime.config import load_config
from agentflow.runtime.model_needs import model_problem, plan_model_refs

CONFIG = (
    TWO_KEYED_PROVIDERS
    + """\
[agents.writer]
model = "second:m2"
"""
)

FLOW = """\
use agent "helper" as helper
use agent "writer" as writer
extern tool user__mark(x: int) -> int
type Note { note: text }
stage a -> int { user__mark(x: 1) }
stage b -> Note { agent(helper) { task "hi ${a}" tools none expect Note } }
stage c -> Note { agent(writer) { task "hi" tools none expect Note } }
"""

TOOLS = """\
from pathlib import Path


def mark(x: int) -> int:
    Path(__file__).with_name("marked").write_text("ran")
    return x
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "k.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text(CONFIG + '[tools]\nmodules = ["tools.py"]\n')
    monkeypatch.setenv("FIRST_KEY", "sk-first")
    monkeypatch.delenv("SECOND_KEY", raising=False)
    return tmp_path


def test_an_agents_own_provider_without_its_key_is_refused_before_the_first_step(
    project: Path,
) -> None:
    with pytest.raises(ConfigError) as refused:
        api.run_sync(project / "k.flow", {}, config=project / "flow.toml", workspace=project)
    assert str(refused.value).startswith(
        "the environment variable SECOND_KEY (the API key of provider 'second', [providers.second]"
    )
    assert not (project / "marked").exists()  # nothing ran: stage `a`'s tool neither


def test_the_keys_checked_are_the_chat_roles_and_each_model_an_agent_names(
    project: Path,
) -> None:
    config = load_config(project / "flow.toml")
    plan = api.load(project / "k.flow")
    assert plan_model_refs(config, plan) == ("chat", "second:m2", "repair")
    problem = model_problem(config, plan=plan)  # what `flowc resume` refuses with too
    assert problem is not None and "SECOND_KEY" in problem


def test_a_model_written_on_the_agent_is_checked_too(project: Path) -> None:
    config = load_config(project / "flow.toml")
    written = FLOW.replace('task "hi" tools none', 'task "hi" model "second:m3" tools none')
    (project / "w.flow").write_text(written.replace("agent(writer)", "agent(helper)"))
    plan = api.load(project / "w.flow")
    assert plan_model_refs(config, plan) == ("chat", "second:m3", "repair")


def test_a_written_model_wins_over_the_profile_whose_key_is_then_not_needed(
    project: Path,
) -> None:
    # `agent(writer) { … model "first:m" … }`: the profile's `second:m2` is never called
    config = load_config(project / "flow.toml")
    (project / "o.flow").write_text(
        FLOW.replace('task "hi" tools none', 'task "hi" model "first:m" tools none')
    )
    plan = api.load(project / "o.flow")
    assert plan_model_refs(config, plan) == ("chat", "first:m", "repair")
    assert model_problem(config, plan=plan) is None


def test_a_teams_main_needs_only_its_main_members_model(project: Path) -> None:
    team = (
        '[teams.dev]\nmain = "lead"\n'
        '[teams.dev.members.lead]\nmodel = "first:lead"\n'
        '[teams.dev.members.backend]\nmodel = "second:back"\n'
    )
    (project / "flow.toml").write_text(CONFIG + team)
    config = load_config(project / "flow.toml")
    flow = (
        'use team "dev" as dev\ntype Note { note: text }\n'
        'stage b -> Note { agent(dev.main) { task "hi" tools none expect Note } }\n'
    )
    (project / "t.flow").write_text(flow)
    assert plan_model_refs(config, api.load(project / "t.flow")) == ("chat", "first:lead", "repair")
    (project / "u.flow").write_text(flow.replace("dev.main", 'dev.member("backend")'))
    assert plan_model_refs(config, api.load(project / "u.flow")) == (
        "chat",
        "second:back",
        "repair",
    )
