"""`flowc answer R ok '"hold"'` and `--answer ok=2`: VALUE is JSON unless the question wants
text, so a JSON string that is one of the choices is that choice, and a whole number is the
choice the terminal numbers so; a value that is itself a choice stays that choice
(docs/reference/cli.md `flowc answer`, docs/decisions.md "A choice as JSON or by its number")."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agentflow.errors import InputError
from agentflow.runtime.durable.answers import checked_answer

SHIP = SimpleNamespace(question="Ship it?", choices=["ship", "hold"], schema=None)


@pytest.mark.parametrize("value", ["hold", '"hold"', "2", 2])
def test_a_choice_is_taken_bare_as_a_json_string_or_by_its_number(value):
    assert checked_answer(SHIP, value) == "hold"


def test_a_choice_that_is_itself_quoted_text_is_taken_as_it_is():
    quoted = SimpleNamespace(question="Which?", choices=['"a"', "a"], schema=None)
    assert checked_answer(quoted, '"a"') == '"a"'
    assert checked_answer(quoted, "a") == "a"


def test_a_number_choice_is_its_value_before_its_position():
    sizes = SimpleNamespace(question="Size?", choices=[2, 10, 20], schema={"enum": [2, 10, 20]})
    assert checked_answer(sizes, "2") == 2
    assert checked_answer(sizes, "3") == 20


@pytest.mark.parametrize("value", ['"maybe"', "maybe", "0", "3", "[1]", "[" * 5000 + "]" * 5000])
def test_other_answers_are_refused_naming_the_choices(value):
    with pytest.raises(InputError) as caught:
        checked_answer(SHIP, value)
    assert 'is not one of "ship" | "hold"' in str(caught.value)


@pytest.mark.parametrize("value", ["0", "3", 3])
def test_a_number_past_the_choices_is_refused_saying_how_they_are_numbered(value):
    # `flowc answer R ok 3` and `--answer ok=3` of two choices
    with pytest.raises(InputError) as caught:
        checked_answer(SHIP, value)
    assert str(caught.value).endswith(
        'is not one of "ship" | "hold"; the choices are numbered 1–2'
    ), caught.value


def test_a_word_that_is_no_choice_is_not_told_the_numbering():
    with pytest.raises(InputError) as caught:
        checked_answer(SHIP, "maybe")
    assert "numbered" not in str(caught.value)
