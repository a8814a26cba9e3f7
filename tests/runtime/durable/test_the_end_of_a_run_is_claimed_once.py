"""The end of a durable run is claimed once (docs/durable.md "A cancel that comes late"): by its
root as it finishes, before its `run_finished`, or by `flowc cancel` before it cancels anything,
whichever comes first (runtime/durable/answers.py ``claim_end``).  In process, on a real SQLite
database: a root that finds the cancel's claim ends `cancelled` with no output — its result,
its trace and the record alike — and a cancel that comes after the root's claim finds it.
The race itself, a real `flowc cancel` during a run's last tool call, is
test_cancel_and_sigterm_close_the_run.py's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import agentflow
from agentflow.runtime.config import load_config
from agentflow.runtime.durable import dbos_engine
from agentflow.runtime.durable.answers import CANCEL, FINISHED, claim_end
from agentflow.runtime.durable.database import database_for, open_database
from agentflow.runtime.durable.management import list_runs

FLOW = """\
flow late "a run whose end is claimed"
extern tool user__inc(n: int) -> int
stage s -> int {
  let a = user__inc(n: 1)
  return a * 2
}
"""

TOOLS = '''\
from agentflow import tool


@tool
def inc(n: int) -> int:
    """n + 1."""
    return n + 1
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "late.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\nentry_points = false\n')
    monkeypatch.chdir(tmp_path)
    config = load_config(str(tmp_path / "flow.toml"))
    url = database_for(config)
    open_database(url, executor_id="test", queues=[])
    yield tmp_path, config, url
    dbos_engine.shutdown()


def _run(project: Path, config, run_id: str, trace: str):
    run = agentflow.run(
        project / "late.flow", {}, config=config, durable=True, run_id=run_id, trace=trace
    )
    return asyncio.run(asyncio.wait_for(run, 60))


def test_a_root_that_finds_the_cancels_claim_ends_cancelled_with_no_output(project):
    path, config, url = project
    # `flowc cancel` claimed the run's end first (its units' cancel not come yet: the root
    # notices nothing before its end)
    assert asyncio.run(claim_end("late-1", CANCEL)) == CANCEL
    result = _run(path, config, "late-1", "t1.jsonl")
    assert (result.status, result.output) == ("cancelled", None), result
    assert result.error is not None and result.error.code == "aborted"
    assert result.results == {"E0": 2}  # the steps it finished are kept, as for any stop
    last = json.loads((path / "t1.jsonl").read_text().splitlines()[-1])
    assert last["kind"] == "run_finished"
    assert (last["data"]["status"], last["data"]["output"]) == ("cancelled", None), last
    (info,) = [i for i in asyncio.run(list_runs(url)) if i.run_id == "late-1"]
    assert (info.status, info.output) == ("cancelled", None), info


def test_a_cancel_after_the_roots_claim_finds_the_run_finished(project):
    path, config, url = project
    result = _run(path, config, "late-2", "t2.jsonl")
    assert (result.status, result.output) == ("ok", 4), result
    assert asyncio.run(claim_end("late-2", CANCEL)) == FINISHED  # the cancel is refused
    assert asyncio.run(claim_end("late-2", FINISHED)) == FINISHED  # a resumed root: the same
