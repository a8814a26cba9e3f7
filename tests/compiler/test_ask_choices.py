"""`ask … expect "a" | "b"` offers the literal members as the ask step's `choices`: the terminal
lists them numbered and takes a number, and an answer outside them is refused."""

from __future__ import annotations

import io

from agentflow import api
from agentflow.runtime.executor import Hooks, terminal_interlocutor

SRC = """\
type Choice = "ship" | "hold"
stage decide -> Choice {
  ask "Ship or hold?" expect Choice default "hold"
}
"""


def test_a_literal_union_becomes_the_choices(tmp_path):
    step = api.compile_source(SRC, "c.flow").plan["steps"][0]
    assert step["input"]["choices"] == ["ship", "hold"]
    plain = api.compile_source(
        SRC.replace("Choice {", "text {").replace("expect Choice", "expect text"), "c.flow"
    )
    assert "choices" not in plain.plan["steps"][0]["input"]


def test_the_terminal_numbers_the_choices_and_takes_a_number(tmp_path):
    flow = tmp_path / "c.flow"
    flow.write_text(SRC, encoding="utf-8")
    shown = io.StringIO()
    hooks = Hooks(interlocutor=terminal_interlocutor(io.StringIO("1\n"), shown))
    result = api.run_sync(str(flow), None, hooks=hooks, workspace=tmp_path, shape_cache=False)
    assert result.status == "ok", result.error
    assert result.output == "ship"
    assert "  1) ship\n  2) hold\n" in shown.getvalue()


def test_an_answer_outside_the_choices_fails_the_step(tmp_path):
    flow = tmp_path / "c.flow"
    flow.write_text(SRC, encoding="utf-8")
    hooks = Hooks(interlocutor=lambda request: "maybe")
    result = api.run_sync(str(flow), None, hooks=hooks, workspace=tmp_path, shape_cache=False)
    assert result.status == "error"
    assert result.error["code"] == "output_validation"
    assert '"maybe" is not one of "ship" | "hold"' in result.error["message"]
