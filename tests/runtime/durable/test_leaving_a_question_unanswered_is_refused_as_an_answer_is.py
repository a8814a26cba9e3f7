"""Leaving a question unanswered (``flowc serve``'s "leave it unanswered": ``runs.unanswered``)
is refused in the words an answer is (``flowc answer``, ``runs.answer``), on DBOS as on
Temporal: a run that has ended says so with its status (``ok``, ``cancelled``), an unknown run
is said to be unknown, a question answered already says its answer, and only a run still
waiting elsewhere is told the question is not waiting (with the ones that are).  DBOS used to
say ``has no question waiting`` of every one of them when leaving it unanswered."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.durable_questions import flowc, start_flowc

from agentflow.errors import InputError
from agentflow.runtime.config import load_config
from agentflow.runtime.durable import runs
from agentflow.runtime.durable.dbos_engine import shutdown

_queues = itertools.count()

ASKS = 'flow a "asks"\nstage s -> int {\n  let n = ask "How many?" expect int\n  return n\n}\n'
DONE = 'flow d "done"\nstage s -> int {\n  return 1\n}\n'


async def _refusals(url: str, run_id: str, step: str) -> tuple[str, str]:
    """What leaving the question of ``run_id`` at ``step`` unanswered, then answering it, is
    told (each must be refused)."""
    said: list[str] = []
    for close in (
        lambda: runs.unanswered(url, run_id, step),
        lambda: runs.answer(url, run_id, step, 3),
    ):
        with pytest.raises(InputError) as refused:
            await close()
        said.append(str(refused.value))
    return said[0], said[1]


async def _until_waiting(url: str, run_id: str, proc: subprocess.Popen[bytes]) -> None:
    """Wait until ``run_id`` waits on its question (the process ``proc`` runs it)."""
    for _ in range(1200):
        if proc.poll() is not None:
            raise AssertionError(proc.communicate()[1].decode()[-2000:])
        try:
            if await runs.pending_questions(url, run_id):
                return
        except InputError:  # not recorded yet
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} never asked")


def _ended(proc: subprocess.Popen[bytes]) -> None:
    proc.communicate(timeout=120)


@pytest.mark.parametrize("engine", ["dbos", "temporal"])
def test_leaving_a_question_unanswered_is_refused_as_an_answer_is(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    (tmp_path / "a.flow").write_text(ASKS)
    (tmp_path / "d.flow").write_text(DONE)
    if engine == "temporal":
        server = request.getfixturevalue("temporal_server")
        (tmp_path / "flow.toml").write_text(
            f'[durable]\nengine = "temporal"\naddress = "{server.address}"\n'
            f'task_queue = "unanswered{os.getpid()}-{next(_queues)}"\n'
        )
    else:
        (tmp_path / "flow.toml").write_text("")
    env = {**os.environ, "NO_COLOR": "1"}
    ran = subprocess.run(
        flowc("run", "d.flow", "--durable", "--run-id", "lu-d1"), cwd=tmp_path, capture_output=True
    )
    assert ran.returncode == 0, ran.stderr.decode()
    url = runs.database_for(load_config(tmp_path / "flow.toml"))
    answered = start_flowc(tmp_path, "run", "a.flow", "--durable", "--run-id", "lu-a1", env=env)
    cancelled = start_flowc(tmp_path, "run", "a.flow", "--durable", "--run-id", "lu-a2", env=env)
    waiting = start_flowc(tmp_path, "run", "a.flow", "--durable", "--run-id", "lu-a3", env=env)

    async def scenario() -> dict[str, tuple[str, str]]:
        for run_id, proc in (("lu-a1", answered), ("lu-a2", cancelled), ("lu-a3", waiting)):
            await _until_waiting(url, run_id, proc)
        await runs.answer(url, "lu-a1", "E0", 3)
        await asyncio.to_thread(_ended, answered)
        await runs.cancel(url, "lu-a2")
        await asyncio.to_thread(_ended, cancelled)
        said = {
            "ok": await _refusals(url, "lu-d1", "E0"),
            "answered": await _refusals(url, "lu-a1", "E0"),
            "cancelled": await _refusals(url, "lu-a2", "E0"),
            "unknown": await _refusals(url, "nope", "E0"),
            "elsewhere": await _refusals(url, "lu-a3", "E9"),
        }
        await runs.cancel(url, "lu-a3")
        return said

    try:
        said = asyncio.run(scenario())
    finally:
        shutdown()
        for proc in (answered, cancelled, waiting):
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
    for case, (unanswered, answer) in said.items():
        assert unanswered == answer, case  # the same words either way
    ended = "no question of it waits for an answer, at 'E0' or elsewhere"
    assert said["ok"][0] == f"run lu-d1 has ended (ok): {ended}"
    assert said["cancelled"][0] == f"run lu-a2 has ended (cancelled): {ended}"
    assert said["answered"][0] == (
        "the question of run lu-a1 at 'E0' was already answered (3): this answer was not taken"
    )
    assert said["unknown"][0].startswith("no durable run 'nope' in ")
    assert said["elsewhere"][0].startswith(
        "run lu-a3 has no question waiting at 'E9' (waiting: s › n = ask · E0)"
    )


def test_an_answer_by_name_to_a_cancelled_run_names_the_question_as_written(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.flow").write_text(ASKS)
    (tmp_path / "flow.toml").write_text("")
    proc = start_flowc(tmp_path, "run", "a.flow", "--durable", "--run-id", "lu-a2")
    url = runs.database_for(load_config(tmp_path / "flow.toml"))

    async def cancel() -> None:
        await _until_waiting(url, "lu-a2", proc)
        await runs.cancel(url, "lu-a2")

    try:
        asyncio.run(cancel())
    finally:
        shutdown()
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    refused: Any = subprocess.run(
        flowc("answer", "lu-a2", "n", "3"), cwd=tmp_path, capture_output=True
    )
    assert refused.returncode == 1
    assert "run lu-a2 has ended (cancelled): no question of it waits for an answer, at 'n' " in (
        refused.stderr.decode()
    )
