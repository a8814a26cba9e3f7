"""The provider kinds `openai-responses` and `gemini` from flow.toml (docs/models.md "Provider
kinds"): an agent with a tool round through each over the loopback server, their calls priced
from genai-prices by the provider's URL (cache reads at the cache price), and a recorded run of
each replayed from its cassette with the reasoning state it carried."""

from __future__ import annotations

import json

import pytest
from support.chat_server import TEST_API_KEY, gemini_reply, responses_reply

from agentflow.runtime.agent import AgentSpec, run_agent
from agentflow.runtime.config import ResolvedModel, load_config
from agentflow.runtime.models.base import ToolSpec
from agentflow.runtime.models.cassette import ReplayRouter, recording_router
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.router import ModelRouter

FAST = RetryPolicy(max_retries=1, base=0.001, cap=0.002)
CONTRACT = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
LOOK = ToolSpec(
    "look_up", "Look it up.", {"type": "object", "properties": {"q": {"type": "string"}}}
)


def config_for(server, tmp_path, kind: str):
    base = server.url if kind == "openai-responses" else server.url.removesuffix("/v1")
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "m"\n[models.named.m]\nprovider = "p"\nmodel = "gpt-5"\n'
        f'[providers.p]\nkind = "{kind}"\nbase_url = "{base}"\napi_key_env = "K"\n'
    )
    return load_config(tmp_path / "flow.toml", env={"K": TEST_API_KEY})


async def run(router):
    async def call_tool(name, args, path):
        return {"found": "Paris"}

    return await run_agent(
        AgentSpec(prompt="Capital of France?", output_schema=CONTRACT, tools=[LOOK]),
        router=router,
        call_tool=call_tool,
        emit=None,
        step_path="E0",
    )


SCRIPTS = {
    "openai-responses": lambda: [
        responses_reply(None, ("look_up", {"q": "France"}), reasoning="gAAAA-secret-state"),
        responses_reply('{"city": "Paris"}', usage=(40, 6, 32)),
    ],
    "gemini": lambda: [
        gemini_reply(None, ("look_up", {"q": "France"}), signature="c2lnbmF0dXJl"),
        gemini_reply('{"city": "Paris"}', usage=(40, 6, 32)),
    ],
}
PATHS = {"openai-responses": "/v1/responses", "gemini": "/v1beta/models/gpt-5:generateContent"}


@pytest.mark.parametrize("kind", ["openai-responses", "gemini"])
async def test_an_agent_runs_a_tool_round_through_the_kind_and_its_state_goes_back(
    chat_server, tmp_path, kind
):
    chat_server.script(SCRIPTS[kind]())
    router = ModelRouter(config_for(chat_server, tmp_path, kind), retry=FAST)
    try:
        outcome = await run(router)
    finally:
        await router.aclose()
    assert outcome["output"] == {"city": "Paris"}
    assert chat_server.paths == [PATHS[kind]] * 2
    follow_up = json.dumps(chat_server.requests[1])
    state = "gAAAA-secret-state" if kind == "openai-responses" else "c2lnbmF0dXJl"
    assert state in follow_up  # the reasoning state went back with the tool round
    usage = router.usage
    assert usage["inferences"] == 2 and usage["cache_read_tokens"] == 32


@pytest.mark.parametrize(
    ("kind", "url", "model"),
    [
        ("openai-responses", "https://api.openai.com/v1", "gpt-5"),
        ("gemini", "https://generativelanguage.googleapis.com", "gemini-2.5-flash"),
    ],
)
def test_calls_of_the_new_kinds_are_priced_with_cache_reads_cheaper(tmp_path, kind, url, model):
    (tmp_path / "flow.toml").write_text(f'[providers.p]\nkind = "{kind}"\nbase_url = "{url}"\n')
    config = load_config(tmp_path / "flow.toml", env={})
    router = ModelRouter(config)
    resolved = ResolvedModel(
        label=f"p:{model}", provider_name="p", provider=config.providers["p"], model=model
    )
    plain = router.price(resolved, {"input_tokens": 10_000, "output_tokens": 100})
    cached = router.price(
        resolved, {"input_tokens": 10_000, "output_tokens": 100, "cache_read_tokens": 8_000}
    )
    assert plain is not None and cached is not None and 0 < cached < plain
    assert router.input_price(resolved) > 0  # budgets check money before each call


@pytest.mark.parametrize("kind", ["openai-responses", "gemini"])
async def test_a_recorded_run_of_the_kind_replays_with_its_reasoning_state(
    chat_server, tmp_path, kind
):
    chat_server.script(SCRIPTS[kind]())
    cassette = tmp_path / "run.jsonl"
    router = recording_router(config_for(chat_server, tmp_path, kind), cassette, retry=FAST)
    try:
        recorded = await run(router)
    finally:
        await router.aclose()
    replay = ReplayRouter(cassette)
    try:
        replayed = await run(replay)
    finally:
        await replay.aclose()
    assert replayed["output"] == recorded["output"] == {"city": "Paris"}
    assert len(chat_server.requests) == 2  # the replay asked no provider
    first = json.loads(cassette.read_text().splitlines()[0])
    assert first["response"]["raw"]  # the reasoning state is in the cassette
