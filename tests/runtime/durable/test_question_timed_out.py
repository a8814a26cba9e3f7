"""A published question says whether its timeout ran out (``asked_at + timeout`` past), which
``flowc runs``, ``runs show`` and ``flowc ui`` show for a run no process runs — on both engines,
from the one place their questions are made (run_info.published_questions)."""

from __future__ import annotations

import time

from agentflow.runtime.durable.run_info import published_questions
from agentflow.ui.pages import question_form


def _published(asked_at: float, timeout: float | None) -> dict:
    return {
        "question:E1": {
            "question": "Ship it?",
            "path": "E1",
            "operation": "E1/ask#1",
            "asked_at": asked_at,
            "timeout": timeout,
        }
    }


def test_a_question_past_its_deadline_is_timed_out_and_one_before_it_or_without_one_is_not():
    now = time.time()
    (late,) = published_questions("r", "r", _published(now - 10, 5.0))
    (early,) = published_questions("r", "r", _published(now, 3600.0))
    (forever,) = published_questions("r", "r", _published(now - 10, None))
    assert (late.timed_out, early.timed_out, forever.timed_out) == (True, False, False)
    assert "its timeout ran out" in question_form(late, "t")
    assert "timeout ran out" not in question_form(early, "t")
