"""`ask` for a person (issue 28 item 9): the terminal prompt names the step, shows the type, the
choices and the default, takes `yes`/`no`/`y`/`n`/`true`/`false` for a `bool` and asks again,
with the reason, after a line that does not fit; without a terminal the progress line says the
default was used. (The same on a real pseudo-terminal: tests/cli/test_console_under_a_terminal.py.)"""

from __future__ import annotations

import io
import re

from agentflow import api
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


def _run(tmp_path, hooks=None):
    flow = tmp_path / "confirm.flow"
    flow.write_text(FLOW, encoding="utf-8")
    progress = io.StringIO()
    result = api.run_sync(
        str(flow),
        None,
        hooks=hooks,
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
        rf"✓ go › ask  {re.escape(str(tmp_path))}/confirm\.flow:6:3  \d+\.\d\ds · no answer: "
        "the default false",
        progress,
    )
    assert '· no answer: the default "hold"' in progress


def test_the_terminal_prompt_shows_type_choices_default_and_asks_again(tmp_path):
    typed = io.StringIO("sure\nY\n3\n1\n")
    shown = io.StringIO()
    result, progress = _run(tmp_path, Hooks(interlocutor=terminal_interlocutor(typed, shown)))
    assert result.status == "ok", result.error
    assert result.output == "ship"
    text = shown.getvalue()
    assert "? [go › ask] Publish the digest?\n" in text
    assert "  answer: bool: yes or no (default: no); an empty line leaves it unanswered\n> " in text
    assert '  not accepted: "sure" is not of type "boolean"; try again\n> ' in text
    assert "  1) ship\n  2) hold\n" in text
    assert "answer: the number or the text of a choice (default: hold)" in text
    assert '  not accepted: 3 is not one of "ship" | "hold"; try again\n> ' in text
    assert "· answered true" in progress and '· answered "ship"' in progress
