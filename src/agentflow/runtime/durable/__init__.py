"""Durable runs (issue 17, docs/durable.md): a run that survives its process.

- :mod:`.engine` — the engine-neutral part: the :class:`~.engine.Engine` protocol and
  :class:`~.engine.DurableEffects`, the run's ``Effects`` that records each effect under a name
  holding its step path;
- :mod:`.dbos_engine` — the DBOS backend (SQLite file, or PostgreSQL for a fleet);
- :mod:`.runs` — start, resume, list, show, answer, cancel, reuse/redrive, work: the one name
  callers import, over :mod:`.execution` (start, resume, work) and :mod:`.management` (list,
  show, answer, cancel).

Nothing here is imported by a plain run; ``dbos`` is an optional dependency (the ``durable``
extra).
"""

from typing import TYPE_CHECKING

from agentflow._lazy import lazy_exports

if TYPE_CHECKING:
    from agentflow.runtime.durable.dbos_launch import launched, shutdown
    from agentflow.runtime.durable.records import reused_input
    from agentflow.runtime.durable.runs import (
        database_for,
        recorded_spec,
        resume,
        run_durable,
        work,
    )
    from agentflow.runtime.durable.shown import Labels

#: What :mod:`agentflow.api_run` calls for a durable run, loaded on first use (PEP 562): a plain
#: run, which never calls them, loads no module of this package (docs/decisions.md "Start-up").
_EXPORTS: dict[str, str] = {
    "Labels": "agentflow.runtime.durable.shown",
    "database_for": "agentflow.runtime.durable.runs",
    "launched": "agentflow.runtime.durable.dbos_launch",
    "recorded_spec": "agentflow.runtime.durable.runs",
    "resume": "agentflow.runtime.durable.runs",
    "reused_input": "agentflow.runtime.durable.records",
    "run_durable": "agentflow.runtime.durable.runs",
    "shutdown": "agentflow.runtime.durable.dbos_launch",
    "work": "agentflow.runtime.durable.runs",
}

__all__ = [
    "Labels",
    "database_for",
    "launched",
    "recorded_spec",
    "resume",
    "reused_input",
    "run_durable",
    "shutdown",
    "work",
]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
