"""`kind = "azure-openai"` / `"azure-openai-responses"` (docs/models.md "Azure OpenAI") against
real recorded Azure OpenAI replies served by the loopback server:

- tests/runtime/recorded/azure_openai/deployment_chat_completion.json — a chat completion from
  a real deployment URL (`/openai/deployments/gpt-4o/chat/completions?api-version=2024-12-01-
  preview`) with `prompt_filter_results` and `content_filter_results`: pydantic/pydantic-ai
  `tests/providers/cassettes/test_azure/test_azure_provider_call.yaml` at commit
  4fda38988f2939fa6ea9cdefcf120693e10ef491 (MIT);
- …/stream_with_prompt_filter_results.json — a streamed reply whose first chunk has no choices,
  only `prompt_filter_results` ("generated from a true API call to Azure OpenAI"):
  quarkiverse/quarkus-langchain4j `…/azure/openai/test/AzureOpenAiStreamingChatModelTest.java`
  at commit 79f181c63045d6ecb2a538e67887208b400eba16 (Apache-2.0);
- …/deployment_not_found_404.json — Azure's 404 `DeploymentNotFound` body, as logged in
  kongebra/semantic-kernel-inmeta-demo `SemanticKernelDemo/FEEDBACK.md`;
- tests/runtime/recorded/azure_content_filter_400.json — Azure's 400 `content_filter` body with
  its `innererror` (Mirascope/mirascope, see that directory's README);
- tests/runtime/recorded/openai_responses/test_azure_responses_*.json — real Azure `/openai/v1/
  responses` replies with `content_filters` (pydantic-ai, MIT).

Where a case needs a reply no recording holds (a filtered answer), the real reply is changed in
the one field the case is about, and the test says so.
"""

from __future__ import annotations

import copy
import json

import pytest
from support.chat_server import TEST_API_KEY, Reply, answer, recorded_sse, status, tool_calls
from support.recorded import RECORDED

from agentflow.core.redaction import redact
from agentflow.errors import ConfigError, ModelError
from agentflow.runtime.agent import AgentSpec, run_agent
from agentflow.runtime.config import load_config, missing_key_message
from agentflow.runtime.models.base import ChatRequest, Message, ToolSpec
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.http import redact as redact_message
from agentflow.runtime.models.router import ModelRouter

FAST = RetryPolicy(max_retries=2, base=0.001, cap=0.002)
AZURE = RECORDED / "azure_openai"
TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra-token-for-tests"


def _exchange(name: str) -> dict:
    return json.loads((AZURE / f"{name}.json").read_text(encoding="utf-8"))["exchanges"][0]


def _router(server, tmp_path, table: str, env=None, model: str = "gpt-4o", named: str = ""):
    endpoint = server.url.removesuffix("/v1")
    (tmp_path / "flow.toml").write_text(
        f'[models]\ndefault = "m"\n[models.named.m]\nprovider = "az"\nmodel = "{model}"\n'
        f"{named}"
        f'[providers.az]\nbase_url = "{endpoint}"\n{table}'
    )
    config = load_config(tmp_path / "flow.toml", env=env or {"AZ_KEY": TEST_API_KEY})
    return ModelRouter(config, retry=FAST)


async def _ask(router, text: str = "What is the capital of France?"):
    try:
        return await router.client_for("m").chat(ChatRequest([Message("user", text)]))
    finally:
        await router.aclose()


KEYED = 'kind = "azure-openai"\napi_key_env = "AZ_KEY"\n'


async def test_the_recorded_deployment_reply_is_read_through_the_deployment_url(
    chat_server, tmp_path
):
    recorded = _exchange("deployment_chat_completion")
    chat_server.script([Reply(body=recorded["response"])])
    table = KEYED + 'azure_api = "deployments"\napi_version = "2024-12-01-preview"\n'
    reply = await _ask(_router(chat_server, tmp_path, table))
    assert reply.text == "The capital of France is **Paris**."
    assert reply.usage["input_tokens"] == 14 and reply.usage["output_tokens"] == 9
    # the recorded request's URL, path and query, on the loopback endpoint
    assert chat_server.paths == [recorded["uri"].split("azure.com", 1)[1]]
    headers = chat_server.headers[0]
    assert headers["api-key"] == TEST_API_KEY and "Authorization" not in headers


def test_an_api_key_header_in_any_text_is_redacted():
    # an exception's repr of the request headers, with a key not registered as a secret
    text = "headers {'api-key': 'k3y-value-not-registered', 'x-api-key': 'other-value'}"
    assert redact_message(text, None) == "headers {'api-key': '***', 'x-api-key': '***'}"


async def test_the_v1_api_is_the_default_with_the_deployment_as_the_model(chat_server, tmp_path):
    chat_server.script([Reply(body=_exchange("deployment_chat_completion")["response"])])
    reply = await _ask(_router(chat_server, tmp_path, KEYED, model="my-gpt4o"))
    assert reply.text.endswith("**Paris**.")
    assert chat_server.paths == ["/openai/v1/chat/completions"]
    assert chat_server.requests[0]["model"] == "my-gpt4o"


async def test_a_pasted_v1_url_and_a_preview_api_version(chat_server, tmp_path):
    chat_server.script([Reply(body=_exchange("deployment_chat_completion")["response"])])
    endpoint = chat_server.url.removesuffix("/v1") + "/openai/v1/"
    table = 'kind = "azure-openai"\napi_key_env = "AZ_KEY"\napi_version = "preview"\n'
    (tmp_path / "flow.toml").write_text(
        f'[models]\ndefault = "az:d"\n[providers.az]\nbase_url = "{endpoint}"\n{table}'
    )
    router = ModelRouter(load_config(tmp_path / "flow.toml", env={"AZ_KEY": TEST_API_KEY}))
    try:
        await router.client_for("chat").chat(ChatRequest([Message("user", "hi")]))
    finally:
        await router.aclose()
    assert chat_server.paths == ["/openai/v1/chat/completions?api-version=preview"]


async def test_an_agent_runs_a_tool_round_through_azure(chat_server, tmp_path):
    chat_server.script([tool_calls(("look_up", {"q": "France"})), answer({"city": "Paris"})])
    router = _router(chat_server, tmp_path, KEYED + 'azure_api = "deployments"\n')
    contract = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tool = ToolSpec("look_up", "Look it up.", {"type": "object", "properties": {}})

    async def call_tool(name, args, path):
        return {"found": "Paris"}

    spec = AgentSpec(prompt="Capital of France?", output_schema=contract, tools=[tool])
    try:
        outcome = await run_agent(
            spec, router=router, call_tool=call_tool, emit=None, step_path="E0"
        )
    finally:
        await router.aclose()
    assert outcome["output"] == {"city": "Paris"}
    url = "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
    assert chat_server.paths == [url] * 2
    assert [h["api-key"] for h in chat_server.headers] == [TEST_API_KEY] * 2
    assert chat_server.requests[1]["messages"][-1]["role"] == "tool"


async def test_the_classic_url_has_a_default_api_version(chat_server, tmp_path):
    chat_server.script([Reply(body=_exchange("deployment_chat_completion")["response"])])
    await _ask(_router(chat_server, tmp_path, KEYED + 'azure_api = "deployments"\n', model="d 1"))
    assert chat_server.paths == [
        "/openai/deployments/d%201/chat/completions?api-version=2024-10-21"
    ]


async def test_the_recorded_stream_with_a_choiceless_filter_chunk_is_read(chat_server, tmp_path):
    chat_server.script([recorded_sse(_exchange("stream_with_prompt_filter_results")["sse"])])
    reply = await _ask(_router(chat_server, tmp_path, KEYED, named="stream = true\n"))
    assert reply.text == "Hallo Welt!" and reply.finish_reason == "stop"
    assert chat_server.requests[0]["stream"] is True


async def test_an_entra_id_token_is_sent_as_a_bearer_and_never_shown(chat_server, tmp_path):
    chat_server.script([status(401, {"error": {"code": "401", "message": f"bad {TOKEN}"}})])
    table = 'kind = "azure-openai"\nentra_token_env = "AZ_TOKEN"\n'
    router = _router(chat_server, tmp_path, table, env={"AZ_TOKEN": TOKEN})
    with pytest.raises(ModelError) as info:
        await _ask(router)
    assert chat_server.headers[0]["Authorization"] == f"Bearer {TOKEN}"
    assert "api-key" not in chat_server.headers[0]
    assert TOKEN not in str(info.value) and TOKEN not in redact(f"x {TOKEN} y")


async def test_a_filtered_answer_is_a_content_filter_error_naming_the_categories(
    chat_server, tmp_path
):
    # the recorded reply with Azure's verdict on its answer changed to "filtered" (no recording
    # of a filtered answer is at hand): finish_reason content_filter, violence filtered
    body = copy.deepcopy(_exchange("deployment_chat_completion")["response"])
    choice = body["choices"][0]
    choice["finish_reason"] = "content_filter"
    choice["content_filter_results"]["violence"] = {"filtered": True, "severity": "medium"}
    chat_server.script([Reply(body=body)])
    with pytest.raises(ModelError) as info:
        await _ask(_router(chat_server, tmp_path, KEYED))
    assert info.value.kind == "content_filter" and len(chat_server.requests) == 1
    assert "the answer was filtered: violence (medium)" in str(info.value)


async def test_a_filtered_stream_is_a_content_filter_error_naming_the_categories(
    chat_server, tmp_path
):
    # the recorded stream with its last text piece's verdict changed to filtered and its end
    # to finish_reason content_filter, as Azure ends a filtered streamed answer
    sse = _exchange("stream_with_prompt_filter_results")["sse"]
    verdict = '"violence":{"filtered":false,"severity":"safe"}},"delta":{"content":"!"}'
    assert sse.count(verdict) == 1 and sse.count('"finish_reason":"stop"') == 1
    sse = sse.replace(verdict, verdict.replace('false,"severity":"safe"', 'true,"severity":"high"'))
    sse = sse.replace('"finish_reason":"stop"', '"finish_reason":"content_filter"')
    chat_server.script([recorded_sse(sse)])
    with pytest.raises(ModelError) as info:
        await _ask(_router(chat_server, tmp_path, KEYED, named="stream = true\n"))
    assert info.value.kind == "content_filter" and len(chat_server.requests) == 1
    assert "the answer was filtered: violence (high)" in str(info.value)


async def test_a_404_without_a_deployment_names_the_endpoint_and_url_shape(chat_server, tmp_path):
    # Azure's body for a path its endpoint does not serve (scripted: no recording at hand)
    chat_server.script([status(404, {"error": {"code": "404", "message": "Resource not found"}})])
    with pytest.raises(ModelError) as info:
        await _ask(_router(chat_server, tmp_path, KEYED))
    assert info.value.kind == "permanent" and 'serves azure_api = "v1"' in str(info.value)


async def test_the_recorded_400_content_filter_names_the_filtered_category(chat_server, tmp_path):
    body = json.loads((RECORDED / "azure_content_filter_400.json").read_text(encoding="utf-8"))
    chat_server.script([status(400, body)])
    with pytest.raises(ModelError) as info:
        await _ask(_router(chat_server, tmp_path, KEYED))
    assert info.value.kind == "content_filter" and len(chat_server.requests) == 1
    assert "filtered: self_harm (medium)" in str(info.value)


async def test_the_recorded_deployment_not_found_names_the_deployment(chat_server, tmp_path):
    chat_server.script([status(404, _exchange("deployment_not_found_404")["response"])])
    with pytest.raises(ModelError) as info:
        await _ask(_router(chat_server, tmp_path, KEYED, model="gpt4o-prod"))
    message = str(info.value)
    assert info.value.kind == "permanent" and len(chat_server.requests) == 1
    assert "no deployment 'gpt4o-prod'" in message and "DeploymentNotFound" in message
    assert "deployment's name" in message


@pytest.mark.parametrize(
    ("headers", "wait"), [({"retry-after-ms": "40"}, 0.04), ({"Retry-After": "0.05"}, 0.05)]
)
async def test_a_429_waits_as_retry_after_ms_or_retry_after_says(
    chat_server, tmp_path, headers, wait
):
    chat_server.script(
        [
            status(429, {"error": {"code": "429", "message": "Rate limit is exceeded."}}, headers),
            Reply(body=_exchange("deployment_chat_completion")["response"]),
        ]
    )
    waits: list[float] = []
    router = _router(chat_server, tmp_path, KEYED)
    router.on_event = lambda kind, data: waits.append(data["delay_s"]) if kind == "retry" else None
    reply = await _ask(router)
    assert reply.text and waits == [wait]


async def test_the_recorded_azure_responses_reply_is_read_through_the_v1_responses_url(
    chat_server, tmp_path
):
    path = RECORDED / "openai_responses"
    name = "test_azure_responses_reasoning_context_default_wire_contract_gpt-5.4.json"
    (recorded,) = json.loads((path / name).read_text(encoding="utf-8"))["exchanges"]
    blocked = copy.deepcopy(recorded["response"])
    # the same reply with its completion's verdict changed to blocked (no recording at hand)
    blocked["content_filters"][1]["blocked"] = True
    blocked["content_filters"][1]["content_filter_results"]["violence"]["filtered"] = True
    chat_server.script([Reply(body=recorded["response"]), Reply(body=blocked)])
    table = 'kind = "azure-openai-responses"\napi_key_env = "AZ_KEY"\n'
    router = _router(chat_server, tmp_path, table, model="gpt-5.4")
    client = router.client_for("m")
    try:
        reply = await client.chat(ChatRequest([Message("user", "Capital of France?")]))
        with pytest.raises(ModelError) as info:
            await client.chat(ChatRequest([Message("user", "Capital of France?")]))
    finally:
        await router.aclose()
    assert reply.text == "Paris" and chat_server.paths == ["/openai/v1/responses"] * 2
    assert chat_server.headers[0]["api-key"] == TEST_API_KEY
    assert info.value.kind == "content_filter" and "completion was blocked" in str(info.value)


def _load(tmp_path, table: str, env: dict | None = None):
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "m"\n[models.named.m]\nprovider = "p"\nmodel = "x"\n'
        f"[providers.p]\n{table}"
    )
    return load_config(tmp_path / "flow.toml", env=env or {})


@pytest.mark.parametrize(
    ("table", "line", "expected"),
    [
        ('kind = "azure-openai"\napi_verison = "v"\n', 8, "did you mean 'api_version'?"),
        ('kind = "openai"\napi_version = "2024-10-21"\n', 8, "`api_version` applies to kind"),
        ('kind = "azure-openai"\nregion = "us-east-1"\n', 8, "`region` applies to kind bedrock"),
        (
            'kind = "azure-openai-responses"\nazure_api = "deployments"\n',
            8,
            "served by the v1 API only",
        ),
        (
            'kind = "azure-openai"\napi_key_env = "A"\nentra_token_env = "B"\n',
            9,
            "give one credential",
        ),
        ('kind = "azure-openai"\nazure_api = "classic"\n', 8, '"v1" or "deployments"'),
    ],
)
def test_azure_keys_are_checked_at_their_line(tmp_path, table, line, expected):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, table)
    assert f"flow.toml:{line}:" in str(info.value) and expected in str(info.value)


def test_a_deployment_named_as_its_model_is_priced_by_the_azure_endpoint(tmp_path):
    config = _load(tmp_path, 'kind = "azure-openai"\nbase_url = "https://r.openai.azure.com"\n')
    router = ModelRouter(config)
    (resolved,) = config.resolve("p:gpt-4o")
    usage = {"input_tokens": 1_000_000, "output_tokens": 0}
    assert router.price(resolved, usage) == pytest.approx(2.5)  # genai-prices' Azure table
    (renamed,) = config.resolve("p:gpt-4o-prod")
    assert router.price(renamed, usage) is None


def test_the_endpoint_comes_from_azure_openai_endpoint(tmp_path):
    config = _load(
        tmp_path,
        'kind = "azure-openai"\n',
        env={"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com/"},
    )
    assert config.providers["p"].base_url == "https://r.openai.azure.com/"
    without = _load(tmp_path, 'kind = "azure-openai"\n')
    assert missing_key_message(without) == (  # the run stops before its first step
        "provider 'p': no endpoint for kind azure-openai: set base_url in [providers.p] to your "
        "resource's (https://RESOURCE.openai.azure.com), or AZURE_OPENAI_ENDPOINT"
    )
    with pytest.raises(ConfigError, match="has no endpoint"):
        ModelRouter(without).client_for("m")
