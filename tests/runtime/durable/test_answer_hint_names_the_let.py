"""The hint `answer with: flowc answer RUN NAME VALUE` names a question by the `let` its answer
is bound to when that name is the question's alone in the run, and by its step path otherwise
(docs/reference/cli.md "flowc answer"): the console of `flowc run --durable` and `flowc
resume`, and `flowc runs show`, all print it through `api.answer_name` (the terminal test of
tests/cli/test_console_text_is_escaped_everywhere.py sees it on both)."""

from __future__ import annotations

import pytest

from agentflow import api
from agentflow.errors import InputError
from agentflow.runtime.durable.run_info import Question, question_path


def test_a_let_bound_ask_asked_once_is_named_by_its_let():
    assert api.answer_name("E1", "approve › go = ask") == "go"
    others = [("E1", "approve › go = ask"), ("E3", "ship › note = ask")]
    assert api.answer_name("E1", "approve › go = ask", others) == "go"


def test_the_name_resolves_to_the_same_question_flowc_answer_finds():
    pending = [
        Question("r", "r", "E1", "Go?", label="approve › go = ask"),
        Question("r", "r", "E3", "Note?", label="ship › note = ask"),
    ]
    for q in pending:
        name = api.answer_name(q.path, q.label, [(p.path, p.label) for p in pending])
        assert question_path(pending, name, "r") == q.path


def test_an_ask_asked_again_is_named_by_its_let_and_item_or_round_numbers():
    # an ask in a map item or a loop round is asked again: its let alone fits several questions
    assert api.answer_name("E0/do.1/E0", "confirm › item 1 › go = ask") == "go[1]"
    assert api.answer_name("E2/round.3/E0", "revise › round 3 › ok = ask") == "ok[3]"
    nested = "s › item 0 › round 2 › ok = ask"
    assert api.answer_name("E0/do.0/E1/round.2/E0", nested) == "ok[0][2]"
    # … unless another question has that name too (two stages' maps): the path
    twice = [("E0/do.1", "a › item 1 › go = ask"), ("E4/do.1", "b › item 1 › go = ask")]
    assert api.answer_name("E0/do.1", "a › item 1 › go = ask", twice) == "E0/do.1"


def test_a_repeated_ask_is_found_by_its_indexed_name_or_its_label_as_printed():
    pending = [
        Question("m1", "m1", f"E0/do.{i}", "Ship?", label=f"s › item {i} › ok = ask")
        for i in range(2)
    ]
    assert question_path(pending, "ok[1]", "m1") == "E0/do.1"
    assert question_path(pending, "s › item 1 › ok", "m1") == "E0/do.1"
    assert question_path(pending, "s › item 0 › ok = ask", "m1") == "E0/do.0"
    assert question_path(pending, "E0/do.1", "m1") == "E0/do.1"  # the step path still works
    with pytest.raises(InputError) as caught:  # the let alone: several, the indexed form first
        question_path(pending, "ok", "m1")
    assert str(caught.value).splitlines()[1] == (
        "hint: name the one to answer, e.g. flowc answer m1 'ok[0]' VALUE "
        "(or its step path, E0/do.0)"
    )


def test_the_path_when_the_name_would_not_be_the_questions_alone():
    # two stages bind an ask to the same name
    twice = [("E1", "a › go = ask"), ("E4", "b › go = ask")]
    assert api.answer_name("E1", "a › go = ask", twice) == "E1"
    # another question's path is the name itself
    assert api.answer_name("E1", "a › E4 = ask", [("E4", None)]) == "E1"
    # no `let` (`return ask …`), or a hand-written plan's question (no label)
    assert api.answer_name("E1", "a › ask") == "E1"
    assert api.answer_name("E1", None) == "E1"
