"""`flowc answer` in the user's terms: a run that has ended is said to have ended (its status),
not to wait on no question (`waiting: none`); and a `parallel` branch that is an `ask` is named
by the branch's name (`flowc answer RUN a 3` for `parallel { a: ask "How many?" … }`), as a
question bound to a `let` is by the let's name (docs/reference/cli.md "flowc answer").  Both
engines say the same of an ended run, with the same exit code (Temporal used to say
`waiting: none`)."""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

import pytest
from support.durable_questions import flowc, start_flowc, wait_asked

from agentflow.runtime.durable.answers import as_written, written_as
from agentflow.runtime.durable.run_info import (
    Question,
    answer_name,
    ended_message,
    question_path,
)

_queues = itertools.count()


@pytest.mark.parametrize("engine", ["dbos", "temporal"])
def test_answering_a_run_that_ended_says_it_ended(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    (tmp_path / "d.flow").write_text('flow d "done"\nstage s -> int {\n  return 1\n}\n')
    if engine == "temporal":
        server = request.getfixturevalue("temporal_server")
        (tmp_path / "flow.toml").write_text(
            f'[durable]\nengine = "temporal"\naddress = "{server.address}"\n'
            f'task_queue = "ended{os.getpid()}-{next(_queues)}"\n'
        )
    ran = subprocess.run(
        flowc("run", "d.flow", "--durable", "--run-id", "d1"), cwd=tmp_path, capture_output=True
    )
    assert ran.returncode == 0, ran.stderr.decode()
    answered = subprocess.run(flowc("answer", "d1", "E0/a", "3"), cwd=tmp_path, capture_output=True)
    err = answered.stderr.decode()
    assert answered.returncode == 1
    assert "run d1 has ended (ok)" in err and "waiting: none" not in err, err


def _branch(path: str, name: str) -> Question:
    return Question(
        run_id="q2", workflow_id="q2", key=f"question:{path}", path=path, question="How many?",
        label=f"s › parallel › {name} › ask",
    )  # fmt: skip


def test_a_parallel_branch_that_asks_is_answered_by_the_branch_name() -> None:
    pending = [_branch("E0/a", "a"), _branch("E0/b", "b")]
    assert question_path(pending, "a", "q2") == "E0/a"
    assert question_path(pending, "b", "q2") == "E0/b"
    others = [(q.path, q.label) for q in pending]
    assert answer_name("E0/a", pending[0].label, others) == "a"  # the hint names it so


def test_answering_a_cancelled_run_by_name_names_the_ask_as_written(tmp_path: Path) -> None:
    # `flowc answer s2 j 1` after `flowc cancel s2`: the ask is named `j` (the let the user
    # wrote), not by the compiled step path the name was resolved to (`E0`); Temporal says the
    # same words (ended_message, the last test)
    (tmp_path / "ask5.flow").write_text(
        'flow a "asks"\nstage s -> int {\n  let j = ask "How many?" expect int\n  return j\n}\n'
    )
    run = start_flowc(tmp_path, "run", "ask5.flow", "--durable", "--run-id", "s2")
    try:
        wait_asked(tmp_path / ".flowc" / "durable.sqlite", "s2", run)
        cancelled = subprocess.run(flowc("cancel", "s2"), cwd=tmp_path, capture_output=True)
        assert cancelled.returncode == 0, cancelled.stderr.decode()
        run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    answered = subprocess.run(flowc("answer", "s2", "j", "1"), cwd=tmp_path, capture_output=True)
    err = answered.stderr.decode()
    assert answered.returncode == 1
    assert "run s2 has ended (cancelled)" in err, err
    assert "at 'j' or elsewhere" in err and "E0" not in err, err


def test_the_ended_run_message_names_a_question_as_the_user_wrote_it() -> None:
    # the words every engine (DBOS, Temporal) says, the step named through as_written: the
    # step path a name was resolved to is shown as that name
    token = written_as.set({"E1": "j"})
    try:
        said = ended_message("s2", "cancelled", as_written("E1"))
        given = ended_message("s2", "ok", as_written("E1/a"))
    finally:
        written_as.reset(token)
    assert said.endswith("at 'j' or elsewhere") and "E1" not in said, said
    assert given.endswith("at 'E1/a' or elsewhere")  # a path given as such stays as given
