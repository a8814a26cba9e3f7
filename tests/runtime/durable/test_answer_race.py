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


WAIT_PLAN = """\
version: 1
name: pgwait
steps:
  - id: E0
    tool_name: ask
    input: {question: "Which?"}
finish: {mode: output, output: "{{ E0.answer }}"}
"""


def test_on_postgresql_exactly_one_of_two_concurrent_answers_is_taken(
    postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim and its message on PostgreSQL: two answers at once, on two connections."""
    from agentflow.errors import InputError
    from agentflow.runtime.durable import runs

    (tmp_path / "plan.yaml").write_text(WAIT_PLAN)
    (tmp_path / "flow.toml").write_text(f'[durable]\ndatabase = "{postgres.url}"\n')
    monkeypatch.chdir(tmp_path)

    async def race_on_pg() -> tuple[list, object]:
        run = asyncio.create_task(
            agentflow.run(
                tmp_path / "plan.yaml", {}, config=tmp_path / "flow.toml", durable=True,
                run_id="pg-race",
            )
        )  # fmt: skip
        while not await runs.pending_questions(postgres.url, "pg-race"):
            assert not run.done(), run.result().error
            await asyncio.sleep(0.05)
        answers = await asyncio.gather(
            runs.answer(postgres.url, "pg-race", "E0", "a"),
            runs.answer(postgres.url, "pg-race", "E0", "b"),
            return_exceptions=True,
        )
        return answers, await asyncio.wait_for(run, 60)

    try:
        answers, result = asyncio.run(race_on_pg())
    finally:
        shutdown()
    taken = [v for v, a in zip("ab", answers, strict=True) if not isinstance(a, BaseException)]
    refused = [a for a in answers if isinstance(a, InputError)]
    assert len(taken) == 1 and len(refused) == 1, answers
    assert f'was already answered ("{taken[0]}")' in str(refused[0])
    assert result.output == taken[0]
