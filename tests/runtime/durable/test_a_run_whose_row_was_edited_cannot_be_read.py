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
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.durable_questions import flowc
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
    "status_weird": "update workflow_status set status = 'WEIRD'",
    "name_null": "update workflow_status set name = NULL",
    "plan_yaml": "update workflow_input set inputs = replace(inputs, 'version: 1', 'version: [')",
    "plan_text_int": 'update workflow_input set inputs = \'{"args": {"$af": "tuple", '
    '"v": [{"plan_text": 5, "plan_file": 7, "input": null, "config": []}]}, "kwargs": {}}\'',
    "inputs_null": "update workflow_input set inputs = 'null'",
}

#: The edits whose `flowc resume` once never ended: resumed in a process of their own.
HUNG = ("inputs_null", "status_weird")


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


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_root_row_is_an_unreadable_run_and_the_other_runs_still_list(
    clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    db = tmp_path / "runs.sqlite"
    shutil.copy(clean, db)
    with sqlite3.connect(db) as conn:
        where = " where workflow_uuid = 'base'"
        conn.execute("update workflow_status set status = 'PENDING'" + where)
        conn.execute(EDITS[edit] + where)
    monkeypatch.chdir(tmp_path)
    url = ["--database", f"sqlite:///{db}"]
    try:
        listed = CliRunner().invoke(main, ["runs", "--json", *url])
        assert listed.exit_code == 0, listed.output
        runs = {r["run_id"]: r for r in json.loads(listed.stdout)}
        assert runs["good"]["status"] == "ok"
        if edit != "name_null":  # not a run's row at all: the listing does not see it
            assert runs["base"]["status"] == "unreadable", runs
            assert "run base cannot be read" in runs["base"]["unreadable"]
        commands = [["runs", "show", "base"], ["answer", "base", "E1", "yes"], ["redrive", "base"]]
        if edit not in HUNG:
            commands.append(["resume", "base"])
        for command in commands:
            done = CliRunner().invoke(main, [*command, *url])
            assert done.exception is None or isinstance(done.exception, SystemExit), command
            assert done.exit_code == 1, (command, done.output)
            assert "run base cannot be read" in done.stderr, (command, done.output)
    finally:
        shutdown()
    if edit not in HUNG:
        return
    # resume in a process of its own, with a bounded wait (a null input once hung it forever)
    resumed = subprocess.run(
        flowc("resume", "base", *url), cwd=tmp_path, capture_output=True, text=True,
        timeout=scaled(60),
    )  # fmt: skip
    assert resumed.returncode == 1, resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert "error: run base cannot be read: its row" in resumed.stderr, resumed.stderr
