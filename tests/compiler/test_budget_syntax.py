"""`budget { … }` in `.flow`: per run at the top level, per agent step in its block; lowered to
the plan's `budget` fields and enforced at run time."""

from __future__ import annotations

from support.chat_server import TEST_API_KEY, tool_calls

from agentflow import api
from agentflow.compiler.fmt import format_source
from agentflow.grammar.parser import parse_module
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.config import load_config

FLOW = """\
flow b "budgets"
input { q: text }
budget { inferences: 3, cost: 1.5 }

use agent "helper" as helper

type A {
  answer: text
}

stage s -> A {
  return agent(helper) {
    task "Answer ${input.q}."
    tools [list_dir]
    expect A
    budget { inferences: 5, tokens: 20000 }
  }
}
"""


def test_budgets_lower_to_the_plan_and_agent_step_fields(tmp_path):
    path = tmp_path / "b.flow"
    path.write_text(FLOW)
    plan = api.compile_flow(path).plan
    assert plan["budget"] == {"inferences": 3, "cost": 1.5}
    (step,) = plan["steps"]
    assert step["input"]["budget"] == {"inferences": 5, "tokens": 20000}
    assert list(plan)[:5] == ["version", "name", "description", "input_schema", "budget"]
    load_plan_data(plan, str(path))  # the plan loads


def test_an_unknown_budget_limit_is_a_syntax_error_naming_the_three():
    _, diags = parse_module("budget { dollars: 3 }\n", "x.flow")
    (d,) = diags
    assert d.code == "syntax-error"
    assert "unknown budget limit `dollars`: expected `inferences`, `tokens` or `cost`" in d.message
    assert (d.span.line, d.span.column) == (1, 10)


def test_budget_is_still_a_name_elsewhere_and_formats_stably():
    source = FLOW.replace("stage s -> A {", "stage s -> A {\n  let budget = 2")
    _, diags = parse_module(source, "b.flow")
    assert diags == []
    assert format_source(FLOW, "b.flow") == FLOW


async def test_a_flow_budget_stops_the_run_before_the_call_that_would_exceed_it(
    chat_server, tmp_path
):
    chat_server.script(lambda request: tool_calls(("builtin__list_dir", {"path": "."})))
    path = tmp_path / "b.flow"
    path.write_text(FLOW)
    config_path = chat_server.write_config(tmp_path)
    config = load_config(config_path, env={"SCRIPTED_API_KEY": TEST_API_KEY})
    result = await api.run(
        path, {"q": "why?"}, config=config, workspace=tmp_path, shape_cache=False
    )
    assert result.error["code"] == "budget_exceeded" and len(chat_server.requests) == 3
    assert "run budget of 3 inference(s) (the plan's `budget`)" in result.error["message"]
