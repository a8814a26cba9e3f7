"""A plan's contracts are checked against the JSON Schema 2020-12 metaschema keyword by keyword
and subschema by subschema, each part cached (ir/validate_schema.py ``_schema_error``): the verdict and
the path of the problem are those of jsonschema's check of the whole schema."""

from __future__ import annotations

import copy
import random

import jsonschema
import pytest

from agentflow.ir.validate_schema import _schema_error

ITEM = {
    "type": "object",
    "description": "Items to triage.",
    "properties": {
        "id": {"type": "integer", "minimum": 0, "maximum": 1000},
        "kind": {"enum": ["bug", "debt", "doc"]},
        "note": {"anyOf": [{"type": "string", "maxLength": 50}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
    },
    "required": ["id", "kind", "tags"],
    "additionalProperties": False,
}
VALID = [
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer"},
    {"type": "array", "items": {"$ref": "#/$defs/Item"}, "$defs": {"Item": ITEM}},
    {"oneOf": [ITEM, {"const": None}], "not": {"type": "boolean"}, "prefixItems": [True, False]},
    {"patternProperties": {"^x-": {"type": "string"}}, "propertyNames": {"minLength": 1}},
    {"if": {"required": ["a"]}, "then": {"minProperties": 1}, "else": False},
    {},
    True,
]
#: replacements that break a schema, each somewhere the metaschema looks
BREAKS = [
    {"type": 3},
    {"type": ["string", "string"]},
    {"minimum": "x"},
    {"enum": 5},
    {"pattern": "("},
    {"required": [1]},
    {"items": 4},
    {"anyOf": []},
    {"additionalProperties": "no"},
    {"minLength": -1},
    {"$ref": 5},
    {"properties": {"a": 1}},
    {"patternProperties": {"(": {}}},
]


def _whole(schema):
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        return tuple(e.path)
    return None


def _objects(value):
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _objects(v)
    elif isinstance(value, list):
        for v in value:
            yield from _objects(v)


def test_valid_contracts_pass_checked_by_parts():
    for schema in VALID:
        assert _whole(schema) is None
        assert _schema_error(schema) is None, schema


@pytest.mark.parametrize("seed", range(4))
def test_broken_contracts_fail_at_the_path_the_whole_check_gives(seed):
    rng = random.Random(seed)
    broken = 0
    for base in VALID[:-1]:
        for _ in range(12):
            schema = copy.deepcopy(base)
            node = rng.choice(list(_objects(schema)))
            node.update(rng.choice(BREAKS))
            got = _schema_error(schema)
            want = _whole(schema)
            assert (got if got is None else got[1]) == want, schema
            broken += want is not None
    assert broken >= 60  # of 72: most replacements land where they break the schema


def test_a_part_reports_its_path_inside_the_whole_schema():
    schema = {"$defs": {"Item": {"properties": {"id": {"minimum": "zero"}}}}}
    assert _schema_error(schema) == (
        "'zero' is not of type 'number'",
        ("$defs", "Item", "properties", "id", "minimum"),
    )
