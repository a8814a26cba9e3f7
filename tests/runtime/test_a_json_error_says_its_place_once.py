"""Python ends some ``json.JSONDecodeError`` messages with the ``at`` its own ``str()``
completes with the place (``Invalid control character at``, ``Unterminated string starting
at``): every message agentflow builds from one says its place after its own words, once —
never ``… at at line 1 column 12`` (a model's answer), nor a dangling ``at`` (``--input``, a
JSON function, an agent's tool-call arguments).  core/text.py ``json_error``."""

from __future__ import annotations

import json

import pytest

from agentflow.api_run import parse_input
from agentflow.core.text import json_error
from agentflow.errors import InputError
from agentflow.runtime.extract import ExtractionError, extract_json

CONTROL = '{"a": "x\ty"}'  # a raw tab inside a string: "Invalid control character at"


def test_a_models_answer_with_a_control_character_says_at_once() -> None:
    with pytest.raises(ExtractionError) as caught:
        extract_json(CONTROL)
    assert str(caught.value) == "invalid JSON: Invalid control character at line 1 column 9"


def test_input_with_a_control_character_has_no_dangling_at() -> None:
    with pytest.raises(InputError) as caught:
        parse_input(CONTROL)
    assert str(caught.value).endswith("input is not valid JSON: Invalid control character")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (CONTROL, "Invalid control character"),
        ('{"a": "open', "Unterminated string"),
        ("{", "Expecting property name enclosed in double quotes"),
    ],
)
def test_every_decode_error_is_a_phrase_of_its_own(text: str, said: str) -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    assert json_error(caught.value) == said
