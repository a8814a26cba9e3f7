"""Money per call, step, role and run; budgets of inferences, tokens and money, per run and per
agent step, from flow.toml and the plan, enforced before each model call."""

from __future__ import annotations

import pytest
from support.chat_server import TEST_API_KEY, answer, tool_calls

from agentflow import api
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.config import load_config
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.models.prices import Price, PriceBook

CONTRACT = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}


def agent_step(step_id="E0", budget=None, prompt="Look around."):
    inp = {
        "prompt": prompt,
        "output_schema": CONTRACT,
        "tools": ["builtin__list_dir"],
        "max_iterations": 20,
    }
    if budget is not None:
        inp["budget"] = budget
    return {"id": step_id, "tool_name": "agent", "input": inp}


def plan(*steps, budget=None):
    data = {"version": 1, "name": "b", "steps": list(steps)}
    if budget is not None:
        data["budget"] = budget
    return load_plan_data(data, "b.plan.yaml")


def setup(server, tmp_path, extra=""):
    toml = (
        "[models]\n"
        'default = "m"\n'
        "[models.named.m]\n"
        'provider = "p"\n'
        'model = "test-model"\n'
        "price = { input = 2.0, output = 10.0 }\n"
        "[providers.p]\n"
        'kind = "openai"\n'
        f'base_url = "{server.url}"\n'
        'api_key_env = "K"\n'
        "max_retries = 0\n"
        f"{extra}"
    )
    (tmp_path / "flow.toml").write_text(toml)
    return load_config(tmp_path / "flow.toml", env={"K": TEST_API_KEY})


def forever(request):
    """Keeps calling a tool: only a budget (or max_iterations) stops it."""
    return tool_calls(("builtin__list_dir", {"path": "."}), usage=(100, 20))


async def run(target, config, tmp_path):
    calls = []
    sink = CallbackSink(lambda e: calls.append(e.data) if e.kind == "model_call" else None)
    result = await api.run(target, config=config, workspace=tmp_path, sinks=[sink],
                           shape_cache=False)  # fmt: skip
    return result, calls


async def test_an_inference_budget_of_n_stops_the_run_before_call_n_plus_1(chat_server, tmp_path):
    chat_server.script(forever)
    config = setup(chat_server, tmp_path, "[budget]\ninferences = 3\n")
    result, calls = await run(plan(agent_step()), config, tmp_path)
    assert len(chat_server.requests) == 3  # call 4 was never sent
    assert result.status == "error" and result.error["code"] == "budget_exceeded"
    assert "run budget of 3 inference(s)" in result.error["message"]
    assert "flow.toml [budget]" in result.error["message"]
    assert result.error["step_path"] == "E0"
    # the reported cost is the sum of its calls: 3 × (100 × $2 + 20 × $10) / 1M
    assert [c["cost"] for c in calls] == [0.0004] * 3
    assert result.usage["cost"] == round(sum(c["cost"] for c in calls), 10) == 0.0012
    assert result.usage["by_role"]["chat"]["cost"] == 0.0012
    assert result.usage["by_step"]["E0"]["cost"] == 0.0012


async def test_a_plan_budget_and_an_agent_step_budget_apply(chat_server, tmp_path):
    chat_server.script(forever)
    config = setup(chat_server, tmp_path)
    result, _ = await run(plan(agent_step(budget={"inferences": 2})), config, tmp_path)
    assert len(chat_server.requests) == 2 and result.error["code"] == "budget_exceeded"
    assert "agent step E0 budget of 2" in result.error["message"]

    chat_server.requests.clear()
    result, _ = await run(plan(agent_step(), budget={"inferences": 1}), config, tmp_path)
    assert len(chat_server.requests) == 1 and "run budget of 1" in result.error["message"]
    assert "the plan's `budget`" in result.error["message"]


async def test_a_per_agent_budget_from_flow_toml_is_fresh_for_each_agent_step(
    chat_server, tmp_path
):
    def script(request):
        if "second" in request["messages"][1]["content"]:
            return answer({"answer": "done"})
        if len(request["messages"]) < 4:
            return forever(request)
        return answer({"answer": "ok"})

    chat_server.script(script)
    config = setup(chat_server, tmp_path, "[budget.per_agent]\ninferences = 2\n")
    both = plan(agent_step("E0"), agent_step("E1", prompt="second"))
    result, _ = await run(both, config, tmp_path)
    assert result.status == "ok", result.error
    assert len(chat_server.requests) == 3  # E0: 2 calls, E1: 1 call: each under its own 2


async def test_a_token_budget_refuses_the_call_whose_prompt_alone_would_exceed_it(
    chat_server, tmp_path
):
    chat_server.script(forever)  # each call: 100 prompt + 20 completion tokens
    config = setup(chat_server, tmp_path, "[budget]\ntokens = 300\n")
    result, _ = await run(plan(agent_step()), config, tmp_path)
    # after 2 calls (240 tokens) the next needs ≥ 100 more prompt tokens: 340 > 300
    assert len(chat_server.requests) == 2
    assert result.error["code"] == "budget_exceeded" and "300 token(s)" in result.error["message"]
    assert result.usage["input_tokens"] + result.usage["output_tokens"] == 240


async def test_a_money_budget_is_checked_with_the_prices_of_flow_toml(chat_server, tmp_path):
    chat_server.script(forever)
    config = setup(chat_server, tmp_path, "[budget]\ncost = 0.0009\n")
    result, calls = await run(plan(agent_step()), config, tmp_path)
    # $0.0004 a call: after 2 ($0.0008), the next prompt alone ($0.0002) would pass $0.0009
    assert len(calls) == 2 and result.error["code"] == "budget_exceeded"
    assert result.usage["cost"] == 0.0008


def test_prices_from_the_table_for_a_known_provider_and_none_for_a_local_server():
    book = PriceBook()
    usage = {"input_tokens": 1_000_000, "output_tokens": 0}
    assert book.cost(usage, model="gpt-4o", base_url="https://api.openai.com/v1") > 0
    assert book.cost(usage, model="gpt-4o", base_url="http://127.0.0.1:8000/v1") is None
    assert book.cost(usage, model="no-such-model", base_url="https://api.openai.com/v1") is None


def test_cached_prompt_tokens_are_priced_at_the_cache_prices():
    price = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = {
        "input_tokens": 1_000_000 + 2_000_000 + 400_000,
        "cache_read_tokens": 2_000_000,
        "cache_write_tokens": 400_000,
        "output_tokens": 100_000,
    }
    assert price.cost(usage) == 3.0 + 0.6 + 1.5 + 1.5


async def test_a_bad_budget_in_a_plan_is_a_load_problem(tmp_path):
    import pytest

    from agentflow.errors import PlanLoadError

    with pytest.raises(PlanLoadError) as info:
        plan(agent_step(budget={"inferences": -1, "dollars": 2}))
    text = str(info.value)
    assert "`inferences` must be ≥ 0" in text and "unknown budget `dollars`" in text


@pytest.mark.parametrize("mode", ["skip", {"tolerate": "100%"}], ids=["skip", "tolerate"])
async def test_a_budget_is_not_skipped_by_a_map_that_skips_failed_items(
    chat_server, tmp_path, mode
):
    chat_server.script(forever)
    config = setup(chat_server, tmp_path, "[budget]\ninferences = 2\n")
    mapped = plan(
        {
            "id": "E0",
            "tool_name": "map",
            "input": {"over": [1, 2, 3], "on_item_error": mode, "do": agent_step("E1")},
        }
    )
    result, _ = await run(mapped, config, tmp_path)
    assert result.error["code"] == "budget_exceeded" and len(chat_server.requests) == 2
