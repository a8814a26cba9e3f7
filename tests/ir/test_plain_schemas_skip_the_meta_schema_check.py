"""`plainly_valid_schema` (ir/schemas.py) lets a plan's schema skip jsonschema's meta-schema
check (and its import) only when jsonschema would accept it: every schema it calls plain is
valid against the 2020-12 meta-schema, and the wrong ones go to jsonschema for their message."""

from __future__ import annotations

import jsonschema
import pytest

from agentflow.ir.schemas import fast_valid, plainly_valid_schema, validation_errors

PLAIN = [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "required": ["a"]},
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": ["string", "null"]},
    {"$defs": {"T": {"enum": ["x", "y"]}}, "anyOf": [{"$ref": "#/$defs/T"}, {"const": 3}]},
    {"type": "array", "items": {"type": "string", "pattern": "^a+$"}, "maxItems": 3},
    {"type": "string", "description": "d", "x-flow-type": "path", "examples": ["p"]},
    True,
]
WRONG = [
    {"type": "integr"},
    {"required": "a"},
    {"anyOf": []},
    {"minimum": "0"},
    {"maxLength": -1},
    {"pattern": "("},
    {"examples": "one"},
    {"type": ["string", "string"]},
    {"properties": {"a": {"type": 3}}},
]
UNUSUAL = [  # valid, but outside what the plain check knows: jsonschema decides
    {"type": "object", "dependentRequired": {"a": ["b"]}},
    {"$ref": "#/$defs/a b", "$defs": {"a b": {}}},
    {"maxLength": 1.0},
]


@pytest.mark.parametrize("schema", PLAIN)
def test_a_plain_schema_is_valid_and_skips_jsonschema(schema):
    assert plainly_valid_schema(schema)
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("schema", WRONG)
def test_a_wrong_schema_is_left_to_jsonschema(schema):
    assert not plainly_valid_schema(schema)
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("schema", UNUSUAL)
def test_an_unusual_schema_is_left_to_jsonschema(schema):
    assert not plainly_valid_schema(schema)


def test_a_value_fastjsonschema_passes_is_valid_and_a_wrong_one_gets_jsonschemas_message():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert fast_valid(schema, {"n": 1})
    assert validation_errors(schema, {"n": 1}) == []
    assert not fast_valid(schema, {"n": "1"})
    [error] = validation_errors(schema, {"n": "1"})
    assert error.message == "'1' is not of type 'integer'"
