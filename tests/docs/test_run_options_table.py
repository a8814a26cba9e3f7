"""docs/reference/python-api.md's table "Options of `run` / `run_sync`" has a row for every
parameter of `agentflow.run` and `agentflow.run_sync`, and no row for a parameter they do not
have: a new option is documented where users look for it."""

from __future__ import annotations

import inspect
import re

from support.paths import DOCS

import agentflow

PAGE = DOCS / "reference" / "python-api.md"


def _table_options() -> set[str]:
    text = PAGE.read_text(encoding="utf-8")
    table = text.split("Options of `run` / `run_sync`:", 1)[1].split("\n\n", 2)[1]
    names: set[str] = set()
    for row in table.splitlines()[2:]:
        first = row.split("|")[1]
        names.update(re.findall(r"`(\w+)`", first))
    return names


def test_every_parameter_of_run_and_run_sync_has_a_row():
    documented = _table_options()
    for fn in (agentflow.run, agentflow.run_sync):
        params = set(inspect.signature(fn).parameters)
        assert params - documented == set(), fn.__name__
        assert documented - params == set(), fn.__name__
