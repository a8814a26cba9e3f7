"""The private parts of DBOS that runtime/durable/dbos_engine.py reaches into, pinned: a DBOS
upgrade that renames or reshapes one fails here, by name, rather than in a crashed run."""

from __future__ import annotations

import inspect


def _parameters(fn: object) -> list[str]:
    return list(inspect.signature(fn).parameters)  # type: ignore[arg-type]


def test_the_parts_of_recovery_that_recover_run_uses_are_where_it_expects_them():
    from dbos._dbos import DBOSRegistry
    from dbos._shard_keys import bind_shard_keys
    from dbos._sys_db import GetPendingWorkflowsOutput, SystemDatabase
    from dbos._utils import GlobalParams

    assert _parameters(SystemDatabase.get_pending_workflows) == [
        "self",
        "executor_id",
        "app_version",
    ]
    assert _parameters(SystemDatabase.reenqueue_for_recovery) == [
        "self",
        "workflow_id",
        "executor_ids",
        "recovery_queue_name",
    ]
    assert "workflow_id_prefix" in _parameters(SystemDatabase.list_workflows)
    assert "shard_key" in _parameters(GetPendingWorkflowsOutput)
    assert _parameters(bind_shard_keys) == ["keys"]
    assert hasattr(GlobalParams, "app_version")
    # an in-memory queue polled by this process alone (the run's recovery queue)
    assert _parameters(DBOSRegistry._register_internal_queue) == ["self", "name", "limits"]
    assert "internal_queues" in dir(DBOSRegistry)
    # dbos_system.workflow_exists: a primary-key read of the status table on DBOS's engine
    assert SystemDatabase.tables.workflow_status.c.workflow_uuid.primary_key
    assert "self.engine" in inspect.getsource(SystemDatabase)


#: sha256 (first 16 hex digits) of the source of DBOS 3.4's ``Pending._wrap`` and
#: ``Pending.then``, which ``dbos_system.install_inline_then`` copies without the hop
_WRAP_SOURCE = "ed2dee2ae3a28d04"
_THEN_SOURCE = "324fb52640af6721"


def test_the_then_that_runs_without_a_hop_copies_the_dbos_it_runs_on():
    import hashlib

    from dbos._outcome import Pending

    from agentflow.runtime.durable.dbos_system import install_inline_then

    install_inline_then()
    dbos_then = getattr(Pending.then, "original", Pending.then)
    for fn, expected in ((Pending._wrap, _WRAP_SOURCE), (dbos_then, _THEN_SOURCE)):
        digest = hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:16]
        assert digest == expected, (
            f"DBOS's Pending.{fn.__name__} changed: check dbos_system.install_inline_then "
            "against it, then update the digest"
        )
    assert _parameters(Pending._raise) == ["ex"]


def test_then_calls_its_stage_after_the_body_with_one_hop_and_passes_errors_on(monkeypatch):
    import asyncio

    import pytest
    from dbos._outcome import Pending

    from agentflow.runtime.durable.dbos_system import install_inline_then

    install_inline_then()
    hops: list[object] = []
    to_thread = asyncio.to_thread

    async def counted(fn, *args):
        hops.append(fn)
        return await to_thread(fn, *args)

    monkeypatch.setattr(asyncio, "to_thread", counted)

    async def body() -> int:
        return 3

    async def failing() -> int:
        raise ValueError("the body failed")

    assert asyncio.run(Pending(body).then(lambda get: get() + 1)()) == 4
    assert len(hops) == 1  # the stage itself, on a thread; no hop before the body
    with pytest.raises(ValueError, match="the body failed"):
        asyncio.run(Pending(failing).then(lambda get: get())())


def test_the_clock_in_sql_that_counts_milliseconds_on_sqlite_replaces_dbos_own():
    from dbos._sys_db import SystemDatabase

    from agentflow.runtime.durable.dbos_system import install_precise_sqlite_clock

    install_precise_sqlite_clock()
    # dbos_system.install_precise_sqlite_clock wraps this method: DBOS's clock in SQL for a
    # workflow's updated_at / completed_at (whole seconds on SQLite before Python 3.12)
    original = getattr(SystemDatabase._now_ms_sql, "original", None)
    assert original is not None and _parameters(original) == ["self"]
    assert "updated_at=self._now_ms_sql()" in inspect.getsource(SystemDatabase)


#: sha256 (first 16 hex digits) of the source of DBOS 3.4's ``SystemDatabase._execute_prepared``,
#: whose PostgreSQL path ``dbos_system.install_prepared_sqlite`` takes on SQLite too, and of its
#: ``_update_workflow_outcome_in_transaction``, whose statements it compiles once
_EXECUTE_PREPARED_SOURCE = "ad865125d57bd1dd"
_OUTCOME_SOURCE = "e555fad129a51d8b"


def test_the_statements_compiled_once_on_sqlite_follow_the_dbos_they_run_on():
    import hashlib

    from dbos._schemas import SCHEMA_PLACEHOLDER
    from dbos._sys_db import SystemDatabase

    from agentflow.runtime.durable.dbos_system import install_prepared_sqlite

    install_prepared_sqlite()
    for name, expected in (
        ("_execute_prepared", _EXECUTE_PREPARED_SOURCE),
        ("_update_workflow_outcome_in_transaction", _OUTCOME_SOURCE),
    ):
        original = getattr(getattr(SystemDatabase, name), "original", None)
        assert original is not None, f"install_prepared_sqlite did not wrap {name}"
        digest = hashlib.sha256(inspect.getsource(original).encode()).hexdigest()[:16]
        assert digest == expected, (
            f"DBOS's SystemDatabase.{name} changed: check dbos_system.install_prepared_sqlite "
            "against it, then update the digest"
        )
    assert _parameters(SystemDatabase._execute_prepared.original) == [
        "self", "conn", "name", "values", "build", "insert_columns"
    ]  # fmt: skip
    assert _parameters(SystemDatabase._reject_shard_key) == ["workflow_id", "shard_key"]
    assert "self._key_conflict" in inspect.getsource(SystemDatabase)
    assert SCHEMA_PLACEHOLDER is not None
    init = inspect.getsource(SystemDatabase.__init__)
    assert "self._prepared_statements" in init and "self._is_sqlite =" in init


def test_a_durable_run_on_sqlite_inserts_and_ends_through_statements_compiled_once(
    tmp_path, monkeypatch
):
    import asyncio
    import sqlite3

    from support.durable_project import NOTE_TOOLS, NOTES_PLAN, open_durable_project

    import agentflow
    from agentflow.runtime.durable import dbos_engine
    from agentflow.runtime.durable.dbos_system import system_database

    files = {"notes.yaml": NOTES_PLAN, "tools.py": NOTE_TOOLS}
    config = open_durable_project(tmp_path, monkeypatch, files)
    try:
        for run_id in ("prepared-1", "prepared-2"):
            run = agentflow.run(tmp_path / "notes.yaml", {}, config=config, durable=True,
                                run_id=run_id)  # fmt: skip
            result = asyncio.run(asyncio.wait_for(run, 20))
            assert result.status == "ok" and result.output == [2, 4], result.error
        prepared = {key[1] for key in system_database()._prepared_statements if key[0] == "sqlite"}
        assert {"insert_workflow_status", "insert_workflow_input", "upsert_workflow_output"} <= (
            prepared
        )
    finally:
        dbos_engine.shutdown()
    with sqlite3.connect(tmp_path / ".flowc" / "durable.sqlite") as db:
        rows = db.execute(
            "SELECT s.workflow_uuid, s.status, o.output IS NOT NULL FROM workflow_status s "
            "JOIN workflow_output o USING (workflow_uuid) WHERE s.workflow_uuid LIKE 'prepared-%'"
        ).fetchall()
    assert sorted(rows) == [("prepared-1", "SUCCESS", 1), ("prepared-2", "SUCCESS", 1)]
