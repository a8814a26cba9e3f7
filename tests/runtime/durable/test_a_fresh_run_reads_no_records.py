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
from support.durable_project import NOTE_TOOLS, NOTES_PLAN, open_durable_project
from support.paths import EXAMPLES

import agentflow
from agentflow import api
from agentflow.errors import CompileError, InputError, NotAPlan
from agentflow.ir.dump import dump_plan
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.durable import dbos_engine, items


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
    reads: list[str] = []
    read = items.ItemRecords._read

    def counted(self: items.ItemRecords, workflow_id: str) -> items.Recorded:
        reads.append(workflow_id)
        return read(self, workflow_id)

    monkeypatch.setattr(items.ItemRecords, "_read", counted)
    config = open_durable_project(
        tmp_path, monkeypatch, {"plan.yaml": NOTES_PLAN, "tools.py": NOTE_TOOLS}
    )
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
            spec = {"plan_text": NOTES_PLAN}
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
