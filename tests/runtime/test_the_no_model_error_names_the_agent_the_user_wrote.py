"""With no model configured, the error speaks of what the user wrote: the agent alias of
``use agent "cls"`` and the keys that give it a model (``[agents.cls] model``, or ``[models]
default`` for every agent) — never "the 'chat' role" — before the run starts and at the step
when the run was given a router without a model (code ``validation`` kept).  An agent whose
``[agents.NAME] model`` names its own model runs without a ``[models] default``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from agentflow import api
from agentflow.runtime.config import load_config
from agentflow.runtime.models.router import ModelRouter

FLOW = """type Out { label: "a" | "b" }
input { x: int }
use agent "cls" as cls
stage s -> Out {
  return agent(cls) { task "Classify ${input.x}" tools none expect Out }
}
"""


def _clean_env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", "AZURE_"))
    }


def test_running_with_no_model_names_the_agent_and_its_keys(tmp_path: Path) -> None:
    (tmp_path / "tb.flow").write_text(FLOW)
    done = subprocess.run(
        [sys.executable, "-m", "agentflow", "run", "tb.flow", "--input", '{"x": 1}'],
        cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith(
        'error: no model is configured for agent "cls" (`use agent "cls"`): set [agents.cls] '
        "model in flow.toml, or [models] default for every agent; or set the environment "
        "variables OPENAI_BASE_URL"
    ), first
    assert "'chat' role" not in done.stderr and "`--model test`" in done.stderr


def test_an_agent_with_a_model_of_its_own_runs_without_a_default(tmp_path: Path) -> None:
    (tmp_path / "tb.flow").write_text(FLOW)
    (tmp_path / "flow.toml").write_text(
        '[providers.p]\nkind = "test"\n[agents.cls]\nmodel = "p:m"\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "agentflow", "run", "tb.flow", "--input", '{"x": 1}'],
        cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"label"' in done.stdout


def test_the_agent_step_without_a_model_names_the_agent_and_keeps_its_code(
    tmp_path: Path,
) -> None:
    flow = tmp_path / "tb.flow"
    flow.write_text(FLOW)
    config = load_config(None, cwd=tmp_path, env=_clean_env())
    assert not config.has_model()
    result = asyncio.run(api.run(str(flow), {"x": 1}, config=config, router=ModelRouter(config)))
    assert result.status == "error" and result.error is not None
    assert result.error.code == "validation"
    assert result.error.message.startswith(
        'no model is configured for agent "cls" (`use agent "cls"`): set [agents.cls] model'
    ), result.error.message


def test_a_command_with_no_agent_names_the_models_key(tmp_path: Path) -> None:
    from agentflow.runtime.config import no_model_message

    said = no_model_message(load_config(None, cwd=tmp_path, env=_clean_env()), "chat")
    assert said.startswith("no model is configured: set [models] chat (or [models] default) in")
    assert "'chat' role" not in said
