"""Two `flowc answer` processes with different values at the same moment (issue 28): exactly
one is accepted and says `answered`, the other is told the question was already answered (with
the accepted value, exit 1), and the run uses the accepted value.  Three pairs here;
bench/answer_race.py runs a hundred."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.answer_race import race

import agentflow
from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown


def test_of_two_concurrent_answers_exactly_one_is_taken_and_the_other_is_told(tmp_path):
    result = race(tmp_path, 3)
    assert result.wrong == []
    assert result.right == 3


PLAN = """\
version: 1
name: late
steps:
  - id: E0
    tool_name: ask
    input: {question: "Quick?", when_unanswered: {default: "none"}}
    timeout: 200ms
  - id: E1
    tool_name: ask
    input: {question: "Again?", when_unanswered: {default: "none"}}
    timeout: 200ms
finish: {mode: output, output: "{{ [E0.answer, E1.answer] }}"}
"""


def test_an_answer_after_the_wait_ended_is_refused_and_the_run_keeps_its_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question whose wait timed out is closed unanswered (claimed by the run itself): an
    answer arriving later is told so, never silently dropped."""
    (tmp_path / "plan.yaml").write_text(PLAN)
    monkeypatch.chdir(tmp_path)
    try:
        result = asyncio.run(agentflow.run(tmp_path / "plan.yaml", {}, durable=True, run_id="late"))
        assert result.output == ["none", "none"], result.error
        late = CliRunner().invoke(main, ["answer", "late", "E1", "yes"])
        assert late.exit_code == 1
        assert "the question of run late at 'E1' was already closed unanswered" in late.stderr
    finally:
        shutdown()
