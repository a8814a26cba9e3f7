"""A field whose type admits null may be left out, however null got into it: `"x" | "y"?`,
`"x" | null`, `("x" | "y")?`, an alias of one, `json?` (docs/reference/types.md "Objects",
"Optional members of a union") — one rule in the contract, the checker, the run's input check,
an eval's dataset check and the generated client."""

from __future__ import annotations

import json

from jsonschema import Draft202012Validator

from agentflow import api
from agentflow.compiler.api import check_source
from agentflow.compiler.gen_python import generate_python
from agentflow.runtime.models.openai import strict_schema
from agentflow.runtime.models.schema_subsets import SUBSETS, fit_schema, subset_problems

FLOW = """\
type P = "x" | "y"?
input {
  a: "x" | "y"?
  b: "x" | null
  c: ("x" | "y")?
  d: json?
  e: json
  f: int? | text
  g: P
}
stage s -> json { return input }
"""

XY = {"anyOf": [{"enum": ["x", "y"]}, {"type": "null"}]}


def test_every_field_that_admits_null_is_left_out_of_required_with_one_schema():
    result = check_source(FLOW, "o.flow")
    assert not result.errors
    schema = api.type_schema(result, None)
    assert schema["required"] == ["e"]  # `json` alone holds null but must be there
    props = schema["properties"]
    assert props["a"] == props["c"] == props["g"] == XY  # no nested anyOf for `"x" | "y"?`
    assert props["b"] == {"anyOf": [{"enum": ["x"]}, {"type": "null"}]}
    assert props["f"] == {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}


OPTIONAL_UNION = """\
type R { a: (int | text)?, b: int | text?, c: (R | int)?, d: ((int | null) | text)? }
input { a: (int | text)? }
stage s -> R { return { a: input.a } }
"""


def test_an_optional_union_is_one_flat_anyof_with_null_in_the_schema_text():
    """`(int | text)?` is `anyOf [int, text, null]`, not `anyOf [anyOf [int, text], null]`;
    each member once, null last (docs/reference/types.md "JSON Schema"), and every consumer
    of a contract takes it: the contract validator, each provider's structured-output subset,
    OpenAI strict mode, the served MCP tool's input schema."""
    result = check_source(OPTIONAL_UNION, "o.flow")
    assert not result.errors, result.errors
    text = json.dumps(api.type_schema(result, "R")["properties"])
    flat = '{"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}'
    assert text == (
        f'{{"a": {flat}, "b": {flat}, '
        '"c": {"anyOf": [{"$ref": "#"}, {"type": "integer"}, {"type": "null"}]}, '
        f'"d": {flat}}}'
    )
    contract = api.type_schema(result, "R")
    validator = Draft202012Validator(contract)
    for value in ({"a": 1}, {"a": "x"}, {"a": None}, {"c": {"a": 2}}, {}):
        assert validator.is_valid(value), value
    assert not validator.is_valid({"a": 1.5})
    for subset in SUBSETS:
        assert subset_problems(fit_schema(contract, subset), subset) == [], subset
    strict = strict_schema(contract)
    assert strict is not None and strict["properties"]["a"] == json.loads(flat)
    compiled = api.compile_source(OPTIONAL_UNION, "o.flow")
    served = json.dumps(compiled.plan["input_schema"]["properties"]["a"])
    assert served == flat


def test_a_run_takes_an_input_without_the_fields_that_admit_null():
    compiled = api.compile_source(FLOW, "o.flow")
    result = api.run_sync(api.plan_from_data(compiled.plan, "o.flow"), {"e": 1})
    assert (result.status, result.output) == ("ok", {"e": 1})


def test_the_generated_client_defaults_the_same_fields_to_none():
    result = check_source(FLOW, "o.flow")
    module = generate_python(result, FLOW, "o.flow", "o_client.py")
    for line in (
        'a: Literal["x", "y"] | None = None',
        'b: Literal["x"] | None = None',
        'c: Literal["x", "y"] | None = None',
        "d: JsonValue = None",
        'g: Literal["x", "y"] | None = None',
        "f: Int | str | None = None",
    ):
        assert f"    {line}\n" in module
    assert "    e: JsonValue\n" in module


def test_a_json_parameter_written_json_optional_may_be_left_out():
    result = check_source(
        "extern tool user__put(body: json?, key: text) -> json\n"
        'stage s -> json { return user__put(key: "k") }\n',
        "t.flow",
    )
    assert not result.errors
    _, optional = result.tool_decls["user__put"].params["body"]
    assert optional is True


def test_an_eval_expect_with_a_question_mark_on_the_last_literal_lets_cases_leave_it_out(
    tmp_path,
):
    (tmp_path / "p.flow").write_text(
        "input { n: int }\n"
        'stage s -> text { return "p1" }\n'
        'eval "priority" {\n'
        '  dataset "cases.jsonl"\n'
        '  expect { priority: "p1" | "p2" | "p3"? }\n'
        "  score ok = output == expected.priority\n"
        "}\n",
        encoding="utf-8",
    )
    (tmp_path / "cases.jsonl").write_text(
        '{"input": {"n": 1}, "expected": {"priority": "p1"}}\n'
        '{"input": {"n": 2}, "expected": {}}\n',
        encoding="utf-8",
    )
    result = api.check(tmp_path / "p.flow")
    codes = [d.code for d in result.diagnostics]
    assert codes == ["optional-union-member"]  # the warning; no case is refused
    warning = result.diagnostics[0]
    assert warning.hint == 'write `("p1" | "p2" | "p3")?` to say the whole union is optional'
    report = api.evaluate(tmp_path / "p.flow", cache=None)
    assert [r.scores["ok"].score for r in report.runs] == [1.0, 0.0]
