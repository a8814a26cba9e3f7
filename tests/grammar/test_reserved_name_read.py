"""A word that starts an expression (``filter``, ``parallel``, ``map``, ``verify`` …), bound as a
name and then read, stops the parse right after the word: both parsers tell that as
``reserved-name`` at the binding, with a note on where the parser stopped, not as a bare
"expected an expression" (docs/diagnostics.md "reserved-name")."""

from __future__ import annotations

import pytest

from agentflow.grammar.parser import parse_module, parse_module_lalr

_PARSERS = pytest.mark.parametrize("parse", [parse_module, parse_module_lalr], ids=["fast", "lalr"])


def _found(parse, src: str) -> list[tuple[str, int, int, str, list[str]]]:
    _module, diags = parse(src, "f.flow")
    return [
        (d.code, d.span.line, d.span.column, d.message, [n.message for n in d.notes]) for d in diags
    ]


@_PARSERS
@pytest.mark.parametrize("word", ["filter", "parallel", "map", "reduce", "verify", "try"])
def test_a_let_named_with_a_construct_word_and_then_read_is_a_reserved_name_at_the_let(parse, word):
    src = f"stage s -> int {{\n  let {word} = 1\n  return {word} + 1\n}}\n"
    [(code, line, column, message, notes)] = _found(parse, src)
    assert (code, line, column) == ("reserved-name", 2, 7)
    assert message == (
        f"`{word}` is a word of the language: where a value is read, `{word}` starts its "
        "construct, so a variable of that name could never be read"
    )
    assert len(notes) == 1 and notes[0].startswith("the parser stopped here: expected")


@_PARSERS
def test_a_parameter_named_map_and_read_in_the_body_is_a_reserved_name_at_the_parameter(parse):
    src = "fn g(map: int) -> int = map + 1\nstage s -> int { return g(1) }\n"
    [(code, line, column, message, _notes)] = _found(parse, src)
    assert (code, line, column) == ("reserved-name", 1, 6)
    assert "a parameter of that name could never be read" in message


@_PARSERS
def test_a_map_item_named_verify_and_read_is_a_reserved_name_at_the_as(parse):
    src = "stage s -> int[] {\n  return map [1, 2] as verify { verify + 1 }\n}\n"
    [(code, line, column, _message, _notes)] = _found(parse, src)
    assert (code, line, column) == ("reserved-name", 2, 24)


@_PARSERS
def test_an_agent_alias_named_verify_and_called_is_a_reserved_name_at_the_alias(parse):
    src = 'use agent "w" as verify\nstage s -> text {\n  return agent(verify) { "hi" }\n}\n'
    [(code, line, column, message, _notes)] = _found(parse, src)
    assert (code, line, column) == ("reserved-name", 1, 18)
    assert "an agent alias of that name could never be read" in message


@_PARSERS
def test_a_contextual_keyword_read_as_a_name_is_no_error(parse):
    # `match` and `limit` stay names: nothing to refuse
    src = "stage s -> int {\n  let match = 1\n  let limit = 2\n  return match + limit\n}\n"
    assert _found(parse, src) == []


@_PARSERS
def test_a_construct_word_never_bound_keeps_the_plain_syntax_error(parse):
    src = "stage s -> int {\n  return filter + 1\n}\n"
    [(code, line, column, message, _notes)] = _found(parse, src)
    assert (code, line, column) == ("syntax-error", 2, 17)
    assert message == "expected an expression, found `+`"


@_PARSERS
def test_a_binding_in_another_stage_leaves_the_syntax_error_where_it_is(parse):
    src = (
        "stage a -> int {\n  let parallel = 1\n  return 1\n}\n"
        "stage b -> int {\n  return parallel + 1\n}\n"
    )
    assert [(code, line) for code, line, *_ in _found(parse, src)] == [("syntax-error", 6)]


@_PARSERS
def test_an_object_key_is_no_binding(parse):
    src = "stage b -> int {\n  let o = { a: 1, filter: 2 }\n  return filter + 1\n}\n"
    assert [(code, line) for code, line, *_ in _found(parse, src)] == [("syntax-error", 3)]


@_PARSERS
def test_a_block_left_open_before_the_read_keeps_the_reserved_name(parse):
    src = "stage s -> int {\n  let filter = 1\n  if true {\n    let q = 1\n  return filter + 1\n}\n"
    [(code, line, column, _message, notes)] = _found(parse, src)
    assert (code, line, column) == ("reserved-name", 2, 7)
    assert notes == ["the parser stopped here: expected an expression, found `+`"]
