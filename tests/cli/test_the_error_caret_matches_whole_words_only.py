"""The caret under a run error (cli/common.py ``_show_run_error``, placed by
``api.expression_position``) is on the expression the message quotes only where it is written
as a whole token: a stage named `one` whose agent has `tools none` keeps the caret on the agent
call, not in "none"; a stage `e` not on the "e" of `return`. The stage prefix of a message
(``stage `one` (f.flow:7:10): …``) names no expression, and the step's recorded place is taken
when the quoted text is written there.

Root cause: the quoted text was looked for with ``str.find``, a substring of any later text."""

from __future__ import annotations

import pytest
from support.chat_server import text
from support.local_provider import run_against

from agentflow import api

AGENT = """flow a "agent"
input { q: text }
type R { s: text
  n: int }
use agent "helper" as helper
stage STAGE -> R {
  return agent(helper) {
    task "Answer ${input.q}"
    expect R
    tools none
  }
}
"""


@pytest.mark.parametrize("stage", ["one", "e"])
def test_a_stage_name_inside_other_words_does_not_take_the_caret(tmp_path, stage):
    (tmp_path / "a.flow").write_text(AGENT.replace("STAGE", stage), encoding="utf-8")
    res = run_against(
        tmp_path,
        lambda request: text('{"s": "a", "n": '),
        "run",
        "a.flow",
        "--input",
        '{"q": "hi"}',
    )
    assert res.returncode == 1, res.stderr
    shown = res.stderr.splitlines()
    at = next(i for i, line in enumerate(shown) if line.startswith("error[output_validation]"))
    assert f"stage `{stage}`" in shown[at], res.stderr
    assert shown[at + 1].strip() == "--> a.flow:7:10", res.stderr
    assert shown[at + 3].index("^") == shown[at + 2].index("agent("), res.stderr


LINES = [
    "stage one -> int {",
    "  let none = 1",
    "  return e + one + tone",
]


@pytest.mark.parametrize(
    ("message", "found"),
    [
        ("`one` is not defined", (3, 14, 3)),  # not the `one` ending `none`, nor in `tone`
        ("`e` is null", (3, 10, 1)),  # not the "e" of `let` or of `return`
        ("`e + one` failed", (3, 10, 7)),
        ("`ton` failed", None),  # a part of a name is never it
        ("stage `one` (f.flow:2:3): failed", None),  # the stage prefix names no expression
        ("stage `one` (f.flow:2:3): `none` failed", (2, 7, 4)),
    ],
)
def test_only_a_whole_token_is_the_quoted_expression(message, found):
    assert api.expression_position(LINES, 2, message) == found


def test_the_steps_recorded_place_is_taken_when_the_quoted_text_is_there():
    lines = ["  return f(x) + f(x)"]
    assert api.expression_position(lines, 1, "`f(x)` failed", 17) == (1, 17, 4)
    assert api.expression_position(lines, 1, "`f(x)` failed") == (1, 10, 4)
