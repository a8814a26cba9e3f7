"""Rows written behind share a transaction (issue 35, docs/decisions.md "The durable agent run,
again"): the records of ordered operations, which nobody waits for, are held a moment
(``items.BEHIND_S``) so the next calls' records join their batch; a flush — the unit's next
engine operation (here a non-idempotent tool's "begin" marker) or its end — writes them at once,
and a one-call unit's record, which its unit waits for, is never held."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from support.durable_project import NOTE_STEPS, open_durable_project

import agentflow
from agentflow.runtime.durable import dbos_engine, items

SEQUENCE = """\
version: 1
name: sequence
input_schema: {type: object}
steps:
  - {id: E0, tool_name: user__note, input: {n: 1}}
  - {id: E1, tool_name: user__note, input: {n: "{{ E0 }}"}}
  - {id: E2, tool_name: user__note, input: {n: "{{ E1 }}"}}
  - {id: E3, tool_name: user__send, input: {n: "{{ E2 }}"}}
  - {id: E4, tool_name: user__note, input: {n: "{{ E3 }}"}}
finish: {mode: output, output: "{{ [E0, E1, E2, E3, E4] }}"}
"""

MAP = """\
version: 1
name: items
input_schema: {type: object}
steps:
  - id: E0
    tool_name: map
    input:
      over: [1, 2, 3]
      concurrency: 2
      do: {tool_name: user__note, input: {n: "{{ item }}"}}
"""

TOOLS = '''\
from agentflow import tool


@tool
def note(n: int) -> int:
    """Return 2n."""
    return 2 * n


@tool(idempotent=False)
def send(n: int) -> int:
    """Send n (not to be repeated)."""
    return n + 1
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    files = {"sequence.yaml": SEQUENCE, "items.yaml": MAP, "tools.py": TOOLS}
    config = open_durable_project(tmp_path, monkeypatch, files)
    yield tmp_path, config
    dbos_engine.shutdown()


def _run(project: Path, config, plan: str, run_id: str) -> tuple[object, int, int]:
    """Run ``plan`` durably (within 20 s); the result and the transactions and rows of item
    records it wrote."""
    before = dict(items.WRITTEN)
    run = agentflow.run(project / plan, {}, config=config, durable=True, run_id=run_id)
    result = asyncio.run(asyncio.wait_for(run, 20))
    return (
        result,
        items.WRITTEN["transactions"] - before["transactions"],
        items.WRITTEN["rows"] - before["rows"],
    )


def test_ordered_records_share_a_transaction_up_to_the_next_engine_operation(project, monkeypatch):
    # a hold longer than the run (and than _run's 20 s): only a flush ends it
    monkeypatch.setattr(items, "BEHIND_S", 60.0)
    path, config = project
    result, transactions, rows = _run(path, config, "sequence.yaml", "seq-1")
    assert result.status == "ok" and result.output == [2, 4, 8, 9, 18], result.error
    # E0-E2 in one transaction, written at once before E3's "begin" marker (an engine step:
    # a non-idempotent call starts only once everything before it is recorded); E4 in another,
    # written as the run ends
    assert (transactions, rows) == (2, 4)


def test_a_one_call_unit_never_waits_for_the_hold(project, monkeypatch):
    monkeypatch.setattr(items, "BEHIND_S", 60.0)
    path, config = project
    result, _, rows = _run(path, config, "items.yaml", "map-1")
    assert result.status == "ok" and result.output == [2, 4, 6], result.error
    assert rows == 3  # each item's call, recorded before its unit went on


NOTES = NOTE_STEPS


def test_a_runs_end_claim_commits_with_its_last_records(project, monkeypatch):
    # the root's end claim (answers.end_claim_in) joins the batch of the records written
    # behind: the run's last records and its end are one transaction, not two
    from sqlalchemy import event

    from agentflow.runtime.durable.dbos_system import system_database

    # a hold longer than the run: the rows wait for the end (a loaded machine would otherwise
    # let the 20 ms hold pass and write them before the claim comes)
    monkeypatch.setattr(items, "BEHIND_S", 60.0)
    path, config = project
    (path / "notes.yaml").write_text(NOTES)
    engine = system_database().engine
    statements: list[str] = []
    transactions: list[list[str]] = []

    def on_execute(conn, cursor, statement, params, context, many):
        statements.append(statement)

    def on_commit(conn):
        transactions.append(list(statements))
        statements.clear()

    event.listen(engine, "before_cursor_execute", on_execute)
    event.listen(engine, "commit", on_commit)
    try:
        result, _, rows = _run(path, config, "notes.yaml", "notes-1")
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)
        event.remove(engine, "commit", on_commit)
    assert result.status == "ok" and result.output == 4, result.error
    assert rows == 2
    together = [
        t
        for t in transactions
        if any("agentflow_items" in s for s in t) and any("agentflow_answers" in s for s in t)
    ]
    assert len(together) == 1, transactions
    claims = [s for t in transactions for s in t if s.startswith("INSERT INTO agentflow_answers")]
    assert len(claims) == 1  # the end is claimed once


def _statements_of(run: Callable[[], object]) -> tuple[object, list[tuple[int, str]]]:
    """``run()``'s result and every statement the engine's connections executed meanwhile,
    each with the ``synchronous`` level its connection ran at (1 NORMAL, 2 FULL)."""
    from sqlalchemy import event

    from agentflow.runtime.durable.dbos_system import system_database

    engine = system_database().engine
    seen: list[tuple[int, str]] = []

    def on_execute(conn, cursor, statement, params, context, many):
        level = cursor.connection.execute("PRAGMA synchronous").fetchone()[0]
        seen.append((level, statement))

    event.listen(engine, "before_cursor_execute", on_execute)
    try:
        return run(), seen
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)


def test_records_written_behind_leave_their_fsync_to_the_next_full_commit(project):
    # at synchronous=full (the default), a batch of rows nobody waits for (and the end claim
    # joining it) is committed at NORMAL: the run's outcome, a full commit of the same WAL,
    # follows it and syncs it (dbos_system.begin_behind); a connection checked out after it
    # is FULL again, with no statement of the batch's own to switch it
    from agentflow.runtime.durable.dbos_system import system_database

    path, config = project
    (path / "notes.yaml").write_text(NOTES)
    (result, _, _), seen = _statements_of(lambda: _run(path, config, "notes.yaml", "notes-2"))
    assert result.status == "ok", result.error
    batch = next(i for i, (_, s) in enumerate(seen) if s.startswith("INSERT INTO agentflow_items"))
    assert seen[batch][0] == 1
    claim = next(
        i for i, (_, s) in enumerate(seen) if s.startswith("INSERT INTO agentflow_answers")
    )
    assert claim > batch and seen[claim][0] == 1  # in the batch's transaction
    outcome = next(i for i, (_, s) in enumerate(seen) if "workflow_output" in s and i > batch)
    assert seen[outcome][0] == 2  # the outcome is committed at FULL, after the batch
    assert not [s for _, s in seen if s.startswith("PRAGMA")]
    with system_database().engine.connect() as conn:  # a connection checked out: FULL (2)
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2


def test_a_one_call_units_record_is_a_full_commit_of_its_own(project):
    # a map item's record is waited for by its unit (its ✓ says it is recorded): never relaxed
    path, config = project
    (result, _, _), seen = _statements_of(lambda: _run(path, config, "items.yaml", "map-2"))
    assert result.status == "ok", result.error
    levels = [level for level, s in seen if s.startswith("INSERT INTO agentflow_items")]
    assert levels and set(levels) == {2}, levels  # the end claim alone may be NORMAL


def test_at_normal_nothing_is_switched(tmp_path, monkeypatch):
    files = {"notes.yaml": NOTES, "tools.py": TOOLS}
    config = open_durable_project(
        tmp_path, monkeypatch, files, '[durable]\nsynchronous = "normal"\n'
    )
    try:
        (result, _, _), seen = _statements_of(lambda: _run(tmp_path, config, "notes.yaml", "n-1"))
    finally:
        dbos_engine.shutdown()
    assert result.status == "ok", result.error
    assert seen and {level for level, _ in seen} == {1}


def test_next_commit_behind_relaxes_one_checkout_of_its_block_only(project):
    # the first connection checked out in the block — here on a thread it hands work to — runs
    # at NORMAL; the next one, one after the block and one a task made in the block takes
    # after it, at FULL
    from agentflow.runtime.durable.dbos_system import next_commit_behind, system_database

    engine = system_database().engine

    def level() -> int:
        with engine.connect() as conn:
            return int(conn.exec_driver_sql("PRAGMA synchronous").scalar())

    async def levels() -> list[int]:
        with next_commit_behind():
            first = await asyncio.to_thread(level)
            second = level()
        with next_commit_behind():
            later = asyncio.ensure_future(asyncio.to_thread(level))
        return [first, second, await later, level()]

    assert asyncio.run(levels()) == [1, 2, 2, 2]
