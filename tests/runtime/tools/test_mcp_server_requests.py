"""What an MCP server asks of a run and tells it: elicitation (to the run's interlocutor, or the
form's defaults when nobody can answer), sampling (a model role, usage counted, refusable),
progress and log notifications and the server's start-up as trace events, resources and
prompts as tools, a zero-tool server listed as connected.  Against the real stdio server
``tests/support/mcp_server.py`` and the scripted chat server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from support.chat_server import TEST_API_KEY, text

from agentflow import api
from agentflow.ir import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.executor import NO_ANSWER, Hooks
from agentflow.runtime.tools.build import build_catalog, list_catalog

SERVER = Path(__file__).resolve().parents[2] / "support" / "mcp_server.py"


def server_toml(name: str = "tracker", *args: str, **extra: str) -> str:
    lines = [
        f"[mcp.{name}]",
        f"command = {json.dumps(sys.executable)}",
        f"args = {json.dumps([str(SERVER), *args])}",
    ]
    lines += [f"{k} = {v}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


def one_step_plan(tool: str, args: dict) -> object:
    return load_plan_text(
        json.dumps(
            {
                "version": 1,
                "name": "p",
                "steps": [{"id": "E0", "tool_name": tool, "input": args}],
            }
        ),
        "p.plan.json",
    )


async def run_step(tmp_path, toml: str, tool: str, args: dict, *, hooks=None, env=None):
    path = tmp_path / "flow.toml"
    path.write_text(toml, encoding="utf-8")
    config = load_config(path, env=env or {})
    events: list = []
    result = await api.run(
        one_step_plan(tool, args),
        config=config,
        workspace=tmp_path,
        sinks=[CallbackSink(events.append)],
        hooks=hooks,
        catalog=build_catalog(config, entry_points=False),
        shape_cache=False,
    )
    return result, events


async def test_elicitation_reaches_the_interlocutor_field_by_field(tmp_path):
    asked = []

    async def interlocutor(request):
        asked.append(request)
        return 3 if "nights" in request.question.lower() else NO_ANSWER

    hooks = Hooks(interlocutor=interlocutor)
    result, events = await run_step(
        tmp_path, server_toml(), "tracker__book", {"city": "Oslo"}, hooks=hooks
    )
    assert result.status == "ok", result.error
    # the typed answer for `nights`, the form's default for the unanswered `breakfast`
    assert result.output == {"action": "accept", "content": {"nights": 3, "breakfast": True}}
    assert [r.schema["type"] for r in asked] == ["integer", "boolean"]
    assert all(r.step_path == "E0" and r.question.startswith("Booking in Oslo") for r in asked)
    asks = [e for e in events if e.kind == "ask"]
    assert [(e.data["field"], e.data["answered"]) for e in asks] == [
        ("nights", True),
        ("breakfast", False),
    ]
    assert all(e.data["source"] == "mcp" and e.data["server"] == "tracker" for e in asks)


async def test_elicitation_without_an_interlocutor_declines_a_required_field(tmp_path):
    # CI: nobody can answer, `nights` has no default: the server is told "decline"
    result, _ = await run_step(tmp_path, server_toml(), "tracker__book", {"city": "Oslo"})
    assert result.status == "ok"
    assert result.output == {"action": "decline", "content": None}


async def test_elicitation_policy_decline_never_asks(tmp_path):
    asked = []
    hooks = Hooks(interlocutor=lambda r: asked.append(r) or 2)
    result, _ = await run_step(
        tmp_path,
        server_toml(elicitation='"decline"'),
        "tracker__book",
        {"city": "Oslo"},
        hooks=hooks,
    )
    assert asked == []
    # a client without the elicitation capability: the server's elicit fails the tool
    assert result.status == "error" and result.error["code"] == "tool_error"


async def test_an_answer_outside_the_form_declines(tmp_path):
    hooks = Hooks(interlocutor=lambda r: "many")
    result, events = await run_step(
        tmp_path, server_toml(), "tracker__book", {"city": "Oslo"}, hooks=hooks
    )
    assert result.output == {"action": "decline", "content": None}
    assert "not of type 'integer'" in [e for e in events if e.kind == "ask"][0].data["error"]


async def test_sampling_goes_to_the_configured_role_and_counts_in_usage(tmp_path, chat_server):
    chat_server.script([text("A short summary.")])
    toml = chat_server.config_text() + server_toml()
    result, events = await run_step(
        tmp_path,
        toml,
        "tracker__summarize",
        {"text": "a long text"},
        env={"SCRIPTED_API_KEY": TEST_API_KEY},
    )
    assert result.status == "ok", result.error
    assert result.output == "A short summary."
    sent = chat_server.requests[-1]["messages"]
    assert sent[0] == {"role": "system", "content": "Summarize in one line."}
    assert sent[1]["content"] == "a long text"
    # the request's preferences reach the model (a hint that names nothing configured: the role)
    assert chat_server.requests[-1]["temperature"] == 0.2
    assert chat_server.requests[-1]["stop"] == ["END"]
    assert (
        chat_server.requests[-1]["max_tokens"] == 50
        or "max_completion_tokens" in (chat_server.requests[-1])
    )
    calls = [e for e in events if e.kind == "model_call"]
    assert len(calls) == 1 and calls[0].path == "E0"
    assert calls[0].data["source"] == "mcp" and calls[0].data["role"] == "chat"
    assert result.usage["inferences"] == 1
    assert result.usage["by_step"]["E0"]["inferences"] == 1


def test_sampling_model_hints_pick_only_a_configured_named_model(tmp_path):
    from mcp.types import ModelHint, ModelPreferences

    from agentflow.runtime.models.router import ModelRouter
    from agentflow.runtime.tools.mcp_sampling import _hinted_model

    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "openai:gpt-4o"\n'
        '[models.named.small]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
        '[models.named.deep]\nprovider = "openai"\nmodel = "o3"\n'
    )
    router = ModelRouter(load_config(tmp_path / "flow.toml", env={}))

    def hinted(*names):
        return _hinted_model(router, ModelPreferences(hints=[ModelHint(name=n) for n in names]))

    assert hinted("unknown", "mini") == "small"  # part of a named model's provider model name
    assert hinted("deep", "mini") == "deep"  # a named model's own name, in the hints' order
    assert hinted("claude-3-opus") is None  # never a model the configuration does not name
    assert _hinted_model(router, None) is None


async def test_sampling_false_refuses_the_server(tmp_path, chat_server):
    toml = chat_server.config_text() + server_toml(sampling="false")
    result, _ = await run_step(
        tmp_path, toml, "tracker__summarize", {"text": "x"}, env={"SCRIPTED_API_KEY": TEST_API_KEY}
    )
    assert result.status == "error" and result.error["code"] == "tool_error"
    assert chat_server.requests == []


async def test_progress_logs_and_start_up_are_trace_events(tmp_path):
    result, events = await run_step(tmp_path, server_toml(), "tracker__steps", {"count": 3})
    assert result.output == "stepped"
    started = [e for e in events if e.kind == "mcp_server"]
    assert len(started) == 1 and started[0].data["state"] == "started"
    assert started[0].data["tools"] >= 10 and started[0].data["server_info"]["name"] == "tracker"
    progress = [e for e in events if e.kind == "mcp_progress"]
    assert [(e.data["progress"], e.data["total"]) for e in progress] == [(1, 3), (2, 3), (3, 3)]
    assert progress[0].path == "E0" and progress[0].data["message"] == "step 1 of 3"
    logs = [e for e in events if e.kind == "mcp_log"]
    assert [e.data["data"] for e in logs] == ["step 1", "step 2", "step 3"]
    assert logs[0].data["level"] == "info" and logs[0].path == "E0"


async def test_a_server_that_cannot_start_is_a_failed_start_up_event(tmp_path):
    toml = '[mcp.gone]\ncommand = "/nonexistent/server"\n'
    result, events = await run_step(tmp_path, toml, "gone__x", {})
    assert result.status == "error" and "cannot start the server" in result.error["message"]
    failed = [e for e in events if e.kind == "mcp_server"]
    assert failed and failed[0].data["state"] == "failed"


async def test_resources_and_prompts_are_tools(tmp_path):
    # one plan, one server start: each step's output is in its step_finished event
    steps = [
        ("tracker__read_resource", {"uri": "memo://config"}),
        ("tracker__read_resource", {"uri": "memo://readme"}),
        ("tracker__get_prompt", {"name": "review", "arguments": {"topic": "the plan"}}),
        ("tracker__read_resource", {"uri": "memo://nothing"}),
    ]
    plan = {
        "version": 1,
        "name": "p",
        "steps": [{"id": f"E{i}", "tool_name": t, "input": a} for i, (t, a) in enumerate(steps)],
    }
    (tmp_path / "flow.toml").write_text(server_toml(), encoding="utf-8")
    config = load_config(tmp_path / "flow.toml", env={})
    events: list = []
    result = await api.run(
        load_plan_text(json.dumps(plan), "p.plan.json"),
        config=config,
        workspace=tmp_path,
        sinks=[CallbackSink(events.append)],
        catalog=build_catalog(config, entry_points=False),
        shape_cache=False,
    )
    finished = {e.path: e.data for e in events if e.kind == "step_finished"}
    assert finished["E0"]["result"] == {"retries": 3}  # JSON contents parsed
    assert finished["E1"]["result"] == "Read me first."
    prompt = finished["E2"]["result"]
    assert prompt["messages"] == [{"role": "user", "content": "Please review the plan."}]
    assert result.status == "error" and "memo://nothing" in result.error["message"]


async def test_listing_shows_a_zero_tool_server_as_connected_with_its_prompts(tmp_path):
    path = tmp_path / "flow.toml"
    path.write_text(server_toml("empty", "--name", "empty"), encoding="utf-8")
    catalog = build_catalog(load_config(path, env={}), entry_points=False)
    rows, errors = await list_catalog(catalog)
    assert errors == []
    mine = {r["name"]: r for r in rows if r["source"] == "mcp:empty"}
    assert mine["empty__*"]["description"].startswith("(connected: empty")
    assert "0 tools" in mine["empty__*"]["description"]
    assert mine["empty__get_prompt(review)"]["kind"] == "prompt"
    assert mine["empty__get_prompt(review)"]["summary"] == "topic"
    assert "empty__get_prompt" in mine  # offered as a tool


def test_the_stderr_tail_keeps_the_cause_of_a_crash():
    from agentflow.runtime.tools.mcp_session import stderr_tail

    frames = "\n".join(f'  File "lib/module{i}.py", line {i}, in call_{i}' for i in range(40))
    text = f"starting\nTraceback (most recent call last):\n{frames}\n\nModuleNotFoundError: No module named 'tomli_w'\n"
    tail = stderr_tail(text)
    assert tail.endswith("ModuleNotFoundError: No module named 'tomli_w'")
    assert len(tail) <= 600 and "module39.py" in tail
    long = "x" * 2000 + " the cause"
    assert stderr_tail(long).endswith("the cause") and len(stderr_tail(long)) == 600
    assert stderr_tail("\n \n") == ""
