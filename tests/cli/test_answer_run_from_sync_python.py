"""``agentflow.answer_run`` is a coroutine (docs/durable.md said ``agentflow.answer_run(run_id,
step, value)`` with no ``await``: called so, it answered nothing and the run kept waiting, with
only a "never awaited" warning).  ``agentflow.answer_run_sync`` is its synchronous twin, for a
script: it answers a real ``flowc run --durable`` waiting on its question, by the ask's name.
Inside a running event loop it refuses clearly, naming the coroutine to await."""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from pathlib import Path

import pytest
from support.durable_questions import start_flowc, wait_asked

import agentflow
from agentflow.errors import InputError
from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
flow approve
input { title: text }

stage ok -> bool {
  let go = ask "Publish ${input.title}?" expect bool
  return go
}
"""


def test_answer_run_sync_answers_a_waiting_durable_run_by_name(tmp_path: Path):
    (tmp_path / "approve.flow").write_text(FLOW)
    (tmp_path / "flow.toml").write_text('[durable]\nask_timeout = "1h"\n')
    db = tmp_path / ".flowc" / "durable.sqlite"
    run = start_flowc(
        tmp_path, "run", "approve.flow", "--durable", "--run-id", "a1",
        "--input", '{"title": "news"}', env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    try:
        wait_asked(db, "a1", run)
        try:
            assert agentflow.answer_run_sync("a1", "go", "yes", database=str(db)) is None
            out, err = run.communicate(timeout=120)
            assert run.returncode == 0, err.decode()
            assert json.loads(out) is True
            with pytest.raises(InputError, match="was already answered"):
                agentflow.answer_run_sync("a1", "go", "no", database=str(db))
        finally:
            shutdown()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(timeout=60)


def test_answer_run_sync_in_a_running_loop_names_the_coroutine_to_await():
    async def main() -> None:
        agentflow.answer_run_sync("a1", "go", "yes", database="unused.sqlite")

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited" on top of the error
        with pytest.raises(RuntimeError, match=r"await agentflow\.answer_run\(\.\.\.\)") as info:
            asyncio.run(main())
    assert "agentflow.answer_run_sync() cannot be called while an event loop" in str(info.value)
