"""`@length(min, max)` bounds what the field holds: characters of a text, items of an array,
keys of a map — the contract says so with the JSON Schema keyword that applies to each, so an
answer outside the bounds is refused."""

from __future__ import annotations

import jsonschema
import pytest

from agentflow.compiler.api import check_source
from agentflow.compiler.contracts import contract_for
from agentflow.compiler.types import NamedRef

SRC = """\
type T {
  name: text @length(1, 3)
  tags: text[] @length(1, 3)
  scores: map<int> @length(1, 3)
  maybe: map<int>? @length(1, 3)
}
stage s -> int { return 1 }
"""


@pytest.fixture(scope="module")
def schema():
    result = check_source(SRC, "t.flow")
    assert result.ok, result.diagnostics
    return contract_for(NamedRef("T"), result.env)


def test_each_kind_gets_its_own_length_keywords(schema):
    props = schema["properties"]
    assert (props["name"]["minLength"], props["name"]["maxLength"]) == (1, 3)
    assert (props["tags"]["minItems"], props["tags"]["maxItems"]) == (1, 3)
    assert (props["scores"]["minProperties"], props["scores"]["maxProperties"]) == (1, 3)
    assert props["maybe"]["anyOf"][0]["minProperties"] == 1
    assert "minLength" not in props["scores"]


@pytest.mark.parametrize(
    "scores, valid", [({}, False), ({"a": 1}, True), (dict.fromkeys("abcd", 1), False)]
)
def test_a_map_outside_its_length_bounds_is_refused(schema, scores, valid):
    answer = {"name": "ok", "tags": ["a"], "scores": scores, "maybe": None}
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(answer))
    assert (errors == []) is valid
