"""README "A first flow": examples/first.flow checks, compiles and runs (scripted loopback model)."""

from __future__ import annotations

from support.chat_server import answer
from support.paths import EXAMPLES

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
