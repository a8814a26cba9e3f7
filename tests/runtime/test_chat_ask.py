"""`flowc ask`: the chat-role loop over tools, plan__* tools and plan_and_execute, and the
inference counts of seed 002's cost table, against the scripted loopback model."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from support.chat_server import TEST_API_KEY, text, tool_calls

from agentflow.cli import main
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.chat import ask
from agentflow.runtime.effects import Effects
from agentflow.runtime.executor import Hooks, abort, skip
from agentflow.runtime.shape_cache import ShapeCache
from agentflow.runtime.tools.catalog import Catalog

ISSUES = [{"id": "A-1", "title": "Login broken"}, {"id": "A-2", "title": "Slow page"}]

STATUS_PLAN = """\
version: 1
name: project_status
description: Status of the project's issues
steps:
  - id: E0
    tool_name: linear__list_issues
    input: {}
finish:
  mode: solver
  prompt: Summarize the status
"""

BROKEN_PLAN = """\
version: 1
name: broken
steps:
  - id: E0
    tool_name: linear__get_issue
    input: { id: NOPE }
"""

GOOD = """\
version: 1
name: goal_plan
steps:
  - id: E0
    tool_name: linear__list_issues
    input: {}
  - id: E1
    tool_name: linear__get_issue
    input: { id: "{{ E0.issues[1].id }}" }
"""


@pytest.fixture
def calls():
    return []


@pytest.fixture
def catalog(calls):
    cat = Catalog()

    def list_issues():
        """List issues."""
        calls.append("list")
        return {"issues": ISSUES}

    def get_issue(id: str):
        """Get an issue."""
        calls.append(f"get {id}")
        for issue in ISSUES:
            if issue["id"] == id:
                return issue
        raise ValueError(f"no issue {id}")

    cat.register_function("linear__list_issues", list_issues)
    cat.register_function("linear__get_issue", get_issue)
    return cat


@pytest.fixture
def plans():
    return {
        "project_status": load_plan_text(STATUS_PLAN, "status.yaml"),
        "broken": load_plan_text(BROKEN_PLAN, "broken.yaml"),
    }


async def go(router, catalog, plans, **kw):
    progress = []
    result = await ask(
        "How is the project?",
        catalog=catalog,
        router=router,
        plans=plans,
        workspace=".",
        on_progress=lambda kind, t: progress.append((kind, t)),
        **kw,
    )
    return result, progress


def by_role(result):
    return {role: v["inferences"] for role, v in result.usage["by_role"].items()}


# ------------------------------------------------------------------------------ cost table


async def test_direct_tools_cost_one_plus_one_per_round(
    chat_server, scripted_router, catalog, plans
):
    chat_server.script(
        [
            tool_calls(("linear__list_issues", {})),
            tool_calls(("linear__get_issue", {"id": "A-1"}), ("linear__get_issue", {"id": "A-2"})),
            text("Two issues: A-1 and A-2."),
        ]
    )
    result, _ = await go(scripted_router, catalog, plans)
    assert result.status == "ok"
    assert result.answer == "Two issues: A-1 and A-2."
    assert result.usage["inferences"] == 3  # 1 + 2 tool rounds
    assert by_role(result) == {"chat": 3}
    assert [t["tool"] for t in result.tools_called] == [
        "linear__list_issues",
        "linear__get_issue",
        "linear__get_issue",
    ]
    # both calls of round 2 got their own result, matched by id
    tool_msgs = [m for m in chat_server.requests[2]["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 3
    assert "Slow page" in tool_msgs[2]["content"]
    offered = [t["function"]["name"] for t in chat_server.requests[0]["tools"]]
    assert offered == [
        "linear__get_issue",
        "linear__list_issues",
        "plan__project_status",
        "plan__broken",
        "plan_and_execute",
    ]


async def test_plan_tool_costs_three(chat_server, scripted_router, catalog, plans):
    chat_server.script(
        [
            tool_calls(("plan__project_status", {})),
            text("REPORT: two open issues"),  # the plan's solver finish
            text("The project has two open issues."),
        ]
    )
    result, progress = await go(scripted_router, catalog, plans)
    assert result.status == "ok"
    assert result.answer == "The project has two open issues."
    assert result.usage["inferences"] == 3
    assert by_role(result) == {"chat": 2, "solver": 1}
    assert result.reports == ["REPORT: two open issues"]
    assert ("report", "REPORT: two open issues") in progress
    assert "REPORT: two open issues" in chat_server.requests[2]["messages"][-1]["content"]


async def test_plan_and_execute_costs_four(chat_server, scripted_router, catalog, plans, calls):
    chat_server.script(
        [
            tool_calls(("plan_and_execute", {"goal": "Describe the second issue"})),
            text(GOOD),  # planner
            text("A-2 is Slow page."),  # solver
            text("The second issue is 'Slow page'."),  # chat
        ]
    )
    result, _ = await go(scripted_router, catalog, plans)
    assert result.status == "ok", result.error
    assert result.usage["inferences"] == 4
    assert by_role(result) == {"chat": 2, "planner": 1, "solver": 1}
    assert calls == ["list", "get A-2"]
    tool_msg = chat_server.requests[3]["messages"][-1]
    assert json.loads(tool_msg["content"])["report"] == "A-2 is Slow page."


async def test_plan_and_execute_costs_one_more_per_replan(
    chat_server, scripted_router, catalog, plans, calls
):
    bad = GOOD.replace('"{{ E0.issues[1].id }}"', "NOPE")
    chat_server.script(
        [
            tool_calls(("plan_and_execute", {"goal": "Describe the second issue"})),
            text(bad),  # planner: the plan fails at E1
            text(GOOD),  # replan
            text("A-2 is Slow page."),
            text("Slow page."),
        ]
    )
    result, progress = await go(scripted_router, catalog, plans)
    assert result.status == "ok", result.error
    assert result.usage["inferences"] == 5
    assert by_role(result) == {"chat": 2, "planner": 2, "solver": 1}
    assert calls == ["list", "get NOPE", "get A-2"]  # E0 not re-run
    assert any(kind == "replan" for kind, _ in progress)


# ------------------------------------------------------------------------------ behaviour


async def test_human_plans_never_replan(chat_server, scripted_router, catalog, plans):
    chat_server.script([tool_calls(("plan__broken", {})), text("The plan failed: no issue NOPE.")])
    result, _ = await go(scripted_router, catalog, plans)
    assert result.status == "ok"
    assert by_role(result) == {"chat": 2}  # no planner call
    err = json.loads(chat_server.requests[1]["messages"][-1]["content"])["error"]
    assert "no issue NOPE" in err["message"]
    assert chat_server.requests[1]["messages"][-1]["role"] == "tool"


async def test_tool_errors_return_into_the_loop(chat_server, scripted_router, catalog, plans):
    chat_server.script(
        [
            tool_calls(
                ("linear__get_issue", {"id": "X"}),
                ("linear__nope", {}),
                ("linear__list_issues", '{"a": 1}{"b": 2}'),
            ),
            text("Sorry."),
        ]
    )
    result, _ = await go(scripted_router, catalog, plans)
    assert result.status == "ok"
    contents = [m["content"] for m in chat_server.requests[1]["messages"] if m["role"] == "tool"]
    assert "no issue X" in contents[0]
    assert "tool_denied" in contents[1]
    assert "not valid JSON" in contents[2]


async def test_bounded_by_max_agent_iterations(chat_server, scripted_router, catalog, plans):
    chat_server.script(lambda body: tool_calls(("linear__list_issues", {})))
    result, _ = await go(scripted_router, catalog, plans, max_iterations=3)
    assert result.status == "budget"
    assert result.rounds == 3
    assert result.usage["inferences"] == 3
    assert "max_agent_iterations = 3" in result.error["message"]


async def test_gate_covers_plan_and_execute_and_aborts_hard(
    chat_server, scripted_router, catalog, plans
):
    seen = []

    def gate(call):
        seen.append(call.tool_name)
        if call.tool_name == "plan_and_execute":
            return skip({"report": "from the gate"})
        if call.tool_name == "linear__get_issue":
            return abort("no reads today")
        return None

    chat_server.script(
        [
            tool_calls(("plan_and_execute", {"goal": "g"})),
            tool_calls(("linear__get_issue", {"id": "A-1"})),
            text("never"),
        ]
    )
    result, _ = await go(scripted_router, catalog, plans, hooks=Hooks(gate=gate))
    assert seen == ["plan_and_execute", "linear__get_issue"]
    assert result.status == "aborted"
    assert result.error["message"] == "no reads today"
    assert result.usage["inferences"] == 2  # the skipped plan_and_execute cost nothing


async def test_ask_feeds_the_shape_cache(chat_server, scripted_router, catalog, plans):
    chat_server.script([tool_calls(("linear__list_issues", {})), text("ok")])
    await go(scripted_router, catalog, plans)
    assert ShapeCache().get("linear__list_issues").calls == 1


# ------------------------------------------------------------------------------ CLI


def test_flowc_ask_answer_on_stdout_progress_on_stderr(chat_server, tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("The launch is on Friday.")
    plans_dir = tmp_path / "plans"
    plans_dir.mkdir()
    (plans_dir / "notes.yaml").write_text(
        "version: 1\nname: notes\ndescription: Read the notes\nsteps:\n"
        "  - {id: E0, tool_name: builtin__read_file, input: {path: notes.txt}}\n"
        "finish: {mode: solver, prompt: Summarize}\n"
    )
    config = chat_server.write_config(tmp_path)
    monkeypatch.setenv("SCRIPTED_API_KEY", TEST_API_KEY)
    chat_server.script(
        [
            tool_calls(("plan__notes", {})),
            text("SOLVER REPORT: launch Friday"),
            text("The launch is on Friday."),
        ]
    )
    runner = CliRunner()
    res = runner.invoke(
        main,
        ["ask", "When is the launch?", "--config", str(config), "--workspace", str(tmp_path)],
    )
    assert res.exit_code == 0, res.stderr
    assert res.stdout == "The launch is on Friday.\n"
    assert "SOLVER REPORT: launch Friday" in res.stderr
    assert "plan__notes" in res.stderr
    assert TEST_API_KEY not in res.stderr + res.stdout


def test_flowc_ask_without_a_model(tmp_path, monkeypatch):
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "flow.toml").write_text("")
    res = CliRunner().invoke(main, ["ask", "hi", "--config", str(tmp_path / "flow.toml")])
    assert res.exit_code == 1
    assert "no model is configured" in res.stderr
    assert "Traceback" not in res.stderr


def _model_roles(trace):
    return [
        json.loads(line)["data"]["role"]
        for line in trace.read_text().splitlines()
        if json.loads(line)["kind"] == "model_call"
    ]


def test_flowc_ask_record_then_replay_plan_and_execute(chat_server, tmp_path, monkeypatch):
    """`flowc ask --record` then `--replay`: the chat rounds and the planner's and solver's calls
    of plan_and_execute are all in the cassette; the replay sends the provider nothing, even with
    the provider still configured and listening."""
    (tmp_path / "notes.txt").write_text("The launch is on Friday.")
    config = chat_server.write_config(tmp_path)
    monkeypatch.setenv("SCRIPTED_API_KEY", TEST_API_KEY)
    plan = (
        "version: 1\nname: goal_plan\nsteps:\n"
        "  - {id: E0, tool_name: builtin__read_file, input: {path: notes.txt}}\n"
    )
    chat_server.script(
        [
            tool_calls(("plan_and_execute", {"goal": "When is the launch?"})),
            text(plan),
            text("Launch: Friday"),
            text("Friday."),
        ]
    )
    cassette = tmp_path / "ask.jsonl"
    trace = tmp_path / "trace.jsonl"
    runner = CliRunner()
    args = ["ask", "When?", "--workspace", str(tmp_path)]
    rec = runner.invoke(
        main, [*args, "--config", str(config), "--record", str(cassette), "--trace", str(trace)]
    )
    assert rec.exit_code == 0, rec.stderr
    assert rec.stdout == "Friday.\n"
    assert "Launch: Friday" in rec.stderr
    assert _model_roles(trace) == ["chat", "planner", "solver", "chat"]
    paths = [
        json.loads(line)["path"]
        for line in trace.read_text().splitlines()
        if json.loads(line)["kind"] == "model_call"
    ]
    assert paths == [
        "ask",
        "ask/agent.1/plan_and_execute/planner.1",
        "ask/agent.1/plan_and_execute/solver",
        "ask",
    ]
    assert len(chat_server.requests) == 4
    # replay with the provider configured and listening: the same answer and the same model
    # calls in the trace, and not one HTTP request
    replayed = tmp_path / "replayed.jsonl"
    again = runner.invoke(
        main, [*args, "--config", str(config), "--replay", str(cassette), "--trace", str(replayed)]
    )
    assert again.exit_code == 0, again.stderr
    assert again.stdout == "Friday.\n"
    assert "Launch: Friday" in again.stderr
    assert _model_roles(replayed) == ["chat", "planner", "solver", "chat"]
    assert len(chat_server.requests) == 4
    # replay: no model configured, the user's cache holds other shapes — same answer
    ShapeCache().record("builtin__read_file", {"unrelated": [1]})
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "flow.toml").write_text("")
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    rep = runner.invoke(
        main, [*args, "--config", str(empty / "flow.toml"), "--replay", str(cassette)]
    )
    assert rep.exit_code == 0, rep.stderr
    assert rep.stdout == "Friday.\n"
    assert len(chat_server.requests) == 4


async def test_limits_come_from_flow_toml(chat_server, tmp_path, catalog, plans):
    from agentflow.runtime.config import load_config
    from agentflow.runtime.models.router import ModelRouter

    path = chat_server.write_config(
        tmp_path, extra="[chat]\nmax_agent_iterations = 2\n[planner]\nmax_replans = 0\n"
    )
    config = load_config(path, env={"SCRIPTED_API_KEY": TEST_API_KEY})
    assert config.chat.max_agent_iterations == 2 and config.planner.max_replans == 0
    router = ModelRouter(config)
    try:
        chat_server.script(lambda body: tool_calls(("linear__list_issues", {})))
        result, _ = await go(router, catalog, plans, config=config)
        assert result.status == "budget" and result.rounds == 2
    finally:
        await router.aclose()


def test_ask_fails_before_any_call_when_the_configured_key_variable_is_unset(tmp_path):
    import subprocess
    import sys

    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "p:m"\n[providers.p]\nkind = "openai"\n'
        'base_url = "http://127.0.0.1:9/v1"\napi_key_env = "AF_TEST_UNSET_KEY"\n'
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "AF_TEST_UNSET_KEY"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentflow",
            "ask",
            "hello",
            "--config",
            str(tmp_path / "flow.toml"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "AF_TEST_UNSET_KEY" in proc.stderr and "not set" in proc.stderr
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------ one loop, one seam


class _SeenEffects(Effects):
    """Effects that note the path of every model call made through them."""

    __slots__ = ("paths",)

    def __init__(self):
        self.paths = []

    def chat(self, client, request, path):
        self.paths.append(path)
        return super().chat(client, request, path)


async def test_every_model_call_of_ask_and_its_planner_goes_through_effects(
    chat_server, scripted_router, catalog, plans
):
    chat_server.script(
        [
            tool_calls(("plan_and_execute", {"goal": "Describe the second issue"})),
            text("not a plan"),  # planner: no plan, so a repair pass
            text(GOOD),  # repair
            text("A-2 is Slow page."),  # solver
            text("The second issue is 'Slow page'."),  # chat
        ]
    )
    effects = _SeenEffects()
    result, _ = await go(scripted_router, catalog, plans, effects=effects)
    assert result.status == "ok", result.error
    assert effects.paths == [
        "ask",
        "ask/agent.1/plan_and_execute/planner.1",
        "ask/agent.1/plan_and_execute/repair.1",
        "ask/agent.1/plan_and_execute/solver",
        "ask",
    ]
    assert len(chat_server.requests) == len(effects.paths)


async def test_ask_is_the_agent_loop_repeats_are_noted_and_truncated_calls_not_run(
    chat_server, scripted_router, catalog, plans, calls
):
    """What `flowc ask` gains from being an agent run: the loop's note on a repeated identical
    call, and calls cut off by the token limit are not run (every id still gets a result)."""
    cut = tool_calls(("linear__get_issue", {"id": "A-1"}), finish_reason="length")
    chat_server.script(
        [
            tool_calls(("linear__list_issues", {})),
            tool_calls(("linear__list_issues", {})),
            cut,
            text("Two issues."),
        ]
    )
    result, _ = await go(scripted_router, catalog, plans)
    assert result.status == "ok" and result.answer == "Two issues."
    assert result.rounds == 4
    assert calls == ["list", "list"]  # the cut-off call never ran
    assert [(t["tool"], t["round"], t["ok"]) for t in result.tools_called] == [
        ("linear__list_issues", 1, True),
        ("linear__list_issues", 2, True),
    ]
    second = chat_server.requests[2]["messages"][-1]["content"]
    assert "repeats one you made in round 1" in second
    third = json.loads(chat_server.requests[3]["messages"][-1]["content"])["error"]
    assert third["code"] == "truncated"


def test_flowc_ask_ends_when_the_model_refuses(chat_server, tmp_path, monkeypatch):
    config = chat_server.write_config(tmp_path)
    monkeypatch.setenv("SCRIPTED_API_KEY", TEST_API_KEY)
    refusal = text(None)
    refusal.body["choices"][0]["message"]["refusal"] = "I can't help with that."
    chat_server.script([refusal, text("never asked")])
    res = CliRunner().invoke(
        main, ["ask", "Something odd", "--config", str(config), "--workspace", str(tmp_path)]
    )
    assert res.exit_code == 1
    assert res.stdout == ""
    assert "error[output_validation]: the model refused: I can't help with that." in res.stderr
    assert len(chat_server.requests) == 1  # not asked again
