"""A float beyond ±(2**53 - 1) given for an `int` is refused like any other non-integer, at
every door a value comes in by (``--input``, a declared tool result, a model's JSON answer, an
answer to ``ask``): past 2**53 a double is the rounding of several whole numbers, so ``1e308``
would become a 309-digit int nobody wrote and ``9007199254740993.0`` would be ``…992``
(docs/decisions.md "floats above 2^53 are not ints"). A whole number written as an integer
literal stays exact up to the `int` range."""

from __future__ import annotations

import json

import jsonschema
import pytest

import agentflow
from agentflow.ir.schemas import MAX_SAFE_INTEGER, validation_errors, validator, whole_numbers
from agentflow.runtime.agent import check_answer
from agentflow.runtime.extract import loads_value, validate
from agentflow.runtime.hooks import Hooks

TOOLS = '''
import agentflow

@agentflow.tool
def huge() -> int:
    """A whole number too large for a double to hold exactly, as a float."""
    return 1e308
'''


def _flow(tmp_path, text: str) -> str:
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    (tmp_path / "tools.py").write_text(TOOLS)
    path = tmp_path / "b.flow"
    path.write_text(text)
    return str(path)


async def _run(tmp_path, text: str, input: object = None, **options: object):
    return await agentflow.run(
        _flow(tmp_path, text),
        input,
        config=str(tmp_path / "flow.toml"),
        workspace=str(tmp_path),
        shape_cache=False,
        **options,  # type: ignore[arg-type]
    )


INT_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@pytest.mark.parametrize("big", [1e308, 9007199254740993.0, -9007199254740992.0, 1e20])
def test_a_float_beyond_2_53_breaks_integer_with_the_non_integer_message(big):
    # both validators: the fast one passes a whole float, so jsonschema's decides
    expected = f"$.n: {big!r} is not of type 'integer'"
    assert validate(INT_SCHEMA, {"n": big}) == [expected]
    assert [e.message for e in validation_errors(INT_SCHEMA, {"n": big})] == [
        expected.removeprefix("$.n: ")
    ]
    assert validate(INT_SCHEMA, {"n": 3.5}) == ["$.n: 3.5 is not of type 'integer'"]  # the same


def test_the_largest_safe_float_and_exact_integer_literals_stay_ints():
    safe = float(MAX_SAFE_INTEGER)
    assert validate(INT_SCHEMA, {"n": safe}) == []
    out = whole_numbers(INT_SCHEMA, {"n": safe})["n"]
    assert out == MAX_SAFE_INTEGER and type(out) is int
    # an integer literal is parsed exactly (up to the int range), never through a double
    exact = loads_value('{"n": 9007199254740993}')
    assert exact == {"n": 9007199254740993} and validate(INT_SCHEMA, exact) == []
    assert loads_value('{"n": 1e20}') == {"n": 1e20}  # a float: refused for an int below
    assert validate(INT_SCHEMA, {"n": 1e20})
    # a `number` takes any finite float as it is
    assert validate({"type": "number"}, 1e308) == []
    assert whole_numbers({"type": "number"}, 1e308) == 1e308


def test_the_jsonschema_integer_check_is_pinned():
    # validator() reaches into TYPE_CHECKER._type_checkers (a private pyrsistent map)
    base = jsonschema.Draft202012Validator.TYPE_CHECKER._type_checkers["integer"]
    assert base(jsonschema.Draft202012Validator.TYPE_CHECKER, 3.0) is True
    check = validator({"type": "integer"})
    assert check.is_valid(3.0) and check.is_valid(2**62) and not check.is_valid(True)
    assert not check.is_valid(1e308)
    draft4 = validator({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"})
    assert not draft4.is_valid(3.0) and draft4.is_valid(3)  # draft 4 keeps its own rule


async def test_an_input_of_1e308_for_an_int_is_refused(tmp_path):
    text = 'flow b "b"\ninput { a: int }\nstage s -> int { return input.a }\n'
    with pytest.raises(
        agentflow.InputError, match=r"`input\.a` is 1e\+308, but the flow's input type wants `int`"
    ):
        await _run(tmp_path, text, {"a": 1e308})
    ok = await _run(tmp_path, text, {"a": 9007199254740993})
    assert ok.status == "ok" and json.dumps(ok.output) == "9007199254740993"


async def test_a_tool_result_of_1e308_declared_int_is_an_output_validation_error(tmp_path):
    text = 'flow t "t"\nextern tool user__huge() -> int\nstage s -> int { return user__huge() }\n'
    result = await _run(tmp_path, text)
    assert result.status == "error"
    assert result.error.code == "output_validation"
    assert "`result` is 1e+308, but its declared type wants `int` here" in result.error.message


async def test_an_ask_answer_of_1e308_for_int_is_refused(tmp_path):
    text = 'flow a "a"\nstage s -> int {\n  return ask "n?" expect int default 0\n}\n'
    result = await _run(tmp_path, text, hooks=Hooks(interlocutor=lambda request: 1e308))
    assert result.status == "error" and result.error.code == "output_validation"
    # an answer's refusal quotes the value as JSON (breakfix: no Python reprs), in `.flow` types
    assert "`answer` is 1e+308, but the ask's type wants `int` here" in result.error.message


def test_a_model_answer_of_1e308_for_an_int_field_is_refused():
    value, errors, _ = check_answer('{"n": 1e308}', INT_SCHEMA)
    assert errors == ["$.n: 1e+308 is not of type 'integer'"] and value == {"n": 1e308}
    value, errors, _ = check_answer('{"n": 9007199254740993}', INT_SCHEMA)
    assert errors == [] and value == {"n": 9007199254740993}
