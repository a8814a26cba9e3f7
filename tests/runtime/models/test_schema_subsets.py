"""Structured output that fits each provider (docs/models.md "Structured output per provider"):
for generated `.flow` types, the schema sent to each provider is accepted by that provider's
documented subset (encoded as data in agentflow.runtime.models.schema_subsets), no constraint
is lost (each is still a keyword or is told in a description), and the contract itself — which
the answer is validated against — is left whole. An agent whose type uses @length / @range on
Anthropic sends no request the (subset-enforcing) loopback server refuses."""

from __future__ import annotations

import copy
import json

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.chat_server import TEST_API_KEY, anthropic_text

from agentflow.compiler.api import check_source
from agentflow.compiler.contracts import agent_contract, contract_for
from agentflow.compiler.types import NamedRef
from agentflow.runtime.agent import AgentSpec, run_agent
from agentflow.runtime.config import load_config
from agentflow.runtime.models.http import RetryPolicy
from agentflow.runtime.models.openai import strict_schema
from agentflow.runtime.models.router import ModelRouter
from agentflow.runtime.models.schema_subsets import (
    SUBSETS,
    fit_schema,
    moved_text,
    subset_problems,
)

CONSTRAINTS = (
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "format",
)

# ------------------------------------------------------------------ generated .flow types

_bound = st.one_of(st.none(), st.integers(0, 9))


def _pair(draw_lo: int | None, draw_hi: int | None) -> str:
    lo, hi = draw_lo, draw_hi
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    if lo is None and hi is None:
        hi = 5
    return f"{'null' if lo is None else lo}, {'null' if hi is None else hi}"


@st.composite
def field_type(draw, depth: int = 0) -> str:
    """A field's type with its constraints, as `.flow` text."""
    kind = draw(
        st.sampled_from(
            ["text", "int", "number", "bool", "list", "map", "enum", "obj", "path", "duration"]
            if depth < 2
            else ["text", "int", "number", "bool", "enum"]
        )
    )
    if kind == "text":
        out = "text"
        extra = draw(st.sampled_from(["", "length", "pattern", "format", "length+pattern"]))
        if "length" in extra:
            out += f" @length({_pair(draw(_bound), draw(_bound))})"
        if "pattern" in extra:
            out += (
                ' @pattern("' + draw(st.sampled_from(["^[a-z]+$", "\\\\bword", "^v\\\\d"])) + '")'
            )
        if extra == "format":
            fmt = draw(st.sampled_from(["date", "uri", "email", "uuid", "regex", "date-time"]))
            out += f' @format("{fmt}")'
    elif kind in ("int", "number"):
        out = kind
        if draw(st.booleans()):
            out += f" @range({_pair(draw(_bound), draw(_bound))})"
    elif kind == "bool":
        out = "bool"
    elif kind == "list":
        out = f"({draw(field_type(depth + 1)).split(' @')[0]})[]"
        if draw(st.booleans()):
            out += f" @length({_pair(draw(_bound), draw(_bound))})"
    elif kind == "map":
        out = f"map<{draw(st.sampled_from(['int', 'text']))}>"
    elif kind == "enum":
        out = draw(st.sampled_from(['"low" | "high"', '"a" | "b" | "c"']))
    elif kind == "obj":
        out = "Inner"
    else:
        out = kind
    if draw(st.integers(0, 4)) == 0:
        base, _, rest = out.partition(" @")
        out = f"{base}?" + (f" @{rest}" if rest else "")
    return out


@st.composite
def flow_type(draw) -> str:
    count = draw(st.integers(1, 5))
    fields = [f"  f{i}: {draw(field_type())}" for i in range(count)]
    return (
        "type Inner {\n  name: text @length(1, 20)\n  score: int @range(0, 10)\n}\n"
        "type T {\n" + "\n".join(fields) + "\n}\nstage s -> int { return 1 }\n"
    )


def contract_of(source: str) -> dict:
    result = check_source(source, "t.flow")
    assert result.ok, (source, [d.message for d in result.diagnostics])
    return contract_for(NamedRef("T"), result.env)


def _constraints(node, found: set) -> set:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CONSTRAINTS and not isinstance(value, dict):
                found.add((key, json.dumps(value, ensure_ascii=False, separators=(",", ":"))))
            if key in ("properties", "$defs"):
                for sub in value.values():
                    _constraints(sub, found)
            else:
                _constraints(value, found)
    elif isinstance(node, list):
        for item in node:
            _constraints(item, found)
    return found


def _kept_or_told(fitted: dict, key: str, value: str) -> bool:
    text = json.dumps(fitted, ensure_ascii=False, separators=(",", ":"))
    told = moved_text({key: json.loads(value)})[1:-1]
    return f'"{key}":{value}' in text or told in text.replace('\\"', '"').replace("\\\\", "\\")


def _sent(provider: str, contract: dict) -> dict | None:
    """What the provider's adapter sends as its native schema."""
    if provider == "openai":
        return strict_schema(contract)
    return fit_schema(contract, provider)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(flow_type())
def test_each_provider_accepts_the_schema_sent_for_a_generated_type_and_nothing_is_lost(source):
    contract = contract_of(source)
    before = copy.deepcopy(contract)
    constraints = _constraints(contract, set())
    for provider in ("openai", "anthropic", "gemini"):
        sent = _sent(provider, contract)
        assert contract == before  # the contract the answer is validated against is whole
        if sent is None:  # not expressible (a map on a closed-object provider): prompt text
            assert provider != "gemini"
            assert "map<" in source
            continue
        assert subset_problems(sent, provider) == [], (provider, source, sent)
        for key, value in constraints:
            if provider == "openai" and key == "format":
                continue  # strict mode: an unknown format is dropped (the contract checks it)
            assert _kept_or_told(sent, key, value), (provider, key, value, sent)


def test_the_subsets_are_written_as_the_providers_document_them():
    anthropic, gemini, openai = SUBSETS["anthropic"], SUBSETS["gemini"], SUBSETS["openai"]
    for refused in ("minLength", "maxLength", "minimum", "maximum", "maxItems", "multipleOf"):
        assert refused not in anthropic.keywords
    assert anthropic.max_min_items == 1 and anthropic.closed_objects and not anthropic.recursion
    for kept in ("minItems", "maxItems", "minimum", "maximum", "propertyOrdering", "$ref"):
        assert kept in gemini.keywords
    assert "minLength" not in gemini.keywords and "pattern" not in gemini.keywords
    assert not gemini.ref_siblings and "boolean" not in gemini.enum_kinds
    assert openai.all_required and openai.recursion and "minLength" not in openai.keywords


def test_a_moved_constraint_is_told_in_the_description_and_still_checked_locally():
    contract = contract_of(
        "type T {\n  title: text @length(1, 8)\n  n: int @range(1, 5)\n}\n"
        "stage s -> int { return 1 }\n"
    )
    sent = fit_schema(contract, "anthropic")
    assert sent is not None
    assert sent["properties"]["title"] == {
        "type": "string",
        "description": "(minLength: 1, maxLength: 8)",
    }
    assert sent["properties"]["n"]["description"] == "(minimum: 1, maximum: 5)"
    too_long = {"title": "much too long", "n": 3}
    jsonschema.validate(too_long, sent)  # the provider would not stop it …
    errors = list(jsonschema.Draft202012Validator(contract).iter_errors(too_long))
    assert errors  # … the contract does


# ------------------------------------------------------------------ the acceptance figure

FLOW = """\
type Summary {
  title: text @length(1, 60)
  points: text[] @length(2, 4)
  confidence: number @range(0, 1)
  rating: int @range(1, 5)
}
stage s -> int { return 1 }
"""


async def test_an_agent_with_length_and_range_on_anthropic_sends_no_refused_request(
    chat_server, tmp_path
):
    result = check_source(FLOW, "s.flow")
    contract, _ = agent_contract(NamedRef("Summary"), result.env)
    # what was sent before: the OpenAI strict copy, which Anthropic refuses
    assert subset_problems(strict_schema(contract), "anthropic")
    chat_server.schema_subset = "anthropic"
    too_long = {"title": "x" * 61, "points": ["a", "b"], "confidence": 0.5, "rating": 3}
    good = {"title": "Fine", "points": ["a", "b"], "confidence": 0.5, "rating": 3}
    chat_server.script([anthropic_text(json.dumps(too_long)), anthropic_text(json.dumps(good))])
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "m"\n[models.named.m]\nprovider = "p"\nmodel = "claude-sonnet-4-5"\n'
        "structured_output = true\n"
        f'[providers.p]\nkind = "anthropic"\nbase_url = "{chat_server.url}"\napi_key_env = "K"\n'
    )
    config = load_config(tmp_path / "flow.toml", env={"K": TEST_API_KEY})
    router = ModelRouter(config, retry=RetryPolicy(max_retries=1, base=0.001, cap=0.002))
    warnings: list = []

    async def no_tools(name, args, path):  # pragma: no cover - the agent has no tools
        return None

    try:
        outcome = await run_agent(
            AgentSpec(prompt="Summarise.", output_schema=contract),
            router=router,
            call_tool=no_tools,
            emit=lambda kind, path, **data: warnings.append((kind, data)),
            step_path="E0",
        )
    finally:
        await router.aclose()
    assert chat_server.refused == []  # 0 refused requests
    assert outcome["output"] == good  # the over-long title was refused locally, then fixed
    assert len(chat_server.requests) == 2
    for request in chat_server.requests:
        sent = request["output_config"]["format"]["schema"]  # native mode kept throughout
        assert subset_problems(sent, "anthropic") == [] and '"maxLength":' not in json.dumps(sent)
        assert "(minLength: 1, maxLength: 60)" in sent["properties"]["title"]["description"]
    assert not [w for w in warnings if w[0] == "warning" and "refused" in str(w[1])]
