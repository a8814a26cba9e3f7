"""Budgets hold a place for each model call in flight (docs/models.md "Budgets"): calls made at
once by a ``parallel map`` count against each other, so an ``inferences`` budget is exact
however many run together; a call that fails or is cancelled gives its place back."""

from __future__ import annotations

import asyncio

from support.chat_server import TEST_API_KEY, answer

from agentflow import api
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
    # the 4th item found 3 calls in flight and was refused; the map then stopped the 3 (a map
    # ends at its first failed item), so at most 3 requests ever reached the server (10 before)
    assert "3 in flight" in result.error["message"]
    assert "run budget of 3 inference(s)" in result.error["message"]
    assert len(chat_server.requests) <= 3 and chat_server.max_in_flight <= 3
    assert result.usage["inferences"] <= 3


async def test_a_call_that_fails_or_is_cancelled_gives_its_place_back():
    budget = Budget(name="run", source="test", inferences=1, tokens=100)
    token = push_budget(budget)
    try:
        first = reserve_budgets(10, 0.0)
        assert budget.held == {"inferences": 1, "tokens": 10, "cost": 0.0}
        assert budget.refusal(0, 0.0) is not None  # the one place is held by the call in flight
        first.release()  # the call failed: nothing charged, the place is free again
        assert budget.held["inferences"] == 0 and budget.spent["inferences"] == 0
        second = reserve_budgets(10, 0.0)
        second.settle(40, None)
        second.release()  # a second settle/release of one reservation does nothing
        assert budget.spent == {"inferences": 1, "tokens": 40, "cost": 0.0}
        assert budget.held == {"inferences": 0, "tokens": 0, "cost": 0.0}
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
