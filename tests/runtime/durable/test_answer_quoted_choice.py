"""`flowc answer R E1 '"ship"'`: a question whose choices are texts takes the text as is
(docs/reference/cli.md `flowc answer`), so the quoted text is refused, with a hint to give the
choice without its quotes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agentflow.errors import InputError
from agentflow.runtime.durable.answers import checked_answer

SHIP = SimpleNamespace(question="Ship it?", choices=["ship", "hold"], schema=None)


def test_a_choice_in_json_quotes_is_refused_with_a_hint_to_drop_them():
    with pytest.raises(InputError) as caught:
        checked_answer(SHIP, '"ship"')
    assert str(caught.value) == (
        'answer to `Ship it?`: "\\"ship\\"" is not one of "ship" | "hold"; '
        "give the choice without quotes: ship"
    )


@pytest.mark.parametrize("value", ['"maybe"', "maybe", "[1]", "[" * 5000 + "]" * 5000])
def test_other_wrong_answers_get_no_quote_hint(value):
    with pytest.raises(InputError) as caught:
        checked_answer(SHIP, value)
    assert "without quotes" not in str(caught.value)


def test_the_choice_as_is_is_taken():
    assert checked_answer(SHIP, "ship") == "ship"


@pytest.mark.parametrize("depth", [150, 5000])
def test_a_json_answer_nested_too_deeply_is_refused_not_taken_as_text(depth):
    """`ask … expect json` answered `[[[…]]]` past the JSON depth limit is refused as `--input`
    refuses it; it is not stored as the text of the brackets."""
    anything = SimpleNamespace(question="Value?", choices=None, schema={"description": "json"})
    with pytest.raises(InputError, match="nested") as caught:
        checked_answer(anything, "[" * depth + "]" * depth)
    assert str(caught.value).startswith("answer to `Value?`: ")
    assert checked_answer(anything, "[[1]]") == [[1]]
    assert checked_answer(anything, "not json") == "not json"


def test_a_yes_no_question_answered_otherwise_says_which_words_it_takes():
    ok = SimpleNamespace(question="Ship it?", choices=None, schema={"type": "boolean"})
    with pytest.raises(InputError) as caught:
        checked_answer(ok, "maybe")
    assert str(caught.value).endswith("; a yes/no question takes yes, no, true or false (or y, n)")
    assert checked_answer(ok, "Yes") is True


def test_no_question_at_a_name_suggests_the_nearest_waiting_one():
    from agentflow.runtime.durable.run_info import Question, no_question_message

    asked = Question("r1", "r1", "E1", "Ship it?", schema={"type": "boolean"}, label="ok")
    assert no_question_message("r1", "okay", [asked]) == (
        "run r1 has no question waiting at 'okay' (waiting: ok · E1)\nhint: did you mean `ok`?"
    )
    assert "hint" not in no_question_message("r1", "deploy", [asked])
