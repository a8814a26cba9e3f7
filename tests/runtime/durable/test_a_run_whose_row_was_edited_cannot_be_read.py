"""A durable run whose own row was edited by hand (a ``.flowc/durable.sqlite`` that arrives
with a cloned repository: a text time, a status the engine never writes, no workflow name, a
plan that is not YAML or not text, a null input) is listed as ``unreadable`` with its reason,
the other runs of the database list as usual, and `runs show`, `resume`, `redrive` and
`answer` say ``run RUN cannot be read: …`` (exit 1): never a traceback, never a hang
(records.root_problem; docs/durable.md "The database")."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.timing import scaled

import agentflow
from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

PLAN = """\
version: 1
name: edited
steps:
  - id: E0
    tool_name: builtin__list_dir
    input: {path: "."}
finish: {mode: output, output: "done"}
"""

#: Each edit of run ``base``'s row (made a stopped run first: ``status='PENDING'``).
EDITS = {
    "created_text": "update workflow_status set created_at = 'abc', updated_at = 'x'",
    # a float past any calendar (time.localtime overflowed in `flowc runs`: final battery)
    "created_float_huge": "update workflow_status set created_at = 1e308",
    "status_weird": "update workflow_status set status = 'WEIRD'",
    "name_null": "update workflow_status set name = NULL",
    "plan_yaml": "update workflow_input set inputs = replace(inputs, 'version: 1', 'version: [')",
    "plan_text_int": 'update workflow_input set inputs = \'{"args": {"$af": "tuple", '
    '"v": [{"plan_text": 5, "plan_file": 7, "input": null, "config": []}]}, "kwargs": {}}\'',
    "inputs_null": "update workflow_input set inputs = 'null'",
    "kwargs_null": "update workflow_input set inputs = replace(inputs, '\"kwargs\":{}', "
    "'\"kwargs\":null')",
}

#: The edits whose `flowc resume` once never ended: resumed with a bounded wait.
HUNG = ("inputs_null", "kwargs_null", "status_weird")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with two ended runs, ``good`` and ``base`` (made once for every edit)."""
    where = tmp_path_factory.mktemp("clean")
    (where / "plan.yaml").write_text(PLAN)
    db = where / "runs.sqlite"
    try:
        for run_id in ("good", "base"):
            done = asyncio.run(
                agentflow.run(
                    where / "plan.yaml", {}, durable=True, run_id=run_id,
                    database=f"sqlite:///{db}", workspace=where,
                )
            )  # fmt: skip
            assert done.status == "ok", done.error
    finally:
        shutdown()
    with sqlite3.connect(db) as conn:  # one file to copy
        conn.execute("pragma wal_checkpoint(truncate)")
    return db


def _edited(clean: Path, where: Path, edit: str) -> Path:
    """A copy of ``clean`` in ``where`` whose run ``base`` is stopped and has ``edit``."""
    db = where / f"{edit}.sqlite"
    shutil.copy(clean, db)
    with sqlite3.connect(db) as conn:
        base = " where workflow_uuid = 'base'"
        conn.execute("update workflow_status set status = 'PENDING'" + base)
        conn.execute(EDITS[edit] + base)
    return db


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_root_row_is_an_unreadable_run_and_the_other_runs_still_list(
    clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    db = _edited(clean, tmp_path, edit)
    monkeypatch.chdir(tmp_path)
    url = ["--database", f"sqlite:///{db}"]
    try:
        listed = CliRunner().invoke(main, ["runs", "--json", *url])
        assert listed.exit_code == 0, listed.output
        runs = {r["run_id"]: r for r in json.loads(listed.stdout)}
        assert runs["good"]["status"] == "ok"
        assert runs["base"]["status"] == "unreadable", runs
        assert "run base cannot be read: its row" in runs["base"]["unreadable"]
        (tmp_path / "plan.yaml").write_text(PLAN)
        commands = [["runs", "show", "base"], ["answer", "base", "E1", "yes"], ["redrive", "base"]]
        commands.append(["run", "plan.yaml", "--durable", "--reuse", "base"])
        if edit not in HUNG:  # those: with a bounded wait, below
            commands.append(["resume", "base"])
        for command in commands:
            done = CliRunner().invoke(main, [*command, *url])
            assert done.exception is None or isinstance(done.exception, SystemExit), command
            assert done.exit_code == 1, (command, done.output)
            assert "run base cannot be read" in done.stderr, (command, done.output)
    finally:
        shutdown()


def test_a_resume_of_an_edited_row_that_once_hung_ends_at_once(
    clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each resume with a bounded wait (in a thread: a hang fails the test, not the suite): a
    null input once hung it for ever, deaf to SIGTERM (DBOS's queue worker failed to call the
    root, which never started, and the stop waited for its start)."""
    monkeypatch.chdir(tmp_path)
    for edit in HUNG:
        db = _edited(clean, tmp_path, edit)
        done: list[Any] = []
        argv = ["resume", "base", "--database", f"sqlite:///{db}"]
        resume = threading.Thread(
            target=lambda out=done, argv=argv: out.append(CliRunner().invoke(main, argv)),
            daemon=True,
        )
        try:
            resume.start()
            resume.join(min(scaled(10), 120))  # it refuses in about a second
            assert done, f"flowc resume of an edited row ({edit}) did not end"
        finally:
            shutdown()
        assert done[0].exception is None or isinstance(done[0].exception, SystemExit), edit
        assert done[0].exit_code == 1, (edit, done[0].output)
        assert "error: run base cannot be read: its row" in done[0].stderr, (edit, done[0].output)
