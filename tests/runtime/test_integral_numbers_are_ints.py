"""An `int` given as an integral float (``3.0``: JSON has one number type, and JSON Schema's
``integer`` accepts it) is an ``int`` once validated, wherever a value meets its declared type: the
run's input, a tool's declared result, an agent's answer, a human's answer (round 41, item 1;
docs/decisions.md "integral numbers and deep values (round 41)")."""

from __future__ import annotations

import json

import agentflow
from agentflow.ir.schemas import whole_numbers
from agentflow.runtime.agent import check_answer
from agentflow.runtime.hooks import Hooks

TOOLS = '''
import agentflow

@agentflow.tool
def halves() -> list:
    """Whole numbers written as floats."""
    return [2.0, 4.0]
'''


def _flow(tmp_path, text: str) -> str:
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    (tmp_path / "tools.py").write_text(TOOLS)
    path = tmp_path / "i.flow"
    path.write_text(text)
    return str(path)


async def _run(tmp_path, text: str, input: object = None, **options: object) -> object:
    result = await agentflow.run(
        _flow(tmp_path, text),
        input,
        config=str(tmp_path / "flow.toml"),
        workspace=str(tmp_path),
        shape_cache=False,
        **options,  # type: ignore[arg-type]
    )
    assert result.status == "ok", result.error
    return result.output


async def test_an_int_input_given_as_3_0_is_the_int_3_in_text_and_arithmetic(tmp_path):
    text = (
        'flow i "i"\ninput { a: int }\n'
        'stage s -> text { return "item ${input.a} of ${[10,20,30,40][input.a]}" }\n'
    )
    assert await _run(tmp_path, text, {"a": 3.0}) == "item 3 of 40"
    doubled = 'flow i "i"\ninput { a: int }\nstage s -> int[] { map [1,2] as x { x * input.a } }\n'
    out = await _run(tmp_path, doubled, {"a": 2.0})
    assert json.dumps(out) == "[2, 4]"


async def test_a_tool_result_declared_int_list_holds_ints(tmp_path):
    text = 'flow t "t"\nextern tool user__halves() -> int[]\nstage s -> int[] { return user__halves() }\n'
    out = await _run(tmp_path, text)
    assert json.dumps(out) == "[2, 4]"


async def test_a_human_answer_3_0_to_expect_int_is_the_int_3(tmp_path):
    text = (
        'flow a "a"\nstage s -> { a: int, c: int } {\n'
        '  let a = ask "int?" expect int default 0\n  return { a: a, c: a + 1 }\n}\n'
    )
    out = await _run(tmp_path, text, hooks=Hooks(interlocutor=lambda request: 3.0))
    assert json.dumps(out) == '{"a": 3, "c": 4}'


def test_a_model_answer_3_0_to_an_int_field_is_the_int_3():
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "x": {"type": "number"}},
        "required": ["n", "x"],
    }
    value, errors, _ = check_answer('{"n": 3.0, "x": 2.0}', schema)
    assert errors == [] and json.dumps(value) == '{"n": 3, "x": 2.0}'
    value, errors, _ = check_answer('{"n": 3.5, "x": 2.0}', schema)
    assert errors and value == {"n": 3.5, "x": 2.0}  # refused, not rounded


def test_whole_numbers_follows_unions_optionals_maps_tuples_and_references():
    schema = {
        "type": "object",
        "properties": {
            "u": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "o": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "n": {"anyOf": [{"type": "number"}, {"type": "integer"}]},
            "m": {"type": "object", "additionalProperties": {"type": "integer"}},
            "t": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "number"}]},
            "r": {"$ref": "#/$defs/Node"},
            "v": {
                "anyOf": [
                    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                    {"type": "object", "properties": {"b": {"type": "number"}}, "required": ["b"]},
                ]
            },
        },
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "v": {"type": "integer"},
                    "kids": {"items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
    }
    value = {
        "u": 1.0,
        "o": 2.0,
        "n": 3.0,
        "m": {"k": 4.0},
        "t": [5.0, 6.0],
        "r": {"v": 7.0, "kids": [{"v": 8.0, "kids": []}]},
        "v": {"b": 9.0},
        "extra": 10.0,
    }
    out = whole_numbers(schema, value)
    assert json.dumps(out) == json.dumps(
        {
            "u": 1,
            "o": 2,
            "n": 3.0,  # a `number` branch takes it as it is
            "m": {"k": 4},
            "t": [5, 6.0],
            "r": {"v": 7, "kids": [{"v": 8, "kids": []}]},
            "v": {"b": 9.0},
            "extra": 10.0,
        }
    )
    assert value["u"] == 1.0 and type(value["u"]) is float  # the input is not modified
    same = {"u": "x", "o": None}
    assert whole_numbers(schema, same) is same  # nothing to change: the same object
    assert whole_numbers({"type": "integer"}, True) is True
    assert whole_numbers({"$ref": "#"}, 1.0) == 1.0  # a loop without descent ends
    literal = whole_numbers({"enum": [1, 2]}, 2.0)  # a literal union `1 | 2`
    assert literal == 2 and type(literal) is int
    assert type(whole_numbers({"anyOf": [{"const": 3}, {"type": "string"}]}, 3.0)) is int
