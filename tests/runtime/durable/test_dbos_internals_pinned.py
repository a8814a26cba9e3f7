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
