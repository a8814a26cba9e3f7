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
