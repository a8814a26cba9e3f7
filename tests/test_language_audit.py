"""Behaviours of LANGUAGE.md found missing by the language audit (2026-11-30).

Checker cases live in ``tests/check/audit_language.flow``; this file holds the ones that need a
run: §10 "Outlined sub-plans are not offered to agents whose `tools` is omitted".
"""

from __future__ import annotations

from support.chat_server import text

from agentflow import api

OUTLINED = """\
type Out { ok: bool }
input { xs: int[] }
use agent "coder" as coder
stage s -> json {
  let sizes = map input.xs as x {
    let a = read_file(path: "a.txt")
    read_file(path: "a.txt").count + a.count + x
  }
  let free = agent(coder) { task "no tools clause" expect Out }
  let named = agent(coder) { task "asks for the sub-plans" tools ["plan__*"] expect Out }
  return { sizes: sizes, free: free, named: named }
}
"""


async def test_outlined_sub_plans_not_offered_when_tools_omitted(
    tmp_path, chat_server, scripted_config
):
    (tmp_path / "a.txt").write_text("abc", encoding="utf-8")
    src = tmp_path / "outlined.flow"
    src.write_text(OUTLINED, encoding="utf-8")
    plan = api.load(src)
    assert plan.plans, "the map body must be outlined for this test to mean anything"
    chat_server.script([text('{"ok": true}'), text('{"ok": true}')])
    result = await api.run(plan, {"xs": [1]}, config=scripted_config, workspace=tmp_path)
    assert result.status == "ok", result.error
    assert result.output["sizes"] == [7]
    free = [t["function"]["name"] for t in chat_server.requests[0].get("tools", [])]
    named = [t["function"]["name"] for t in chat_server.requests[1].get("tools", [])]
    assert "builtin__read_file" in free
    assert not [n for n in free if n.startswith("plan__")], free
    # asking for them by name or pattern still works (request ∩ policy)
    assert named == [f"plan__{n}" for n in plan.plans]


HAND_WRITTEN = """\
version: 1
name: main
steps:
  - id: E0
    tool_name: agent
    input:
      prompt: use what you have
      output_schema: {type: object, required: [ok], properties: {ok: {type: boolean}}}
plans:
  helper:
    version: 1
    name: helper
    description: a sub-plan written by hand
    steps:
      - {id: H0, tool_name: value, input: {value: 1}}
"""


async def test_hand_written_sub_plans_are_offered_when_tools_omitted(
    tmp_path, chat_server, scripted_config
):
    """RUNTIME.md §4: `plan__*` covers every sub-plan; only outlined ones are held back."""
    f = tmp_path / "main.plan.yaml"
    f.write_text(HAND_WRITTEN, encoding="utf-8")
    chat_server.script([text('{"ok": true}')])
    result = await api.run(str(f), {}, config=scripted_config, workspace=tmp_path)
    assert result.status == "ok", result.error
    offered = [t["function"]["name"] for t in chat_server.requests[0].get("tools", [])]
    assert "plan__helper" in offered, offered


BIG_RESULT = """\
version: 1
name: big
steps:
  - id: E0
    tool_name: agent
    input:
      prompt: read it
      tools: [builtin__read_file]
      output_schema: {type: object}
"""


async def test_tool_result_cap_of_agent_steps_comes_from_flow_toml(tmp_path, chat_server):
    """RUNTIME.md §10: the tool-result size cap is configurable: `[tools] max_result_chars`."""
    from support.chat_server import TEST_API_KEY, tool_calls

    from agentflow.runtime.config import load_config

    (tmp_path / "big.txt").write_text("x" * 5000, encoding="utf-8")
    path = chat_server.write_config(tmp_path)
    path.write_text(path.read_text() + "\n[tools]\nmax_result_chars = 300\n", encoding="utf-8")
    config = load_config(path, env={"SCRIPTED_API_KEY": TEST_API_KEY})
    chat_server.script([tool_calls(("builtin__read_file", {"path": "big.txt"})), text("{}")])
    f = tmp_path / "big.plan.yaml"
    f.write_text(BIG_RESULT, encoding="utf-8")
    result = await api.run(str(f), {}, config=config, workspace=tmp_path)
    assert result.status == "ok", result.error
    shown = [m for m in chat_server.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "showing the first 300]" in shown and len(shown) < 600
