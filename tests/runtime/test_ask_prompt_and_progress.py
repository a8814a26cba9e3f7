"""`ask` for a person (issue 28 item 9): the terminal prompt names the step, shows the type, the
choices and the default, takes `yes`/`no`/`y`/`n`/`true`/`false` for a `bool` and asks again,
with the reason, after a line that does not fit; without a terminal the progress line says the
default was used. (The same on a real pseudo-terminal: tests/cli/test_console_under_a_terminal.py.)"""

from __future__ import annotations

import io
import json
import re

import pytest

from agentflow import api
from agentflow.errors import InputError
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.events import ConsoleSink
from agentflow.runtime.hooks import Hooks, terminal_interlocutor

FLOW = """
flow confirm "one question"
type Choice = "ship" | "hold"

stage go -> bool {
  ask "Publish the digest?" expect bool default false
}

stage pick -> Choice {
  ask "Ship or hold?" expect Choice default "hold"
}
"""


def _run(tmp_path, hooks=None, answers=None):
    flow = tmp_path / "confirm.flow"
    flow.write_text(FLOW, encoding="utf-8")
    progress = io.StringIO()
    result = api.run_sync(
        str(flow),
        None,
        hooks=hooks,
        answers=answers,
        sinks=[ConsoleSink(progress, force_plain=True)],
        workspace=tmp_path,
        shape_cache=False,
    )
    return result, progress.getvalue()


def test_without_a_terminal_the_progress_line_says_the_default_was_used(tmp_path):
    result, progress = _run(tmp_path)
    assert result.status == "ok" and result.output == "hold"
    # the step's time is whatever the machine took: only its shape is pinned
    assert re.search(  # the place through the run's file as given (here absolute)
        rf"✓ go › ask  {re.escape(str(tmp_path))}/confirm\.flow:6:3  \d+\.\d\ds · no answer to "
        r"\"Publish the digest\?\": the default false",
        progress,
    )
    assert ': the default "hold"' in progress


def test_the_terminal_prompt_shows_type_choices_default_and_asks_again(tmp_path):
    typed = io.StringIO("sure\nY\n3\n1\n")
    shown = io.StringIO()
    result, progress = _run(tmp_path, Hooks(interlocutor=terminal_interlocutor(typed, shown)))
    assert result.status == "ok", result.error
    assert result.output == "ship"
    text = shown.getvalue()
    assert "? [go › ask] Publish the digest?\n" in text
    assert "  answer: bool: yes or no (default: no); an empty line leaves it unanswered\n> " in text
    not_bool = '`answer` is "sure", but the ask\'s type wants `bool` here'
    assert f"  not accepted: {not_bool}; try again\n> " in text
    assert "  1) ship\n  2) hold\n" in text
    assert "answer: the number or the text of a choice (default: hold)" in text
    assert '  not accepted: 3 is not one of "ship" | "hold"; try again\n> ' in text
    assert "· answered true" in progress and '· answered "ship"' in progress


def test_answers_given_before_the_run_answer_the_asks_they_name_by_let_stage_or_path(tmp_path):
    # by stage (`go`), parsed as `flowc answer` parses (yes → true); `pick` left to its default
    result, progress = _run(tmp_path, answers={"go": "yes"})
    assert result.status == "ok" and result.output == "hold"
    assert "· answered true" in progress
    # by step path, a JSON value taken as is; a text question takes its text bare
    result, _ = _run(tmp_path, answers={"E0": False, "pick": "ship"})
    assert result.output == "ship"


def test_a_given_answer_the_question_refuses_is_refused_before_the_run_with_its_message(
    tmp_path,
):
    # the ask's type is known from the plan: its message, the ask named as the `.flow` writes it
    with pytest.raises(InputError) as e:
        _run(tmp_path, answers={"go": "maybe"})
    assert str(e.value) == (
        'answer to `Publish the digest?`: `answer` is "maybe", but the ask\'s type wants `bool` '
        "here; a yes/no question takes yes, no, true or false (or y, n) (the answer given for go, "
        "to `go › ask` at confirm.flow:6:3); nothing was run"
    )


def test_a_given_answer_whose_type_is_known_only_as_the_run_goes_fails_its_step():
    # a hand-written plan's choices from a template: checked when the ask is asked
    plan = {
        "version": 1, "name": "p",
        "steps": [{"id": "A", "tool_name": "ask", "input": {
            "question": "Ship?", "choices": "{{ input.choices }}",
        }}],
        "finish": {"mode": "output", "output": "{{ A }}"},
    }  # fmt: skip
    loaded = load_plan_text(json.dumps(plan))
    result = api.run_sync(loaded, {"choices": ["ship", "hold"]}, answers={"A": "maybe"})
    assert result.status == "error" and result.error is not None
    assert result.error.code == "output_validation"
    assert result.error.message.endswith("(the answer given for A)")


def test_an_answer_for_a_name_no_ask_has_is_refused_before_the_run(tmp_path):
    with pytest.raises(InputError) as e:
        _run(tmp_path, answers={"og": "yes"})
    assert str(e.value) == (
        "answer for 'og': no `ask` of the flow is named so (the `let` its answer is bound to, "
        "its stage, or its step path); its asks: go, pick"
    )


@pytest.mark.parametrize(
    ("answers", "said"),
    [
        (
            {"pick": b"ship"},
            "answer for 'pick': the value: a bytes value is not a JSON value (text, a number, "
            "true or false, null, a list or an object)",
        ),
        ({"go": {1, 2}}, "answer for 'go': the value: a set value is not a JSON value"),
        (
            {"go": {"a": {3: True}}},
            "answer for 'go': the value.a: a field name is text, got the number 3",
        ),  # fmt: skip
        ({"go": float("nan")}, "answer for 'go': the value: `NaN` is not a JSON number"),
        (
            {5: "x"},
            "answers: each NAME is a text (the `let` an answer is bound to, its stage or its step "
            "path), got the number 5",
        ),
    ],
)
def test_answers_no_json_holds_are_refused_before_the_run_in_json_terms(tmp_path, answers, said):
    # never a Python repr (b'ship'), a bare TypeError, or a NaN taken for a secret
    with pytest.raises(InputError) as e:
        _run(tmp_path, answers=answers)
    assert str(e.value).startswith(said), str(e.value)


def test_an_answer_no_question_took_is_in_the_result(tmp_path):
    result, _ = _run(tmp_path, answers={"go": "yes", "E1": "ship", "pick": "hold"})
    assert result.output == "ship"
    assert result.unused_answers == ["pick"]  # E1 (the step path) came first: pick unused
    assert result.to_dict()["unused_answers"] == ["pick"]
    done, _ = _run(tmp_path, answers={"go": "yes"})
    assert done.unused_answers == [] and "unused_answers" not in done.to_dict()


def test_a_python_input_no_json_holds_is_an_input_error(tmp_path):
    flow = tmp_path / "i.flow"
    flow.write_text("input { n: int }\nstage s -> int { input.n }\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"^input\.n: a bytes value is not a JSON value"):
        api.run_sync(str(flow), {"n": b"1"}, workspace=tmp_path)


def test_a_typed_answer_with_bytes_that_are_not_utf8_takes_them_as_replacement_characters(
    tmp_path,
):
    # break14: a terminal line holding a byte that is not UTF-8 (read as Python's surrogate
    # escape) was answered as "\udcffx" and failed the write_file it reached
    flow = tmp_path / "w.flow"
    flow.write_text('stage s -> text {\n  let t = ask "T?"\n  return t\n}\n', encoding="utf-8")
    typed = io.StringIO("\udcffx\n")
    result = api.run_sync(
        str(flow), None, workspace=tmp_path, shape_cache=False,
        hooks=Hooks(interlocutor=terminal_interlocutor(typed, io.StringIO())),
    )  # fmt: skip
    assert result.status == "ok", result.error
    assert result.output == "\ufffdx"
