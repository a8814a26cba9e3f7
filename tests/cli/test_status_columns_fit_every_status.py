"""``flowc runs`` and ``flowc runs show`` print a status column as wide as the widest status
they can print: ``interrupted`` (a step of ``runs show``: a ``sleep`` a deadline ended) and
``unreadable`` (a run of ``flowc runs``) leave one space before the next column, as every
shorter status does; an interrupted sleep's duration is never negative (docs/reference/cli.md
"flowc runs show").  A real durable run on SQLite in ``tmp_path``, through the real CLI."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import get_args

import pytest
from click.testing import CliRunner

import agentflow
from agentflow.cli import main
from agentflow.cli.durable import (
    RUN_STATUS_WIDTH,
    RUN_STATUSES,
    STEP_STATUS_WIDTH,
    STEP_STATUSES,
)
from agentflow.runtime.durable.dbos_engine import shutdown
from agentflow.runtime.result import RunStatus

NAP = "deadline 300ms\nstage nap -> int {\n  sleep 1h\n  return 7\n}\n"
QUICK = "stage quick -> int {\n  return 7\n}\n"

#: a step line of `runs show`: status, one space at least, then its start time (`-`, the
#: columns kept, when the step was cut off before its start was recorded: a deadline that expired
#: while the engine was still recording it, on a loaded machine)
STEP_LINE = re.compile(r"  (?P<status>\S+)(?P<gap> +)(?P<at>\d\d:\d\d:\d\d|-)  +(?P<took>\S+)  ")


def test_the_columns_are_as_wide_as_every_status_of_the_spec() -> None:
    # the spec's run statuses (docs/spec/RUNTIME.md, RunStatus) and the listing's own
    spec_runs = get_args(RunStatus)
    assert set(spec_runs) == {"ok", "exited", "error", "aborted", "cancelled"}
    listing = ("running", "waiting", "stopped", "unreadable")
    assert set(spec_runs + listing) <= set(RUN_STATUSES)
    assert RUN_STATUS_WIDTH >= max(len(s) for s in spec_runs + listing) == len("unreadable")
    assert STEP_STATUS_WIDTH >= max(len(s) for s in STEP_STATUSES) == len("interrupted")


def test_an_interrupted_step_keeps_its_columns_in_runs_show_and_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "nap.flow").write_text(NAP)
    (tmp_path / "quick.flow").write_text(QUICK)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    try:
        napped = asyncio.run(agentflow.run(tmp_path / "nap.flow", {}, durable=True, run_id="nap-1"))
        assert napped.status == "error" and napped.error["code"] == "deadline_exceeded"
        quick = asyncio.run(agentflow.run(tmp_path / "quick.flow", {}, durable=True, run_id="q-1"))
        assert quick.status == "ok"
        shown = CliRunner().invoke(main, ["runs", "show", "nap-1"])
        listed = CliRunner().invoke(main, ["runs"])
    finally:
        shutdown()
    assert shown.exit_code == 0, shown.output
    lines = [m for ln in shown.stdout.splitlines() if (m := STEP_LINE.match(ln))]
    assert [m["status"] for m in lines] == ["interrupted"], shown.stdout
    step = lines[0]
    # the time column starts where every status's does: one space after the widest
    assert step.start("at") == 2 + STEP_STATUS_WIDTH + 1, shown.stdout
    if step["at"].startswith("-"):  # no start recorded: no duration either
        assert step["took"] == "-", shown.stdout
    else:
        assert not step["took"].startswith("-"), shown.stdout  # ended after it started
    # `flowc runs`: the plan names start in one column, whatever the status before them
    rows = [ln for ln in listed.stdout.splitlines() if ln.startswith(("nap-1 ", "q-1 "))]
    assert len(rows) == 2, listed.stdout
    starts = {
        ln.split()[0]: ln.index(" nap " if ln.startswith("nap") else " quick ") for ln in rows
    }
    # the id column is as wide as the longest id listed (fixindex), so one column for all
    assert starts == {k: len("nap-1") + 2 + RUN_STATUS_WIDTH for k in starts}, listed.stdout
