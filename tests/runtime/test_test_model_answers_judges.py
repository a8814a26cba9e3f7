"""The test model answers a judge call (`where judge`, `verify { judge … }`) yes or no, chosen
by the seed, so flows with judges run under `--model test`, `flowc test` and `--explore`
(docs/models.md "The test model")."""

from __future__ import annotations

import asyncio

from agentflow.runtime.models.base import JUDGE_SYSTEM_PROMPT, ChatRequest, Message
from agentflow.runtime.models.test_model import TestModel


def _judge(seed: int, question: str = "Is this fine?") -> str | None:
    request = ChatRequest(
        messages=[
            Message(role="system", content=JUDGE_SYSTEM_PROMPT),
            Message(role="user", content=question),
        ]
    )
    return asyncio.run(TestModel(seed=seed).chat(request)).text


def test_a_judge_gets_yes_or_no_deterministically_and_both_across_seeds():
    answers = [_judge(seed) for seed in range(12)]
    assert set(answers) == {"yes", "no"}
    assert answers == [_judge(seed) for seed in range(12)]


def test_other_text_requests_still_get_text():
    request = ChatRequest(messages=[Message(role="user", content="Say something")])
    assert asyncio.run(TestModel(seed=0).chat(request)).text == "test answer"
