"""README "A first flow": examples/first.flow checks, compiles and runs (scripted loopback model)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

from support.chat_server import answer
from support.paths import EXAMPLES, REPO

from agentflow import api

FIRST = EXAMPLES / "first.flow"


async def test_first_flow_asks_the_agent_when_there_are_todos(
    tmp_path, chat_server, scripted_config
):
    (tmp_path / "a.py").write_text("x = 1  # TODO: remove x\n", encoding="utf-8")
    chat_server.script([answer({"top": ["remove x"], "count": 1})])
    result = await api.run(str(FIRST), {"dir": "."}, config=scripted_config, workspace=tmp_path)
    assert result.status == "ok", result.error
    assert result.output == {"top": ["remove x"], "count": 1}
    prompt = chat_server.requests[0]["messages"][-1]["content"]
    assert "TODO: remove x" in prompt  # the grep hits were interpolated into the task


async def test_first_flow_skips_the_agent_without_todos(tmp_path, chat_server, scripted_config):
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    result = await api.run(str(FIRST), {"dir": "."}, config=scripted_config, workspace=tmp_path)
    assert result.status == "ok", result.error
    assert result.output == {"top": [], "count": 0}
    assert chat_server.requests == []  # no inference on the empty branch


def test_the_readmes_run_line_of_first_flow_reaches_its_agent():
    """README "A first flow" gives one `flowc run examples/first.flow …` line to try with a
    model: its workspace must hold TODOs, or the run never asks the agent (it named
    examples/workspace, which has none, so a configured model was never called)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"`(flowc run examples/first\.flow [^`]+)`", readme.replace("\n", " "))
    argv = shlex.split(line)[1:]
    done = subprocess.run(
        [sys.executable, "-m", "agentflow", *argv, "--model", "test", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["output"]["count"] > 0
    assert result["usage"]["inferences"] == 1, result["usage"]
