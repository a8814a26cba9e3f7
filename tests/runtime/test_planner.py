"""plan_and_execute: planning, validation like a file, replans with preserved results, the solver
finish, hooks (docs/spec/RUNTIME.md §9; seed 002) — against the scripted loopback model."""

from __future__ import annotations

import json

import pytest
from support.chat_server import answer, text

from agentflow.runtime.executor import Hooks, abort
from agentflow.runtime.planner import extract_plan_text, plan_and_execute, planner_tools
from agentflow.runtime.shape_cache import ShapeCache
from agentflow.runtime.tools.catalog import Catalog

ISSUES = [
    {"id": "A-1", "title": "Login broken", "blocked": True},
    {"id": "A-2", "title": "Slow page", "blocked": False},
]


@pytest.fixture
def calls():
    return {"list": 0, "get": []}


@pytest.fixture
def catalog(calls):
    cat = Catalog()

    def list_issues(limit: int = 10):
        """List issues."""
        calls["list"] += 1
        return {"issues": ISSUES[:limit], "total": len(ISSUES)}

    def get_issue(id: str):
        """Get one issue by id."""
        calls["get"].append(id)
        for issue in ISSUES:
            if issue["id"] == id:
                return issue
        raise ValueError(f"no issue {id}")

    cat.register_function("linear__list_issues", list_issues)
    cat.register_function("linear__get_issue", get_issue)
    cat.register_function("linear__delete_issue", lambda id: None, "Delete an issue")
    return cat


@pytest.fixture
def cache(tmp_path):
    return ShapeCache(tmp_path / "cache" / "shapes.sqlite")


GOOD = """\
version: 1
name: goal_plan
steps:
  - id: E0
    tool_name: linear__list_issues
    input: { limit: 5 }
  - id: E1
    tool_name: linear__get_issue
    input: { id: "{{ E0.issues[0].id }}" }
"""

BAD_ID = GOOD.replace('"{{ E0.issues[0].id }}"', "NOPE-9")

UNKNOWN_TOOL = """\
version: 1
name: goal_plan
steps:
  - id: E0
    tool_name: linear__list_isues
    input: {}
"""


def fenced(plan: str) -> str:
    return "Here is the plan:\n```yaml\n" + plan + "```\n"


async def run(scripted_router, catalog, cache, **kw):
    events = []

    class Sink:
        def handle(self, e):
            events.append(e)

    result = await plan_and_execute(
        "Which issue is first?",
        catalog=catalog,
        router=scripted_router,
        workspace=".",
        sinks=[Sink()],
        shape_cache=cache,
        **kw,
    )
    return result, events


def roles(chat_server):
    """The system prompt's first words of every request, to tell planner/repair/solver apart."""
    return [r["messages"][0]["content"].split(".")[0] for r in chat_server.requests]


async def test_plan_runs_and_solver_writes_the_report(chat_server, scripted_router, catalog, cache):
    chat_server.script([text(fenced(GOOD)), text("A-1 (Login broken) is first.")])
    result, events = await run(scripted_router, catalog, cache)
    assert result.status == "ok", result.error
    assert result.output == "A-1 (Login broken) is first."
    assert result.results["E1"]["id"] == "A-1"
    assert result.replans == 0
    assert result.usage["inferences"] == 2
    assert result.usage["by_role"]["planner"]["inferences"] == 1
    assert result.usage["by_role"]["solver"]["inferences"] == 1
    planner_req = chat_server.requests[0]["messages"][1]["content"]
    assert "Which issue is first?" in planner_req
    assert "linear__list_issues" in planner_req and '"limit"' in planner_req  # schema shown
    assert "linear__delete_issue" in planner_req
    solver_req = chat_server.requests[1]["messages"][1]["content"]
    assert "Login broken" in solver_req  # the solver sees the collected results
    kinds = [e.kind for e in events]
    assert kinds.count("model_call") == 2 and "tool_finished" in kinds


async def test_failing_step_replans_and_executed_steps_are_not_rerun(
    chat_server, scripted_router, catalog, cache, calls
):
    chat_server.script([text(BAD_ID), text(GOOD), text("report")])
    result, events = await run(scripted_router, catalog, cache)
    assert result.status == "ok", result.error
    assert result.replans == 1
    # E0 ran once: attempt 2 reused its recorded result instead of calling the tool again
    assert calls["list"] == 1
    assert calls["get"] == ["NOPE-9", "A-1"]
    assert result.attempts[0].status == "error"
    assert result.attempts[0].error["step_path"] == "E1"
    assert result.attempts[1].reused == 1
    assert any(e.kind == "tool_finished" and e.data.get("skipped") for e in events)
    replan_req = chat_server.requests[1]["messages"][1]["content"]
    assert "no issue NOPE-9" in replan_req  # what went wrong
    assert "Slow page" in replan_req  # the results so far
    assert "linear__list_issues (1 call)" in replan_req  # the shape cache, read fresh
    assert '"issues"' in replan_req.split("Observed result shapes")[1]
    assert result.usage["by_role"]["planner"]["inferences"] == 2
    assert result.usage["inferences"] == 3
    assert any(e.kind == "warning" and e.data.get("replan") == 1 for e in events)


async def test_load_error_repair_then_replan(chat_server, scripted_router, catalog, cache):
    # the planner names an unknown tool; the repair pass fails too; the replan fixes it
    chat_server.script([text(UNKNOWN_TOOL), text(UNKNOWN_TOOL), text(GOOD), text("report")])
    result, _ = await run(scripted_router, catalog, cache)
    assert result.status == "ok", result.error
    assert result.replans == 1
    problems = result.attempts[0].problems
    assert any("<plan attempt 1>:5:" in p and "linear__list_isues" in p for p in problems)
    assert "linear__list_issues" in " ".join(problems)  # did-you-mean hint
    repair_req = chat_server.requests[1]["messages"]
    assert repair_req[0]["content"].startswith("You fix workflow plans")
    assert "linear__list_isues" in repair_req[1]["content"]
    replan_req = chat_server.requests[2]["messages"][1]["content"]
    assert "It did not load" in replan_req
    assert result.usage["by_role"]["repair"]["inferences"] == 1


async def test_repair_pass_fixes_a_plan_without_a_replan(
    chat_server, scripted_router, catalog, cache
):
    chat_server.script([text("steps: [oops"), text(fenced(GOOD)), text("report")])
    result, _ = await run(scripted_router, catalog, cache)
    assert result.status == "ok", result.error
    assert result.replans == 0
    assert result.attempts[0].repaired is True
    assert result.usage["inferences"] == 3


async def test_replans_are_bounded(chat_server, scripted_router, catalog, cache, calls):
    chat_server.script([text(BAD_ID)] * 3)
    result, _ = await run(scripted_router, catalog, cache, max_replans=2)
    assert result.status == "error"
    assert len(result.attempts) == 3
    assert "after 2 replan(s)" in result.error["message"]
    assert result.usage["inferences"] == 3  # three planner calls, no solver
    assert calls["list"] == 1  # never re-run


async def test_no_valid_plan_reports_the_problems(chat_server, scripted_router, catalog, cache):
    chat_server.script([text("not: a plan")] * 2)
    result, _ = await run(scripted_router, catalog, cache, max_replans=1, repair_attempts=0)
    assert result.status == "error"
    assert result.error["code"] == "validation"
    assert "no valid plan in 2 attempt(s)" in result.error["message"]
    assert result.output is None


async def test_gate_abort_is_a_hard_stop(chat_server, scripted_router, catalog, cache):
    chat_server.script([text(GOOD), text("never")])
    hooks = Hooks(gate=lambda call: abort("stop here") if "get" in call.tool_name else None)
    result, _ = await run(scripted_router, catalog, cache, hooks=hooks)
    assert result.status == "aborted"
    assert result.usage["inferences"] == 1  # no replan, no solver
    assert result.results["E0"]["total"] == 2  # the partial state comes back


async def test_substitute_on_tool_error_never_replans(chat_server, scripted_router, catalog, cache):
    from agentflow.runtime.executor import substitute

    chat_server.script([text(BAD_ID), text("report")])
    hooks = Hooks(on_tool_error=lambda failure: substitute({"id": "?"}))
    result, _ = await run(scripted_router, catalog, cache, hooks=hooks)
    assert result.status == "ok"
    assert result.replans == 0
    assert result.results["E1"] == {"id": "?"}


async def test_policy_limits_the_planner_tools(chat_server, scripted_router, catalog, cache):
    from agentflow.runtime.config import Config

    config = Config.model_validate(
        {"policy": {"allowed_tools": ["linear__list_*", "linear__get_*"]}}
    )
    names = [t["name"] for t in planner_tools(catalog, {}, config)]
    assert names == ["linear__get_issue", "linear__list_issues"]
    delete = GOOD.replace("linear__get_issue", "linear__delete_issue")
    chat_server.script([text(delete), text(delete), text(GOOD), text("ok")])
    result, _ = await run(scripted_router, catalog, cache, config=config)
    assert result.status == "ok"
    assert "linear__delete_issue" in " ".join(result.attempts[0].problems)


async def test_plan_and_execute_is_refused_inside_plans(
    chat_server, scripted_router, catalog, cache
):
    bad = GOOD.replace("linear__get_issue", "plan_and_execute")
    chat_server.script([text(bad), text(bad)])
    result, _ = await run(scripted_router, catalog, cache, max_replans=0)
    assert result.status == "error"
    assert "plan_and_execute" in result.error["message"]


def test_extract_plan_text():
    assert extract_plan_text("```yaml\nname: x\n```") == "name: x\n"
    assert extract_plan_text("Sure:\n```\nname: x\n```\nDone.") == "name: x\n"
    assert extract_plan_text("name: x") == "name: x\n"
    assert extract_plan_text(json.dumps({"name": "x"})) == '{"name": "x"}\n'
    assert extract_plan_text(None) == ""


async def test_planner_input_is_the_goal(chat_server, scripted_router, catalog, cache):
    plan = """\
version: 1
name: goal_plan
steps:
  - id: E0
    tool_name: value
    input: { value: "{{ input.goal }}" }
"""
    chat_server.script([text(plan), answer({"ok": True})])
    result, _ = await run(scripted_router, catalog, cache)
    assert result.results["E0"] == "Which issue is first?"
