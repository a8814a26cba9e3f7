"""``flowc ui``: a local web console over the durable runs database (docs/reference/ui.md) —
the runs list, each run's page (graph coloured by its steps' states, steps in the `.flow`'s
terms, agents' conversations, errors under a caret), waiting questions answered in the page,
cancel, resume and redrive, live updates.  :mod:`agentflow.ui.app` serves it (Starlette),
:mod:`agentflow.ui.pages` writes its HTML; its assets ship in ``agentflow/ui/assets/``."""
