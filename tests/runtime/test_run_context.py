"""RunContext (runtime/context.py): the one object run_plan, ask and plan_and_execute share —
given whole, as keyword options, or both (options override); the plans callable as ``plan__*``
default to the catalog's; the executor boundary takes plans from the loader only."""

from __future__ import annotations

from pathlib import Path

from support.chat_server import text, tool_calls

from agentflow.ir.loader import load_plan_text
from agentflow.ir.models import Plan
from agentflow.runtime.chat import ask
from agentflow.runtime.context import RunContext
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.executor import run_plan
from agentflow.runtime.hooks import Hooks, skip
from agentflow.runtime.planner import plan_and_execute
from agentflow.runtime.tools.catalog import Catalog

ONE_CALL = """
version: 1
name: one_call
steps:
  - id: E0
    tool_name: user__where
    input: {}
"""


def where_catalog() -> Catalog:
    catalog = Catalog()
    catalog.register_function("user__where", lambda ctx: str(ctx.workspace))
    return catalog


def test_context_normalises_the_option_forms(tmp_path):
    events: list = []
    ctx = RunContext(workspace=str(tmp_path), sinks=[CallbackSink(events.append)], hooks=None)
    assert ctx.workspace == tmp_path and isinstance(ctx.workspace, Path)
    assert isinstance(ctx.sinks, tuple) and len(ctx.sinks) == 1
    assert isinstance(ctx.hooks, Hooks)
    assert RunContext().workspace == Path.cwd()
    other = ctx.replace(workspace=None, sinks=[])
    assert other.workspace == Path.cwd() and other.sinks == ()
    assert ctx.workspace == tmp_path  # replace copies; the context itself never changes
    assert ctx.replace() is ctx


async def test_run_plan_takes_a_context_and_options_override_its_fields(tmp_path):
    plan = load_plan_text(ONE_CALL, "one.plan.yaml")
    gated = Hooks(gate=lambda call: skip("gated"))
    ctx = RunContext(catalog=where_catalog(), workspace=tmp_path, hooks=gated)
    assert (await run_plan(plan, {}, ctx)).output == "gated"
    result = await run_plan(plan, {}, ctx, hooks=None)  # no hooks for this run
    assert result.status == "ok", result.error
    assert result.output == str(tmp_path)
    other = tmp_path / "other"
    result = await run_plan(plan, {}, ctx, hooks=Hooks(), workspace=other)
    assert result.output == str(other)
    result = await run_plan(plan, catalog=where_catalog(), workspace=tmp_path)  # options only
    assert result.output == str(tmp_path)


async def test_plan_tools_default_to_the_catalogs_plans():
    helper = load_plan_text(
        "version: 1\nname: helper\nsteps:\n  - id: H\n    tool_name: value\n"
        "    input: {value: '{{ input.n * 2 }}'}\n",
        "helper.plan.yaml",
    )
    caller = load_plan_text(
        "version: 1\nname: caller\nsteps:\n  - id: C\n    tool_name: plan__helper\n"
        "    input: {n: 21}\n",
        "caller.plan.yaml",
    )
    catalog = Catalog()
    catalog.plans = {"helper": helper}  # what build_catalog puts there: the plans directory
    result = await run_plan(caller, {}, catalog=catalog)
    assert result.status == "ok", result.error
    assert result.output == 42
    result = await run_plan(caller, {}, catalog=catalog, plans={})  # given plans win
    assert result.status == "error" and result.error["code"] == "tool_error"
    assert result.error["message"] == "unknown tool 'plan__helper'"


async def test_a_plan_that_skipped_the_loader_is_refused_with_a_validation_error():
    plan = Plan.model_validate(
        {"name": "raw", "steps": [{"id": "E0", "tool_name": "value", "input": {"value": 1}}]}
    )
    result = await run_plan(plan, {})
    assert result.status == "error"
    assert result.error.to_dict() == {
        "code": "validation",
        "message": "step `E0` has no compiled templates: run plans made by agentflow.load(), "
        "agentflow.ir.loader.load_plan() or load_plan_data()",
        "step_path": "E0",
    }


async def test_a_tool_step_with_null_input_is_called_without_arguments():
    seen = []

    def user__args(**kwargs):
        seen.append(kwargs)
        return "called"

    catalog = Catalog()
    catalog.register_function("user__args", user__args)
    plan = load_plan_text(
        "version: 1\nname: n\nsteps:\n  - id: E0\n    tool_name: user__args\n    input: null\n",
        "n.plan.yaml",
    )
    result = await run_plan(plan, {}, catalog=catalog)
    assert result.output == "called" and seen == [{}]


async def test_ask_and_plan_and_execute_take_the_same_context(
    chat_server, scripted_config, scripted_router, tmp_path
):
    events: list = []
    ctx = RunContext(
        catalog=where_catalog(),
        router=scripted_router,
        config=scripted_config,
        workspace=tmp_path,
        sinks=[CallbackSink(events.append)],
        shape_cache=False,
    )
    chat_server.script([tool_calls(("user__where", {})), text("It is the workspace.")])
    answered = await ask("Where am I?", ctx)
    assert answered.status == "ok" and answered.answer == "It is the workspace."
    assert str(tmp_path) in chat_server.requests[1]["messages"][-1]["content"]
    chat_server.script([text(ONE_CALL), text("The report.")])
    executed = await plan_and_execute("Where am I?", ctx)
    assert executed.status == "ok", executed.error
    assert executed.results == {"E0": str(tmp_path)}
    assert executed.output == "The report."
    tool_paths = [e.path for e in events if e.kind == "tool_finished"]
    # both runs reported to ctx.sinks; the question's call at its place in the loop
    assert tool_paths == ["ask/agent.1/user__where", "E0"]
