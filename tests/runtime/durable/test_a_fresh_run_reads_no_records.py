"""What a durable run started here skips (issue 35, docs/decisions.md "The durable agent run"):
the `.flow` is compiled once — the plan that runs is the one loaded, its canonical YAML is what
the run records, and loading that text again gives an equal plan — and the root of a run this
process just inserted reads no records (nothing can be recorded yet), while a body given any
other input object (recovered, dequeued: read from the database) reads them."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

import pytest
from support.paths import EXAMPLES

import agentflow
from agentflow import api
from agentflow.errors import CompileError, InputError, NotAPlan
from agentflow.ir.dump import dump_plan
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.durable import dbos_engine, items
from agentflow.runtime.durable.database import database_for, open_database

PLAN = """\
version: 1
name: steps
input_schema: {type: object}
steps:
  - {id: E0, tool_name: user__note, input: {n: 1}}
  - {id: E1, tool_name: user__note, input: {n: "{{ E0 }}"}}
finish: {mode: output, output: "{{ [E0, E1] }}"}
"""

TOOLS = '''\
def note(n: int) -> int:
    """Return 2n."""
    return 2 * n
'''


def test_the_recorded_text_of_a_flow_loads_to_the_plan_that_runs():
    checked = 0
    for flow in sorted(EXAMPLES.rglob("*.flow")):
        try:
            plan = api.load(flow)
        except CompileError:
            continue  # an example that needs its project (a catalog, a plans directory)
        except NotAPlan:
            continue  # a library of types (programs.md "Libraries")
        text = dump_plan(plan)
        assert text == api.plan_text(flow)[0], flow  # as if compiled again
        assert load_plan_text(text, str(flow)).model_dump() == plan.model_dump(), flow
        checked += 1
    assert checked >= 5


def test_a_run_started_here_reads_no_records_and_any_other_body_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plan.yaml").write_text(PLAN)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\nentry_points = false\n')
    monkeypatch.chdir(tmp_path)
    reads: list[str] = []
    read = items.ItemRecords._read

    def counted(self: items.ItemRecords, workflow_id: str) -> items.Recorded:
        reads.append(workflow_id)
        return read(self, workflow_id)

    monkeypatch.setattr(items.ItemRecords, "_read", counted)
    config = load_config(str(tmp_path / "flow.toml"))
    url = database_for(config)
    open_database(url, executor_id="test", queues=[])
    try:
        result = asyncio.run(
            agentflow.run(tmp_path / "plan.yaml", {}, config=config, durable=True, run_id="r1")
        )
        assert result.status == "ok" and result.output == [2, 4], result.error
        assert reads == []  # a run this process inserted: nothing to read
        # the same id again: the run exists, so it is refused (docs/durable.md: a taken id),
        # and no body runs here
        with pytest.raises(InputError, match="exists already"):
            asyncio.run(
                agentflow.run(tmp_path / "plan.yaml", {}, config=config, durable=True, run_id="r1")
            )
        assert reads == []

        async def bodies() -> None:
            spec = {"plan_text": PLAN}
            with dbos_engine.starting("r2", spec):
                # an equal spec read from the database (a recovered body) reads
                await dbos_engine._note_recorded("r2", copy.deepcopy(spec))
                assert reads == ["r2"]
                await dbos_engine._note_recorded("r2", spec)  # the very object: skipped
                assert reads == ["r2"]
                await dbos_engine._note_recorded("r2", spec)  # once only
                assert reads == ["r2", "r2"]

        asyncio.run(bodies())
    finally:
        dbos_engine.shutdown()
