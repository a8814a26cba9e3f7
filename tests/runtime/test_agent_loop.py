"""The agent loop (docs/spec/RUNTIME.md §3, §10) against the scripted chat server."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from support.chat_server import answer, status, text, tool_calls, tool_messages
from support.timing import Stretch, scaled

from agentflow import api
from agentflow.errors import RunError
from agentflow.runtime.agent import AgentSpec, run_agent
from agentflow.runtime.config import load_config
from agentflow.runtime.extract import ExtractionError, compile_count, extract_json, validate
from agentflow.runtime.models.base import ToolSpec

SCHEMA = {
    "type": "object",
    "required": ["answer"],
    "properties": {"answer": {"type": "string"}, "count": {"type": "integer"}},
    "additionalProperties": False,
}


def spec(**kw) -> AgentSpec:
    kw.setdefault("prompt", "Do the task.")
    kw.setdefault("output_schema", SCHEMA)
    kw.setdefault(
        "tools", [ToolSpec(n, f"tool {n}", {"type": "object"}) for n in ("slow", "fast", "boom")]
    )
    return AgentSpec(**kw)


class Recorder:
    """call_tool + emit for tests: records calls and events; tool behaviour by name."""

    def __init__(self):
        self.calls: list[tuple[str, dict, str]] = []
        self.events: list[tuple[str, str, dict]] = []

    async def call_tool(self, name, args, path):
        self.calls.append((name, args, path))
        if name == "slow":
            await asyncio.sleep(args.get("sleep", 0.3))
            return {"tool": "slow", "args": args}
        if name == "fast":
            await asyncio.sleep(args.get("sleep", 0.0))
            return {"tool": "fast", "args": args}
        if name == "boom":
            raise ValueError("kaboom")
        if name == "big":
            return "x" * 50_000
        if name == "abort":
            raise RunError(code="aborted", message="gate said no")
        return {"tool": name}

    def emit(self, kind, path, **data):
        self.events.append((kind, path, data))

    def kinds(self, kind):
        return [d for k, _, d in self.events if k == kind]


async def run(router, rec, **kw):
    return await run_agent(
        spec(**kw), router=router, call_tool=rec.call_tool, emit=rec.emit, step_path="E1"
    )


async def test_valid_answer_first_round(chat_server, scripted_router):
    chat_server.script([answer({"answer": "42"})])
    rec = Recorder()
    result = await run(scripted_router, rec, input={"city": "Zürich"}, system_prompt="Be terse.")
    assert result == {
        "output": {"answer": "42"},
        "iterations": 1,
        "tools_called": [],
        "final": True,
    }
    messages = chat_server.requests[0]["messages"]
    system = messages[0]["content"]
    assert messages[0]["role"] == "system" and system.startswith("Be terse.\n\n")
    # the contract is shown once, last, as compact JSON (no indentation, no annotations)
    assert system.endswith('"additionalProperties":false}') and system.count('"required"') == 1
    assert "Zürich" in messages[1]["content"]  # input as JSON, Unicode kept
    assert [t["function"]["name"] for t in chat_server.requests[0]["tools"]] == [
        "slow",
        "fast",
        "boom",
    ]
    (call,) = rec.kinds("model_call")
    assert call["role"] == "chat" and call["round"] == 1 and call["input_tokens"] == 10
    assert scripted_router.usage["inferences"] == 1


async def test_parallel_tool_calls_matched_by_id(chat_server, scripted_router):
    chat_server.script(
        [
            tool_calls(
                ("slow", {"sleep": 0.3}, "id-slow"), ("fast", {"sleep": 0.3, "n": "ü"}, "id-fast")
            ),
            tool_calls(("slow", {"sleep": 0.2}, "A"), ("fast", {"sleep": 0.0}, "B")),
            answer({"answer": "done"}),
        ]
    )
    rec = Recorder()
    started = time.perf_counter()
    result = await run(scripted_router, rec)
    elapsed = time.perf_counter() - started
    assert result["final"] is True and result["iterations"] == 3
    assert result["tools_called"] == [
        {"tool": "slow", "round": 1},
        {"tool": "fast", "round": 1},
        {"tool": "slow", "round": 2},
        {"tool": "fast", "round": 2},
    ]
    assert elapsed < scaled(0.5 + 0.2 + 0.3)  # round 1 ran both 0.3 s tools concurrently
    paths = [p for _, _, p in rec.calls]
    assert paths == ["E1/agent.1/slow", "E1/agent.1/fast", "E1/agent.2/slow", "E1/agent.2/fast"]
    # round 2: "fast" finished first, yet each result carries its own call id
    results = {
        m["tool_call_id"]: json.loads(m["content"]) for m in tool_messages(chat_server.requests[2])
    }
    assert results["A"]["tool"] == "slow" and results["B"]["tool"] == "fast"
    assert results["id-fast"]["args"]["n"] == "ü"
    raw = [m["content"] for m in tool_messages(chat_server.requests[1])]
    assert any('"ü"' in c for c in raw)  # ensure_ascii=False


async def test_one_round_of_parallel_tools_is_fast(chat_server, scripted_router):
    chat_server.script(
        [
            tool_calls(("slow", {"sleep": 0.3}), ("slow", {"sleep": 0.3, "b": 1})),
            answer({"answer": "ok"}),
        ]
    )
    rec = Recorder()
    with Stretch() as clock:
        result = await run(scripted_router, rec)
    assert clock.took < clock.bound(0.5)
    assert result["final"] is True


async def test_invalid_answer_fixed_by_repair(chat_server, scripted_router):
    def script(request):
        system = request["messages"][0]["content"]
        if system.startswith("You fix JSON"):
            assert "$.count" in request["messages"][1]["content"]  # the repair pass sees the errors
            return answer({"answer": "7", "count": 7})
        return answer({"answer": "7", "count": "7"})

    chat_server.script(script)
    rec = Recorder()
    result = await run(scripted_router, rec)
    assert result == {
        "output": {"answer": "7", "count": 7},
        "iterations": 1,
        "tools_called": [],
        "final": True,
    }
    assert [c["role"] for c in rec.kinds("model_call")] == ["chat", "repair"]
    assert scripted_router.usage["by_role"]["repair"]["inferences"] == 1


async def test_second_repair_pass_works_on_the_first_passes_answer(chat_server, scripted_router):
    """docs/spec/RUNTIME.md §3: `repair_attempts` repair-role passes per invalid answer. A second
    pass that repeated the first request verbatim could only get the same reply (and replays the
    same cassette entry): it is shown the previous pass's answer and its errors."""
    schema = {
        "type": "object",
        "required": ["a", "b"],
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    }
    repair_requests = []

    def script(request):
        messages = request["messages"]
        if messages[0]["content"].startswith("You fix JSON"):
            repair_requests.append(messages[1]["content"])
            if len(repair_requests) == 1:
                return answer({"a": 1, "b": "2"})  # fixes a, not b
            return answer({"a": 1, "b": 2})
        return answer({"a": "1", "b": "2"})

    chat_server.script(script)
    result = await run_agent(
        AgentSpec(prompt="p", output_schema=schema, repair_attempts=2),
        router=scripted_router,
        call_tool=None,
        emit=None,
        step_path="E1",
    )
    assert result["output"] == {"a": 1, "b": 2} and result["iterations"] == 1
    first, second = repair_requests
    assert '"a": "1"' in first and "$.a" in first
    assert '"a": 1' in second and "$.a" not in second and "$.b" in second


async def test_never_conforming_gives_final_false(chat_server, scripted_router):
    chat_server.script(lambda request: answer({"wrong": True}))
    rec = Recorder()
    result = await run(scripted_router, rec, max_iterations=3)
    errors = result.pop("errors")
    assert result == {"output": {}, "iterations": 3, "tools_called": [], "final": False}
    assert errors and all(isinstance(e, str) for e in errors)  # why the last round failed
    assert any("answer" in e or "wrong" in e for e in errors), errors
    assert len(chat_server.requests) == 6  # 3 rounds + 3 repair passes
    last_round = [
        r for r in chat_server.requests if not r["messages"][0]["content"].startswith("You fix")
    ][-1]
    feedback = last_round["messages"][-1]["content"]
    assert "does not conform" in feedback and "$: 'answer' is a required property" in feedback


async def test_errors_go_back_to_agent_and_cost_a_round(chat_server, scripted_router):
    chat_server.script([answer({"answer": 1}), answer({"answer": 2}), answer({"answer": "fixed"})])
    rec = Recorder()
    result = await run(scripted_router, rec)
    assert result["output"] == {"answer": "fixed"} and result["iterations"] == 2
    assert (
        "$.answer: 1 is not of type 'string'" in chat_server.requests[2]["messages"][-1]["content"]
    )


async def test_fenced_json_with_backticks_inside(chat_server, scripted_router):
    reply = '```json\n{"answer": "use ```code``` here"}\n```'
    chat_server.script([text(reply)])
    result = await run(scripted_router, Recorder())
    assert result["output"] == {"answer": "use ```code``` here"}


async def test_trailing_prose_is_noted(chat_server, scripted_router):
    chat_server.script([text('{"answer": "yes"}\n\nLet me know if you need more!')])
    rec = Recorder()
    result = await run(scripted_router, rec)
    assert result["output"] == {"answer": "yes"} and result["final"] is True
    (warning,) = rec.kinds("warning")
    assert "ignored" in warning["message"] and warning["trailing"].startswith("Let me know")


async def test_two_json_values_is_invalid(chat_server, scripted_router):
    chat_server.script(
        [text('{"answer": "a"}\n{"answer": "b"}'), answer({"answer": "a"}), answer({"answer": "b"})]
    )
    result = await run(scripted_router, Recorder(), repair_attempts=0)
    assert result["iterations"] == 2 and result["output"] == {"answer": "a"}
    assert "more than one JSON value" in chat_server.requests[1]["messages"][-1]["content"]


async def test_bad_tool_arguments_are_never_run(chat_server, scripted_router):
    chat_server.script(
        [
            tool_calls(
                ("fast", '{"a": 1', "trunc"),
                ("fast", '{"a": 1}{"a": 2}', "concat"),
                ("fast", "[1]", "arr"),
            ),
            answer({"answer": "gave up"}),
        ]
    )
    rec = Recorder()
    result = await run(scripted_router, rec)
    assert rec.calls == []
    assert result["final"] is True and result["tools_called"] == []
    results = {
        m["tool_call_id"]: json.loads(m["content"]) for m in tool_messages(chat_server.requests[1])
    }
    assert "not valid JSON" in results["trunc"]["error"]["message"]
    assert "Extra data" in results["concat"]["error"]["message"]
    assert "must be a JSON object" in results["arr"]["error"]["message"]
    assert all(r["error"]["code"] == "tool_error" for r in results.values())


async def test_object_arguments_and_missing_ids(chat_server, scripted_router):
    chat_server.script(
        [
            tool_calls(("fast", ("object", {"k": 1}), None), ("fast", {"k": 2}, "")),
            answer({"answer": "x"}),
        ]
    )
    rec = Recorder()
    await run(scripted_router, rec)
    assert [a for _, a, _ in rec.calls] == [{"k": 1}, {"k": 2}]
    assistant = chat_server.requests[1]["messages"][2]
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert ids == ["call_1_1", "call_1_2"]
    assert [m["tool_call_id"] for m in tool_messages(chat_server.requests[1])] == ids


async def test_tool_raising_returns_into_the_loop(chat_server, scripted_router):
    chat_server.script([tool_calls(("boom", {}, "b1")), answer({"answer": "explained"})])
    rec = Recorder()
    result = await run(scripted_router, rec)
    assert result["final"] is True and result["tools_called"] == [{"tool": "boom", "round": 1}]
    (message,) = tool_messages(chat_server.requests[1])
    assert json.loads(message["content"]) == {
        "error": {"code": "tool_error", "message": "ValueError: kaboom"}
    }


async def test_denied_tool_and_plan_and_execute(chat_server, scripted_router):
    chat_server.script(
        [
            tool_calls(("secret", {}, "s"), ("plan_and_execute", {"goal": "x"}, "p")),
            answer({"answer": "ok"}),
        ]
    )
    rec = Recorder()
    tools = [
        ToolSpec("fast", "f", {"type": "object"}),
        ToolSpec("plan_and_execute", "never", {"type": "object"}),
    ]
    result = await run(scripted_router, rec, tools=tools)
    assert rec.calls == [] and result["tools_called"] == []
    assert [t["function"]["name"] for t in chat_server.requests[0]["tools"]] == [
        "fast"
    ]  # never offered
    results = {
        m["tool_call_id"]: json.loads(m["content"])["error"]
        for m in tool_messages(chat_server.requests[1])
    }
    assert results["s"]["code"] == "tool_denied"
    assert results["p"]["code"] == "tool_error" and "plan_and_execute" in results["p"]["message"]


async def test_repeated_identical_call_is_reported(chat_server, scripted_router):
    chat_server.script(
        [tool_calls(("fast", {"q": 1})), tool_calls(("fast", {"q": 1})), answer({"answer": "ok"})]
    )
    rec = Recorder()
    await run(scripted_router, rec)
    (message,) = tool_messages(chat_server.requests[2])[-1:]
    assert "repeats one you made in round 1" in message["content"]
    assert any("repeated" in w["message"] for w in rec.kinds("warning"))


async def test_big_result_truncated(chat_server, scripted_router):
    chat_server.script([tool_calls(("big", {})), answer({"answer": "ok"})])
    rec = Recorder()
    await run(
        scripted_router,
        rec,
        tools=[ToolSpec("big", "b", {"type": "object"})],
        max_result_chars=1000,
    )
    (message,) = tool_messages(chat_server.requests[1])
    assert message["content"].startswith("x" * 1000)
    assert "[truncated: result has 50000 characters; showing the first 1000]" in message["content"]


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
    """docs/spec/RUNTIME.md §10: the tool-result size cap is configurable: `[tools]
    max_result_chars`."""
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


async def test_length_finish_is_truncation_not_schema_error(chat_server, scripted_router):
    chat_server.script(
        [text('{"answer": "very lo', finish_reason="length"), answer({"answer": "short"})]
    )
    rec = Recorder()
    result = await run(scripted_router, rec)
    assert result["iterations"] == 2 and result["output"] == {"answer": "short"}
    assert len(chat_server.requests) == 2  # no repair pass for a truncation
    assert "cut off by the output token limit" in chat_server.requests[1]["messages"][-1]["content"]
    assert any("truncated" in w["message"] for w in rec.kinds("warning"))


async def test_empty_reply_costs_a_round(chat_server, scripted_router):
    chat_server.script([text(None), text(""), answer({"answer": "a"})])
    result = await run(scripted_router, Recorder(), max_iterations=2)
    assert result["final"] is False and result["iterations"] == 2
    assert result["errors"] == ["the last reply held neither a tool call nor an answer"]


async def test_one_iteration_cannot_call_a_tool_and_answer(chat_server, scripted_router):
    chat_server.script([tool_calls(("fast", {})), answer({"answer": "a"})])
    result = await run(scripted_router, Recorder(), max_iterations=1)
    assert result == {
        "output": {},
        "iterations": 1,
        "tools_called": [{"tool": "fast", "round": 1}],
        "final": False,
        "errors": ["the agent was still calling tools when its rounds ran out"],
    }


async def test_templated_max_iterations_is_checked_not_coerced(chat_server, tmp_path):
    """docs/spec/PLAN_IR.md §6: `max_iterations` is an integer ≥ 1. A templated value that renders
    to 2.5, true, a text or null is a `validation` error naming the value, never coerced
    (2.5 → 2 rounds, true → 1) nor a Python `int()` error."""
    from agentflow.api import run
    from agentflow.ir.loader import load_plan_text

    plan = load_plan_text(
        """
version: 1
name: t
input_schema: {type: object}
steps:
  - id: E1
    tool_name: agent
    input:
      prompt: hi
      max_iterations: "{{ input.n }}"
      tools: none
      output_schema: {type: object}
"""
    )
    config = load_config(chat_server.write_config(tmp_path), env={"SCRIPTED_API_KEY": "k"})
    for bad, shown in ((2.5, "2.5"), (True, "true"), ("x", '"x"'), (None, "null"), (0, "0")):
        chat_server.script([answer({})])
        result = await run(plan, {"n": bad}, config=config, workspace=tmp_path, shape_cache=False)
        assert result.status == "error", bad
        assert result.error["code"] == "validation"
        assert result.error["message"] == (
            f"`max_iterations` must be an integer from 1 to 1000, got {shown}"
        )
    chat_server.script([answer({})])
    result = await run(plan, {"n": 2.0}, config=config, workspace=tmp_path, shape_cache=False)
    assert result.status == "ok" and result.output["final"] is True


async def test_scripted_investigator_reacts_to_tool_results(chat_server, scripted_router):
    def investigator(request):
        results = [json.loads(m["content"]) for m in tool_messages(request)]
        if not results:
            return tool_calls(("lookup", {"id": 1}))
        if len(results) == 1:
            return tool_calls(("lookup", {"id": results[0]["next"]}))
        return answer({"answer": f"chain ends at {results[-1]['id']}", "count": len(results)})

    async def call_tool(name, args, path):
        return {"id": args["id"], "next": args["id"] + 10}

    chat_server.script(investigator)
    result = await run_agent(
        spec(tools=[ToolSpec("lookup", "Look up.", {"type": "object"})]),
        router=scripted_router,
        call_tool=call_tool,
        emit=None,
        step_path="E2/do.3",
    )
    assert result["output"] == {"answer": "chain ends at 11", "count": 2}
    assert result["iterations"] == 3


async def test_abort_is_a_hard_stop(chat_server, scripted_router):
    chat_server.script(
        [tool_calls(("abort", {}), ("slow", {"sleep": 5})), answer({"answer": "never"})]
    )
    rec = Recorder()
    with Stretch() as clock:
        with pytest.raises(RunError) as info:
            await run(
                scripted_router, rec, tools=[ToolSpec("abort", "a", {}), ToolSpec("slow", "s", {})]
            )
    assert info.value.code == "aborted"
    assert clock.took < clock.bound(2)  # the sibling call was cancelled


async def test_permanent_model_error_fails_the_step(chat_server, scripted_router):
    chat_server.script([status(401)])
    with pytest.raises(RunError) as info:
        await run(scripted_router, Recorder())
    # a permanent provider failure is the model's, not a tool's
    assert info.value.code == "model_error" and "401" in info.value.message


async def test_transient_errors_do_not_consume_rounds(chat_server, scripted_router):
    chat_server.script(
        [status(500), status(429, headers={"Retry-After": "0"}), answer({"answer": "ok"})]
    )
    result = await run(scripted_router, Recorder(), max_iterations=1)
    assert result["final"] is True and result["iterations"] == 1


# --------------------------------------------------------------------------- extraction unit tests


@pytest.mark.parametrize(
    ("reply", "value", "trailing"),
    [
        ('{"a": 1}', {"a": 1}, None),
        ('  \n{"a": [1, "x"]}\n', {"a": [1, "x"]}, None),
        ('```json\n{"a": "`"}\n```', {"a": "`"}, None),
        ('```\n{"a": "```"}\n```', {"a": "```"}, None),
        ('{"a": 1}\nThat is all.', {"a": 1}, "That is all."),
        ('```json\n{"a": 1}\n```\nNotes follow.', {"a": 1}, "Notes follow."),
        ('{"a": "ünï ✓"}', {"a": "ünï ✓"}, None),
    ],
)
def test_extract_ok(reply, value, trailing):
    extracted = extract_json(reply)
    assert extracted.value == value and extracted.trailing == trailing


@pytest.mark.parametrize(
    "reply",
    [
        '{"a": 1}{"b": 2}',
        '{"a": 1}\n```json\n{"b": 2}\n```',
        'Sure! {"a": 1}',
        '{"a": NaN}',
        '{"a": 1, "a": 2}',
        "",
        '{"a": ',
    ],
)
def test_extract_refuses(reply):
    with pytest.raises(ExtractionError):
        extract_json(reply)


def test_validation_paths_enum_and_compile_once():
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}}},
            }
        },
    }
    before = compile_count()
    errors = validate(schema, {"items": [{"kind": "a"}, {"kind": "c"}]})
    assert errors == ['$.items[1].kind: "c" is not one of the allowed values: "a", "b"']
    assert validate(json.loads(json.dumps(schema)), {"items": []}) == []
    assert compile_count() == before + 1


def test_validation_does_not_apply_defaults():
    schema = {"type": "object", "properties": {"a": {"type": "integer", "default": 3}}}
    value = {}
    assert validate(schema, value) == []
    assert value == {}


def test_newer_draft_keywords_are_enforced_not_skipped():
    """docs/spec/RUNTIME.md §3: the contract is validated, each failure named by its JSON path.
    Plans' schemas are checked as JSON Schema 2020-12, but fastjsonschema (drafts 4–7) silently
    ignores `prefixItems`, `dependentRequired`, `unevaluatedProperties`…: such a schema is
    validated by jsonschema alone, so the keyword is enforced."""
    from agentflow.runtime.extract import validate

    cases = [
        ({"type": "array", "prefixItems": [{"type": "string"}]}, [1], "$.x[0]:"),
        ({"type": "object", "dependentRequired": {"a": ["b"]}}, {"a": 1}, "$.x:"),
        (
            {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False},
            {"b": 1},
            "$.x:",
        ),
    ]
    for schema, bad, where in cases:
        contract = {"type": "object", "properties": {"x": schema}}
        errors = validate(contract, {"x": bad})
        assert errors and errors[0].startswith(where), (schema, errors)


def test_format_violations_are_all_reported_with_their_paths():
    """Contracts with `@format(...)`: every violation, each at its JSON path, in one wording."""
    from agentflow.runtime.extract import validate

    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {
            "url": {"type": "string", "format": "uri"},
            "when": {"type": "string", "format": "date-time"},
            "mail": {"type": "string", "format": "email"},
        },
    }
    errors = validate(schema, {"url": "not a uri", "when": "yesterday", "mail": "nope"})
    assert errors == [
        "$: 'a' is a required property",
        "$.mail: 'nope' is not a 'email'",
        "$.url: 'not a uri' is not a 'uri'",
        "$.when: 'yesterday' is not a 'date-time'",
    ]
    ok = {"a": 1, "url": "https://x.org/a", "when": "2026-11-30T10:00:00Z", "mail": "a@b.org"}
    assert validate(schema, ok) == []


async def test_an_openai_refusal_ends_the_loop_and_says_why(chat_server, scripted_router):
    from support.chat_server import completion

    body = completion(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    chat_server.script([body, answer({"answer": "never asked"})])
    rec = Recorder()
    result = await run(scripted_router, rec, max_iterations=3)
    assert result["final"] is False and result["iterations"] == 1
    assert result["errors"] == ["the model refused: I can't help with that."]
    assert len(chat_server.requests) == 1  # no round spent asking again
    assert any("refused" in w["message"] for w in rec.kinds("warning"))


async def test_an_anthropic_refusal_stop_reason_is_a_refusal(chat_server, tmp_path):
    from support.chat_server import TEST_API_KEY, anthropic_message

    from agentflow.runtime.config import load_config
    from agentflow.runtime.models.router import ModelRouter

    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "claude:claude-test"\n[providers.claude]\nkind = "anthropic"\n'
        f'base_url = "http://127.0.0.1:{chat_server.port}"\napi_key_env = "ANTHROPIC_API_KEY"\n'
    )
    router = ModelRouter(load_config(cwd=tmp_path, env={"ANTHROPIC_API_KEY": TEST_API_KEY}))
    chat_server.script([anthropic_message([], stop_reason="refusal")])
    try:
        result = await run(router, Recorder(), max_iterations=2)
    finally:
        await router.aclose()
    assert result["errors"] == ["the model refused: no explanation given"]


def test_a_refusal_survives_record_and_replay(tmp_path):
    from agentflow.runtime.models.base import ChatResponse
    from agentflow.runtime.models.cassette import response_data, response_from

    data = response_data(ChatResponse(text=None, refusal="no"))
    assert response_from(json.loads(json.dumps(data))).refusal == "no"
    assert "refusal" not in response_data(ChatResponse(text="hi"))  # old lines unchanged


async def test_a_reply_of_too_many_tool_calls_runs_only_the_first_ones(
    chat_server, scripted_router
):
    # a runaway reply (thousands of calls, write_file among them) does not run them all: the
    # first MAX_CALLS_PER_ROUND run, each of the rest gets a tool_denied result saying why
    from agentflow.runtime.agent import MAX_CALLS_PER_ROUND

    count = MAX_CALLS_PER_ROUND + 36
    chat_server.script(
        [
            tool_calls(*[("fast", {"n": i}, f"c{i}") for i in range(count)]),
            answer({"answer": "done"}),
        ]
    )
    rec = Recorder()
    result = await run(scripted_router, rec)
    assert result["final"] is True
    assert [args["n"] for _, args, _ in rec.calls] == list(range(MAX_CALLS_PER_ROUND))
    results = {m["tool_call_id"]: m["content"] for m in tool_messages(chat_server.requests[1])}
    assert len(results) == count  # every call id still gets one result
    denied = json.loads(results[f"c{count - 1}"])["error"]
    assert denied["code"] == "tool_denied"
    assert f"your reply made {count} tool calls" in denied["message"]
    assert f"at most {MAX_CALLS_PER_ROUND}" in denied["message"]
    (warning,) = [w for w in rec.kinds("warning") if "tool calls" in w["message"]]
    assert warning["calls"] == count
