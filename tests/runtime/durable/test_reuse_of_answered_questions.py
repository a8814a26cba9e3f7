"""``redrive`` and ``run --reuse`` take a question the earlier run had answered, as they take
its finished steps: same step path, same text and choices → the recorded answer, not asked
again; a changed question, or ``--ask-again``, is asked.  ``flowc answer`` refuses a number too
large with ``--input``'s words, and ``redrive`` refuses a run that ended ok."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agentflow
from agentflow.errors import InputError
from agentflow.runtime.config import load_config
from agentflow.runtime.durable import runs
from agentflow.runtime.durable.dbos_engine import shutdown

PLAN = """\
version: 1
name: questions
input_schema: {type: object}
steps:
  - id: E0
    tool_name: ask
    input:
      question: "How many copies?"
      schema: {type: integer}
      when_unanswered: {fail: "nobody answered"}
  - id: E1
    tool_name: user__ship
    input: {n: "{{ E0.answer }}"}
finish: {mode: output, output: "{{ E1 }}"}
"""

TOOLS = """\
import os


def ship(n: int) -> int:
    \"\"\"Ship n copies (fails while the file `broken` exists).\"\"\"
    if os.path.exists(os.path.join(os.path.dirname(__file__), "broken")):
        raise RuntimeError("the printer is broken")
    return n
"""


@pytest.fixture
def project(tmp_path: Path):
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "plan.yaml").write_text(PLAN)
    (tmp_path / "flow.toml").write_text(
        '[tools]\nmodules = ["tools.py"]\n[durable]\ndatabase = "runs.sqlite"\n'
    )
    yield tmp_path
    shutdown()


async def _run(project: Path, run_id: str, answers: list[Any], **kw: Any) -> tuple[Any, list]:
    """Run plan.yaml durably as ``run_id``, answering each question it asks with the next of
    ``answers``; the result and the questions asked (path, text)."""
    url = runs.database_for(load_config(project / "flow.toml"))
    # the engine stays up while the loop below reads the questions: a run that started it
    # would stop it as it ends, under a read in progress
    runs.open_database(url, executor_id="test", queues=[])
    asked: list[tuple[str, str]] = []
    task = asyncio.ensure_future(
        agentflow.run(
            project / "plan.yaml", {}, config=project / "flow.toml", durable=True,
            run_id=run_id, **kw,
        )
    )  # fmt: skip
    pending = list(answers)
    seen: set[tuple[str, Any]] = set()
    while not task.done():
        await asyncio.sleep(0.05)
        if task.done() or not (project / "runs.sqlite").exists():
            continue
        for q in await runs.pending_questions(url, run_id):
            if (q.path, q.asked_at) in seen:  # answered; the run has not taken it yet
                continue
            seen.add((q.path, q.asked_at))
            asked.append((q.path, q.question))
            assert pending, f"asked {q.question!r} with no answer left"
            await runs.answer(url, run_id, q.path, pending.pop(0))
    return await task, asked


async def test_redrive_takes_an_answered_question_and_asks_a_changed_one(project: Path) -> None:
    (project / "broken").write_text("")
    first, asked = await _run(project, "q-1", ["3"])
    assert first.status == "error" and "printer is broken" in first.error.message
    assert asked == [("E0", "How many copies?")]

    (project / "broken").unlink()
    again, asked = await _run(project, "q-2", [], reuse="q-1")  # as `flowc redrive q-1`
    assert again.status == "ok", again.error
    assert asked == []  # the answer 3 was taken, not asked for
    assert again.output == 3

    asked_again, asked = await _run(project, "q-3", ["5"], reuse="q-1", ask_again=True)
    assert asked == [("E0", "How many copies?")] and asked_again.output == 5

    (project / "plan.yaml").write_text(PLAN.replace("How many copies?", "How many, now?"))
    changed, asked = await _run(project, "q-4", ["7"], reuse="q-1")
    assert asked == [("E0", "How many, now?")] and changed.output == 7


async def test_an_answer_too_large_for_a_number_is_refused_as_input_refuses_it(
    project: Path,
) -> None:
    url = runs.database_for(load_config(project / "flow.toml"))
    task = asyncio.ensure_future(
        agentflow.run(
            project / "plan.yaml", {}, config=project / "flow.toml", durable=True, run_id="n-1"
        )
    )
    while not (project / "runs.sqlite").exists() or not await runs.pending_questions(url, "n-1"):
        assert not task.done(), task.result()
        await asyncio.sleep(0.05)
    with pytest.raises(InputError) as refused:
        await runs.answer(url, "n-1", "E0", "1e999")
    with pytest.raises(InputError) as as_input:
        agentflow.api.parse_input("1e999")
    assert str(refused.value) == "answer to `How many copies?`: `1e999` is too large for a number"
    assert str(as_input.value).endswith("`1e999` is too large for a number")
    await runs.answer(url, "n-1", "E0", "2")
    assert (await task).output == 2

    # the run ended ok: redrive has nothing to run again, and says what would
    with pytest.raises(InputError) as ended:
        await runs.recorded_spec(url, "n-1", redrive=True)
    assert str(ended.value).startswith("run n-1 ended ok: nothing to redrive")
    assert f"flowc run {project / 'plan.yaml'} --reuse n-1" in str(ended.value)
    cli = subprocess.run(
        [sys.executable, "-m", "agentflow", "redrive", "n-1"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 1 and "run n-1 ended ok: nothing to redrive" in cli.stderr, cli.stderr
    assert "Traceback" not in cli.stderr


def test_ask_again_without_reuse_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(PLAN)
    done = subprocess.run(
        [sys.executable, "-m", "agentflow", "run", "--ask-again", "plan.yaml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--ask-again goes with --reuse RUN" in done.stderr


def test_a_number_too_large_typed_at_the_terminal_or_in_a_form_is_kept_as_text() -> None:
    from agentflow.runtime.hooks import AskRequest, _parse_answer
    from agentflow.serve_asks import _form_answer

    request = AskRequest("How many?", {"type": "integer"}, None, "E0", [])
    assert _parse_answer("1e999", request) == "1e999"  # then "not of type 'integer'", not inf
    assert _parse_answer("12", request) == 12
    form = {"properties": {"answer": {"type": "string", "description": "JSON text"}}}
    assert _form_answer(form, "NaN") == "NaN"
