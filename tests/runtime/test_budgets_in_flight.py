"""Budgets hold a place for each model call in flight (docs/models.md "Budgets"): calls made at
once by a ``parallel map`` count against each other, so an ``inferences`` budget is exact
however many run together; a call that fails or is cancelled gives its place back."""

from __future__ import annotations

import asyncio

import pytest
from support.chat_server import TEST_API_KEY, answer

from agentflow import api
from agentflow.errors import RunError
from agentflow.runtime.config import load_config
from agentflow.runtime.models.base import ChatRequest, Message
from agentflow.runtime.models.budget import Budget, pop_budget, push_budget, reserve_budgets
from agentflow.runtime.models.router import ModelRouter

FLOW = """\
budget { inferences: 3 }
use agent "w" as w
type R { a: int }
stage s -> int[] {
  parallel map range(10) as i limit 10 {
    let r = agent(w) { task "give ${i}" tools none expect R }
    return r.a
  }
}
"""


def setup(server, tmp_path):
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "loc:m"\n'
        f'[providers.loc]\nkind = "openai"\nbase_url = "{server.url}"\napi_key_env = "K"\n'
        "max_retries = 0\n"
    )
    (tmp_path / "wide.flow").write_text(FLOW)
    return load_config(tmp_path / "flow.toml", env={"K": TEST_API_KEY})


async def test_an_inference_budget_is_exact_when_a_parallel_map_calls_models_at_once(
    chat_server, tmp_path
):
    # every reply waits, so every call the budget lets through is in flight at the same time
    chat_server.script(lambda request: answer({"a": 1}, delay=0.3))
    config = setup(chat_server, tmp_path)
    result = await api.run(tmp_path / "wide.flow", config=config, workspace=tmp_path)
    assert result.status == "error" and result.error["code"] == "budget_exceeded"
    # 3 calls went out at once; the other items waited for them (they might have failed and
    # given their places back), then were refused: exactly the calls a sequential map makes
    assert len(chat_server.requests) == 3  # not 10
    assert chat_server.max_in_flight == 3
    assert result.usage["inferences"] == 3
    assert "run budget of 3 inference(s)" in result.error["message"]
    assert "3 model call(s) made" in result.error["message"]


async def test_a_call_waits_for_the_calls_in_flight_and_takes_a_place_a_failed_one_gave_back():
    budget = Budget(name="run", source="test", inferences=1, tokens=100)
    token = push_budget(budget)
    try:
        first = await reserve_budgets(10, 0.0)
        assert budget.held == {"inferences": 1, "tokens": 10, "cost": 0.0}
        assert budget.refusal(0, 0.0) is not None  # the one place is held by the call in flight
        waiting = asyncio.ensure_future(reserve_budgets(10, 0.0))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # it would fit if the call in flight failed: it waits
        first.release()  # the call failed: nothing charged, the place is free again
        second = await asyncio.wait_for(waiting, 5)
        assert budget.held["inferences"] == 1 and budget.spent["inferences"] == 0
        third = asyncio.ensure_future(reserve_budgets(10, 0.0))
        await asyncio.sleep(0.05)
        second.settle(40, None)
        second.release()  # a second settle/release of one reservation does nothing
        assert budget.spent == {"inferences": 1, "tokens": 40, "cost": 0.0}
        assert budget.held == {"inferences": 0, "tokens": 0, "cost": 0.0}
        # the waiting call is checked again once the call in flight ended: the budget is spent
        with pytest.raises(RunError) as info:
            await asyncio.wait_for(third, 5)
        assert info.value.code == "budget_exceeded"
        assert "1 model call(s) made; the next one was not made" in str(info.value)
    finally:
        pop_budget(token)


async def test_a_cancelled_model_call_releases_its_budget_place(chat_server, tmp_path):
    chat_server.script(lambda request: answer({"a": 1}, delay=5.0))
    config = setup(chat_server, tmp_path)

    router = ModelRouter(config)
    budget = Budget(name="run", source="test", inferences=1)
    token = push_budget(budget)
    try:
        client = router.client_for("chat")
        task = asyncio.ensure_future(
            client.chat(ChatRequest(messages=[Message(role="user", content="hi")]))
        )
        for _ in range(200):
            if chat_server.requests:
                break
            await asyncio.sleep(0.01)
        assert budget.held["inferences"] == 1
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert budget.held["inferences"] == 0 and budget.spent["inferences"] == 0
    finally:
        pop_budget(token)
        await router.aclose()
