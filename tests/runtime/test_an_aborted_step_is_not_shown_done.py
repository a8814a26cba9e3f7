"""A step stopped by ``RunAborted`` (``flowc cancel`` of a question waited on, a map stopped by
a cancel, a hook's ``abort``) ends with ``step_finished`` carrying ``aborted``, not ``error``:
the console shows it ✗ with its reason, never ✓ (round 41)."""

from __future__ import annotations

import io

from agentflow.runtime.events import ConsoleSink, EventBus


def _shown(**data: object) -> str:
    stream = io.StringIO()
    bus = EventBus([ConsoleSink(stream, force_plain=True)])
    bus.emit("step_finished", "E0", ["askit"], tool_name="ask", elapsed_ms=5040, **data)
    return stream.getvalue()


def test_a_cancelled_question_step_is_shown_aborted_not_done():
    out = _shown(
        aborted="the run was cancelled (flowc cancel)",
        label="s › a = ask",
        source="ask.flow:3:11",
    )
    assert "✓" not in out
    assert "✗ s › a = ask  ask.flow:3:11  5.04s  aborted: the run was cancelled" in out


def test_an_aborted_step_of_a_hand_written_plan_is_shown_aborted_too():
    out = _shown(aborted="stopped by the hook")
    assert "✓" not in out and "✗ E0 5.04s aborted: stopped by the hook" in out


def test_a_step_that_finished_is_still_shown_done():
    assert "✓ s › a = ask" in _shown(result=7, label="s › a = ask")
