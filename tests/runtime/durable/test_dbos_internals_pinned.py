"""The private parts of DBOS that runtime/durable/dbos_engine.py reaches into, pinned: a DBOS
upgrade that renames or reshapes one fails here, by name, rather than in a crashed run."""

from __future__ import annotations

import inspect


def test_the_recovery_of_one_workflow_is_where_recover_run_expects_it():
    from dbos._recovery import _recover_workflow
    from dbos._sys_db import GetPendingWorkflowsOutput, SystemDatabase
    from dbos._utils import GlobalParams

    assert list(inspect.signature(_recover_workflow).parameters) == [
        "dbos",
        "workflow",
        "executor_ids",
    ]
    assert list(inspect.signature(SystemDatabase.get_pending_workflows).parameters) == [
        "self",
        "executor_id",
        "app_version",
    ]
    assert "workflow_id" in inspect.signature(GetPendingWorkflowsOutput).parameters
    assert hasattr(GlobalParams, "app_version")
    assert "workflow_id_prefix" in inspect.signature(SystemDatabase.list_workflows).parameters
