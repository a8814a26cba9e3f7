"""A provider that trickles its reply a byte at a time (never idle long enough for httpx's
between-bytes timeout) is cut off at the provider ``timeout`` for the whole request (issue 16);
before, a run without a deadline never ended."""

from __future__ import annotations

from support.chat_server import Reply, completion
from support.timing import Stretch

from agentflow.ir import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.executor import run_plan
from agentflow.runtime.models.router import ModelRouter

PLAN = """
version: 1
name: slow
steps:
  - id: E1
    tool_name: agent
    input:
      prompt: Answer
      output_schema: {type: object}
      tools: none
"""


async def test_a_trickling_reply_is_cut_off_at_the_provider_timeout(tmp_path, chat_server):
    text = chat_server.config_text(retries=0).replace(
        "max_retries = 0\n", "max_retries = 0\ntimeout = 1\n"
    )
    (tmp_path / "flow.toml").write_text(text)
    config = load_config(tmp_path / "flow.toml", env={"SCRIPTED_API_KEY": "k" * 20})
    chat_server.script([Reply(body=completion('{"a": 1}'), trickle=0.2)] * 3)
    router = ModelRouter(config)
    with Stretch() as clock:
        try:
            result = await run_plan(load_plan_text(PLAN, "slow.yaml"), router=router, config=config)
        finally:
            await router.aclose()
    assert result.status == "error", result.output
    assert "no complete reply within 1 s" in result.error["message"]
    assert clock.took < clock.bound(8), clock.took  # the reply would take ~40 s at 5 bytes a second
