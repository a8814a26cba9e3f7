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
