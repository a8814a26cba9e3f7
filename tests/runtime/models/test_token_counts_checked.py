"""A provider's token counts are checked (docs/models.md "Usage"): a count that is not a whole
number from 0 to a billion — ``1e300``, Infinity, NaN, a string, a negative number — is taken
as 0, the reply's usage is marked unknown (``usage_unknown`` on the ``model_call`` event and
counted in the run's usage) and a warning names the model and the values."""

from __future__ import annotations

import math

import pytest
from support.chat_server import TEST_API_KEY, Reply, completion

from agentflow import api
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.config import load_config
from agentflow.runtime.events import CallbackSink
from agentflow.runtime.models.base import MAX_TOKEN_COUNT, collect_bad_counts, token_count


@pytest.mark.parametrize(
    ("value", "count", "bad"),
    [
        (12, 12, False),
        (12.0, 12, False),
        (None, 0, False),
        (MAX_TOKEN_COUNT, MAX_TOKEN_COUNT, False),
        (MAX_TOKEN_COUNT + 1, 0, True),
        (1e300, 0, True),
        (math.inf, 0, True),
        (math.nan, 0, True),
        ("12", 0, True),
        (-3, 0, True),
        (2.5, 0, True),
        (True, 0, True),
    ],
)
def test_a_token_count_is_a_whole_number_up_to_a_billion(value, count, bad):
    with collect_bad_counts() as found:
        assert token_count(value) == count
    assert bool(found) is bad


def _reply(usage):
    body = completion('{"answer": "ok"}')
    body["usage"] = usage
    return Reply(body=body)


async def test_a_reply_with_counts_that_are_not_counts_has_unknown_usage_and_a_warning(
    chat_server, tmp_path
):
    chat_server.script(
        [
            _reply({"prompt_tokens": 10, "completion_tokens": 1e300}),
            _reply({"prompt_tokens": "12", "completion_tokens": math.inf}),
            _reply({"prompt_tokens": 7, "completion_tokens": 3}),
        ]
    )
    (tmp_path / "flow.toml").write_text(
        '[models]\ndefault = "loc:m"\n'
        f'[providers.loc]\nkind = "openai"\nbase_url = "{chat_server.url}"\n'
        'api_key_env = "K"\nmax_retries = 0\n'
    )
    config = load_config(tmp_path / "flow.toml", env={"K": TEST_API_KEY})
    contract = {
        "type": "object",
        "required": ["answer"],
        "properties": {"answer": {"type": "string"}},
    }
    step = {
        "tool_name": "agent",
        "input": {"prompt": "Hi.", "output_schema": contract, "tools": "none"},
    }
    plan = load_plan_data(
        {
            "version": 1,
            "name": "counts",
            "budget": {"tokens": 1000},
            "steps": [{"id": f"E{i}", **step} for i in range(3)],
        },
        "counts.plan.yaml",
    )
    events = []
    sink = CallbackSink(events.append)
    result = await api.run(plan, config=config, workspace=tmp_path, sinks=[sink])
    assert result.status == "ok", result.error
    calls = [e.data for e in events if e.kind == "model_call"]
    assert [c.get("usage_unknown", False) for c in calls] == [True, True, False]
    assert [(c["input_tokens"], c["output_tokens"]) for c in calls] == [(10, 0), (0, 0), (7, 3)]
    usage = result.usage
    assert (usage["inferences"], usage["input_tokens"], usage["output_tokens"]) == (3, 17, 3)
    assert usage["usage_unknown"] == 2 and usage["by_role"]["chat"]["usage_unknown"] == 2
    assert (
        usage["by_step"]["E0"]["usage_unknown"] == 1
        and "usage_unknown" not in usage["by_step"]["E2"]
    )
    warnings = [e.data["message"] for e in events if e.kind == "warning"]
    assert warnings == [
        "model loc:m reported token counts that are not counts (1e+300): this call's usage is "
        "unknown and counted as 0 tokens (in usage, cost and budgets)",
        "model loc:m reported token counts that are not counts ('12', inf): this call's usage "
        "is unknown and counted as 0 tokens (in usage, cost and budgets)",
    ]
    assert all(len(str(v)) < 20 for v in usage.values() if not isinstance(v, dict))
