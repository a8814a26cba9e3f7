"""plan_and_execute replans reuse kept MODEL work: a request identical to one answered in an
earlier attempt is answered from that answer, costs nothing and says ``reused: true``
(docs/spec/RUNTIME.md §9; docs/decisions.md "Planning") — against the scripted loopback model."""

from __future__ import annotations

import json

from support.chat_server import answer, text, tool_calls

from agentflow.ir.loader import load_plan_text
from agentflow.runtime.executor import run_plan
from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.models.memo import ModelMemo
from agentflow.runtime.models.router import model_memo
from agentflow.runtime.planner import SOLVER_SYSTEM, plan_and_execute, solve
from agentflow.runtime.shape_cache import ShapeCache
from agentflow.runtime.tools.catalog import Catalog

ISSUES = [
    {"id": "A-1", "title": "Login broken"},
    {"id": "A-2", "title": "Slow page"},
]


def make_catalog(calls: dict) -> Catalog:
    cat = Catalog()

    def list_issues(limit: int = 10):
        """List issues."""
        calls["list"] = calls.get("list", 0) + 1
        return {"issues": ISSUES[:limit]}

    def get_issue(id: str):
        """Get one issue by id."""
        calls.setdefault("get", []).append(id)
        for issue in ISSUES:
            if issue["id"] == id:
                return issue
        raise ValueError(f"no issue {id}")

    cat.register_function("linear__list_issues", list_issues)
    cat.register_function("linear__get_issue", get_issue)
    return cat


def agent_step(sid: str, prompt: str, tools: str = "none") -> str:
    return f"""\
  - id: {sid}
    tool_name: agent
    input:
      prompt: "{prompt}"
      output_schema: {{type: object, required: [id], properties: {{id: {{type: string}}}}}}
      tools: {tools}
      max_iterations: 3
"""


def get_step(sid: str, ref: str) -> str:
    return f"""\
  - id: {sid}
    tool_name: linear__get_issue
    input: {{ id: "{ref}" }}
"""


def plan(*steps: str) -> str:
    return "version: 1\nname: goal_plan\nsteps:\n" + "".join(steps)


PICK = "Pick the most urgent issue for {{ input.goal }}"


def kind_of(request: dict) -> str:
    """planner | solver | agent, from a recorded request's system prompt."""
    system = request["messages"][0]["content"]
    if system.startswith("You are the planner"):
        return "planner"
    if system.startswith("You are the solver"):
        return "solver"
    return "agent"


async def run(router, catalog, tmp_path):
    events = []

    class Sink:
        def handle(self, e):
            events.append(e)

    result = await plan_and_execute(
        "Which issue first?",
        catalog=catalog,
        router=router,
        workspace=str(tmp_path),
        sinks=[Sink()],
        shape_cache=ShapeCache(tmp_path / "shapes.sqlite"),
    )
    return result, events


async def test_kept_agent_step_is_answered_from_the_first_attempt(
    chat_server, scripted_router, tmp_path
):
    calls: dict = {}
    first = plan(agent_step("E0", PICK), get_step("E1", "NOPE-9"))
    second = plan(agent_step("E0", PICK), get_step("E1", "{{ E0.output.id }}"))
    chat_server.script([text(first), answer({"id": "A-1"}), text(second), text("A-1 first.")])
    result, events = await run(scripted_router, make_catalog(calls), tmp_path)
    assert result.status == "ok", result.error
    assert result.replans == 1
    assert result.results["E1"]["title"] == "Login broken"
    # the server saw the agent's request once: planner, agent, planner, solver
    assert [kind_of(r) for r in chat_server.requests] == ["planner", "agent", "planner", "solver"]
    # usage counts it once (each scripted reply is 10 input + 5 output tokens)
    assert result.usage["inferences"] == 4
    assert result.usage["by_role"]["chat"] == {
        "inferences": 1,
        "input_tokens": 10,
        "output_tokens": 5,
    }
    assert result.usage["input_tokens"] == 40 and result.usage["output_tokens"] == 20
    agent_calls = [e for e in events if e.kind == "model_call" and e.path == "E0"]
    assert len(agent_calls) == 2
    assert "reused" not in agent_calls[0].data and agent_calls[0].data["input_tokens"] == 10
    assert agent_calls[1].data["reused"] is True
    assert agent_calls[1].data["input_tokens"] == 0 and agent_calls[1].data["output_tokens"] == 0
    # the planner and solver calls are never reused
    own = [e for e in events if e.kind == "model_call" and e.data.get("role") != "chat"]
    assert len(own) == 3 and not any(e.data.get("reused") for e in own)
    assert [a.reused_inferences for a in result.attempts] == [0, 1]
    assert result.to_dict()["attempts"][1]["reused_inferences"] == 1
    assert model_memo.get() is None  # the memo is scoped to the call


async def test_kept_agent_loop_with_tool_calls_costs_nothing(
    chat_server, scripted_router, tmp_path
):
    calls: dict = {}
    tools = "[linear__list_issues]"
    first = plan(agent_step("E0", PICK, tools), get_step("E1", "NOPE-9"))
    second = plan(agent_step("E0", PICK, tools), get_step("E1", "{{ E0.output.id }}"))
    chat_server.script(
        [
            text(first),
            tool_calls(("linear__list_issues", {"limit": 2})),
            answer({"id": "A-2"}),
            text(second),
            text("A-2 first."),
        ]
    )
    result, events = await run(scripted_router, make_catalog(calls), tmp_path)
    assert result.status == "ok", result.error
    assert result.results["E1"]["title"] == "Slow page"
    assert [kind_of(r) for r in chat_server.requests] == [
        "planner",
        "agent",
        "agent",
        "planner",
        "solver",
    ]
    assert calls["list"] == 1  # the agent's tool call was answered by the tool memo gate
    assert result.attempts[1].reused == 1
    assert result.attempts[1].reused_inferences == 2  # both agent rounds
    assert result.usage["inferences"] == 5
    assert result.usage["by_role"]["chat"]["inferences"] == 2
    reused = [e for e in events if e.kind == "model_call" and e.data.get("reused")]
    assert [e.data["round"] for e in reused] == [1, 2]


async def test_new_and_repeated_requests_of_the_replan_reach_the_model(
    chat_server, scripted_router, tmp_path
):
    calls: dict = {}
    # attempt 1 asks the same thing twice (both go to the model: identical requests within one
    # attempt are not memo-answered), then fails
    first = plan(agent_step("E0", PICK), agent_step("E1", PICK), get_step("E2", "NOPE-9"))
    # attempt 2 keeps both, asks it a third time (new in this attempt) and asks something new
    second = plan(
        agent_step("E0", PICK),
        agent_step("E1", PICK),
        agent_step("E2", PICK),
        agent_step("E3", "Pick the least urgent issue"),
        get_step("E4", "{{ E1.output.id }}"),
    )
    chat_server.script(
        [
            text(first),
            answer({"id": "A-1"}),
            answer({"id": "A-2"}),
            text(second),
            answer({"id": "A-9"}),
            answer({"id": "A-3"}),
            text("done"),
        ]
    )
    result, events = await run(scripted_router, make_catalog(calls), tmp_path)
    assert result.status == "ok", result.error
    kinds = [kind_of(r) for r in chat_server.requests]
    assert kinds == ["planner", "agent", "agent", "planner", "agent", "agent", "solver"]
    # the n-th repeat gets the n-th earlier answer; the third repeat and the new prompt are fresh
    assert result.results["E0"]["output"] == {"id": "A-1"}
    assert result.results["E1"]["output"] == {"id": "A-2"}
    assert result.results["E2"]["output"] == {"id": "A-9"}
    assert result.results["E3"]["output"] == {"id": "A-3"}
    assert result.results["E4"]["title"] == "Slow page"
    assert "least urgent" in json.dumps(chat_server.requests[5])
    assert [a.reused_inferences for a in result.attempts] == [0, 2]
    assert result.usage["by_role"]["chat"]["inferences"] == 4
    reused_paths = [e.path for e in events if e.kind == "model_call" and e.data.get("reused")]
    assert reused_paths == ["E0", "E1"]


async def test_kept_infer_judges_are_reused(chat_server, scripted_router, tmp_path):
    calls: dict = {}
    judge = """\
  - id: E0
    tool_name: filter
    input:
      over: ["A-1", "A-2"]
      infer: "Is {{ item }} urgent?"
"""
    first = plan(judge, get_step("E1", "NOPE-9"))
    second = plan(judge, get_step("E1", "{{ E0.kept[0] }}"))
    replies = {"Is A-1 urgent?": "yes", "Is A-2 urgent?": "no"}
    order = [text(first), None, None, text(second), text("report")]
    state = {"n": 0}

    def reply(body):  # the two judges may run concurrently: answer them by content
        n = state["n"]
        state["n"] += 1
        if order[n] is None:
            return text(replies[body["messages"][-1]["content"]])
        return order[n]

    chat_server.script(reply)
    result, events = await run(scripted_router, make_catalog(calls), tmp_path)
    assert result.status == "ok", result.error
    assert result.results["E0"] == {"kept": ["A-1"], "dropped": ["A-2"]}
    assert result.results["E1"]["title"] == "Login broken"
    assert len(chat_server.requests) == 5  # planner, 2 judges, planner, solver
    assert [a.reused_inferences for a in result.attempts] == [0, 2]
    assert result.usage["by_role"]["judge"]["inferences"] == 2
    judged = [e for e in events if e.kind == "model_call" and e.data.get("role") == "judge"]
    assert [bool(e.data.get("reused")) for e in judged] == [False, False, True, True]


async def test_reused_answers_cost_nothing_in_a_run_result(
    chat_server, scripted_config, scripted_router
):
    doc = load_plan_text(plan(agent_step("E0", "Pick one")), "t.plan.yaml")
    chat_server.script([answer({"id": "A-1"})])
    memo = ModelMemo()
    token = model_memo.set(memo)
    try:
        memo.start_attempt()
        first = await run_plan(doc, {}, router=scripted_router, config=scripted_config)
        memo.start_attempt()
        events = []

        class Sink:
            def handle(self, e):
                events.append(e)

        second = await run_plan(
            doc, {}, router=scripted_router, config=scripted_config, sinks=[Sink()]
        )
    finally:
        model_memo.reset(token)
    assert first.usage["inferences"] == 1 and "E0" in first.usage["by_step"]
    assert second.results["E0"]["output"] == {"id": "A-1"}
    assert second.usage["inferences"] == 0 and second.usage["input_tokens"] == 0
    assert second.usage["by_step"] == {}
    assert memo.reused == 1
    assert len(chat_server.requests) == 1
    assert scripted_router.usage["inferences"] == 1
    (call,) = [e for e in events if e.kind == "model_call"]
    assert call.data["reused"] is True


async def test_planner_and_solver_calls_are_never_memo_answered(chat_server, scripted_router):
    goal = "Which issue first?"
    request = ChatRequest(
        messages=[
            Message(role="system", content=SOLVER_SYSTEM),
            Message(role="user", content=f"Goal:\n{goal}\n\nResults of every step (JSON):\n{{}}"),
        ]
    )
    chat_server.script([text("first"), text("second")])
    memo = ModelMemo()
    token = model_memo.set(memo)
    try:
        memo.start_attempt()
        client = scripted_router.client_for("solver")
        assert (await client.chat(request)).text == "first"
        memo.start_attempt()
        # the same request through solve(), under an active memo that knows the answer
        assert await solve(goal, {}, router=scripted_router) == "second"
    finally:
        model_memo.reset(token)
    assert len(chat_server.requests) == 2
    assert chat_server.requests[0] == chat_server.requests[1]  # the memo would have matched
    assert memo.reused == 0
