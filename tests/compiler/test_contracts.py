"""Contracts: `.flow` types → JSON Schema 2020-12 (docs/spec/LANGUAGE.md §3, §8, §10)."""

from __future__ import annotations

import json

import fastjsonschema
import jsonschema
import pytest
from support.paths import SPEC_EXAMPLES

from agentflow.compiler import types as T
from agentflow.compiler.api import check_source
from agentflow.compiler.contracts import ContractError, agent_contract, contract_for

SOURCE = """
type Severity = "low" | "medium" | "high"
/// A node of a tree
type Node {
  /// the node's label
  name: text @length(1, 80)
  children: Node[]
  weight: number? @range(0, 1)
}
type Holder {
  root: Node
  sev: Severity
  tags: map<int>
  owner: member
  file: path
  when: duration
  any: json
  either: int | text
}
"""


def env():
    result = check_source(SOURCE, "c.flow")
    assert result.ok, [d.message for d in result.diagnostics]
    return result.env


def walk(value):
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk(v)


def test_named_root_with_defs_and_recursion():
    schema = contract_for(T.NamedRef("Holder"), env())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["root", "sev", "tags", "owner", "file", "when", "any", "either"]
    assert schema["properties"]["root"] == {"$ref": "#/$defs/Node"}
    node = schema["$defs"]["Node"]
    assert node["description"] == "A node of a tree"
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert node["required"] == ["name", "children"]  # weight is optional
    assert node["properties"]["name"] == {
        "description": "the node's label",
        "type": "string",
        "minLength": 1,
        "maxLength": 80,
    }
    assert node["properties"]["weight"]["anyOf"] == [
        {"type": "number", "minimum": 0, "maximum": 1},
        {"type": "null"},
    ]
    assert schema["properties"]["sev"] == {"enum": ["low", "medium", "high"]}
    assert schema["properties"]["tags"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert schema["properties"]["owner"]["x-flow-type"] == "member"
    assert schema["properties"]["any"] == {}
    assert schema["properties"]["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert not any("default" in d for d in walk(schema))


def test_recursive_root_refers_to_itself_and_validates():
    schema = contract_for(T.NamedRef("Node"), env())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["children"]["items"] == {"$ref": "#"}
    validate = fastjsonschema.compile(schema)
    validate({"name": "a", "children": [{"name": "b", "children": [], "weight": None}]})
    with pytest.raises(fastjsonschema.JsonSchemaValueException):
        validate({"name": "a", "children": [{"name": "b"}]})
    with pytest.raises(fastjsonschema.JsonSchemaValueException):
        validate({"name": "a", "children": [], "extra": 1})


def test_non_object_expect_is_wrapped():
    schema, wrapped = agent_contract(T.ListType(T.TEXT), env())
    assert wrapped
    assert schema["required"] == ["value"]
    assert schema["properties"]["value"] == {"type": "array", "items": {"type": "string"}}
    jsonschema.Draft202012Validator.check_schema(schema)
    schema, wrapped = agent_contract(T.NamedRef("Node"), env())
    assert not wrapped and schema["type"] == "object"


def test_extern_and_verdict_are_refused():
    with pytest.raises(ContractError):
        contract_for(T.VERDICT, env())
    with pytest.raises(ContractError):
        contract_for(T.ExternType("Handle"), env())


@pytest.mark.parametrize("name", ["bug-triage.flow", "incident-digest.flow", "issue-review.flow"])
def test_every_compiled_contract_passes_the_metaschema(name):
    from agentflow.api import compile_flow

    plan = compile_flow(SPEC_EXAMPLES / name).plan
    schemas = [d["output_schema"] for d in walk(plan) if "output_schema" in d]
    schemas += [plan["input_schema"]] if "input_schema" in plan else []
    assert schemas
    for s in schemas:
        jsonschema.Draft202012Validator.check_schema(s)
        assert '"default"' not in json.dumps(s)


def test_outcome_and_error_contracts_accept_what_the_runtime_produces():
    from agentflow.errors import RunError
    from agentflow.runtime.control import outcome_error

    source = """
type Report { item: int, score: number }
stage s -> Outcome<Report>[] { [] }
"""
    result = check_source(source, "o.flow")
    assert result.ok, [d.message for d in result.diagnostics]
    schema = contract_for(result.stage_types["s"], result.env)
    assert schema["$defs"]["Error"]["additionalProperties"] is False
    assert schema["$defs"]["Error"]["properties"]["where"] == {"$ref": "#/$defs/ErrorPlace"}
    failure = RunError("tool_error", "boom", "E0/do.1", "o.flow:3:5")
    failure.where = {"stage": "s", "item": 1, "label": "s › item 1 › user__score"}
    outcomes = [
        {"ok": True, "value": {"item": 0, "score": 0.5}},
        {"ok": False, "error": outcome_error(failure, "E0/do.1")},
    ]
    jsonschema.validate(outcomes, schema)
    assert outcomes[1]["error"]["where"]["line"] == 3
    wrong = [{"ok": False, "error": {**outcomes[1]["error"], "code": "no_such_code"}}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wrong, schema)
