"""Durable runs from the outside: start, resume, inspect, answer, cancel, redrive, work
(``flowc run --durable``, ``flowc resume``, ``flowc runs``, ``flowc answer``, ``flowc cancel``,
``flowc redrive``, ``flowc worker``; docs/durable.md).

A run's id is printed when it starts; its state lives in the database of ``[durable] database``
(default ``.flowc/durable.sqlite`` beside ``flow.toml``, else in the current directory).  A run
started here holds a lock file while its process lives, so ``flowc resume`` can tell a run
whose process died from one still running (SQLite; a fleet on PostgreSQL recovers through its
workers, each of which resumes the work of its predecessor of the same ``--name``).

This module is the one name callers import; the commands live by role, as dbos-transact-py
keeps its core apart from its workflow commands: :mod:`.execution` (start, resume, work),
:mod:`.management` (list, show, answer, cancel, the recorded input), :mod:`.database` (where
the state lives, which engine a command goes to, the run lock) and :mod:`.spec` (what a run
starts with and what a process rebuilds from it).
"""

from __future__ import annotations

from agentflow.runtime.durable.asking import ask_result
from agentflow.runtime.durable.database import (
    database_for,
    missing_database,
    open_database,
    process_executor,
    run_lock,
    safe_url,
)
from agentflow.runtime.durable.dbos_engine import build_runtime, reuse_table
from agentflow.runtime.durable.execution import (
    ask_durable,
    await_outcome,
    result_of,
    resume,
    run_durable,
    work,
)
from agentflow.runtime.durable.management import (
    answer,
    cancel,
    count_runs,
    list_runs,
    pending_questions,
    recorded_spec,
    run_alive,
    show_run,
    unanswered,
)
from agentflow.runtime.durable.run_info import Question, RunInfo
from agentflow.runtime.durable.spec import (
    context_from_spec,
    new_run_id,
    run_root,
    run_spec,
    trace_of,
)

__all__ = [
    "Question",
    "RunInfo",
    "answer",
    "ask_durable",
    "ask_result",
    "await_outcome",
    "build_runtime",
    "cancel",
    "context_from_spec",
    "count_runs",
    "database_for",
    "list_runs",
    "missing_database",
    "new_run_id",
    "open_database",
    "pending_questions",
    "process_executor",
    "recorded_spec",
    "result_of",
    "resume",
    "reuse_table",
    "run_alive",
    "run_durable",
    "run_lock",
    "run_root",
    "run_spec",
    "safe_url",
    "show_run",
    "trace_of",
    "unanswered",
    "work",
]
