"""A durable database is a trust boundary (issue 28): a row holding a pickle whose
``__reduce__`` would run code — written in by hand, or left by an agentflow that stored
pickles — never runs under `flowc runs`, `runs show`, `answer`, `resume`, `cancel` or
`redrive`; each command that reads it says which run is unreadable, and the other runs still
list.  A real `flowc run --durable` makes the run (killed while it waits on a question), a real
`flowc runs` lists it, the other commands run in this process."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import pickle
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.durable_questions import flowc, start_flowc, wait_asked

import agentflow
from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

PLAN = """\
version: 1
name: tampered
steps:
  - id: E0
    tool_name: builtin__list_dir
    input: {path: "."}
  - id: E1
    tool_name: ask
    input: {question: "Go?"}
finish: {mode: output, output: "{{ E1.answer }}"}
"""

OK_PLAN = """\
version: 1
name: fine
steps:
  - id: E0
    tool_name: builtin__list_dir
    input: {path: "."}
finish: {mode: output, output: "done"}
"""


class Payload:
    """Unpickling this makes the directory ``marker`` (what an attacker's row would do)."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def _evil(marker: Path) -> str:
    return base64.b64encode(pickle.dumps(Payload(str(marker)))).decode()


def test_a_pickled_row_is_never_loaded_and_the_commands_name_the_unreadable_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plan.yaml").write_text(PLAN)
    (tmp_path / "ok.yaml").write_text(OK_PLAN)
    monkeypatch.chdir(tmp_path)
    try:
        fine = asyncio.run(agentflow.run(tmp_path / "ok.yaml", {}, durable=True, run_id="fine"))
    finally:
        shutdown()
    assert fine.status == "ok", fine.error
    run = start_flowc(tmp_path, "run", "--durable", "--run-id", "bad", "plan.yaml")
    db = tmp_path / ".flowc" / "durable.sqlite"
    wait_asked(db, "bad", run, "E1")
    run.send_signal(signal.SIGKILL)
    run.wait()

    marker = tmp_path / "pwned"
    with sqlite3.connect(db) as conn:  # every kind of row the commands read: a pickle each
        conn.execute(
            "update workflow_status set serialization = 'py_pickle' where workflow_uuid = 'bad'"
        )
        conn.execute("update workflow_input set inputs = ? where workflow_uuid = 'bad'",
                     (_evil(marker),))  # fmt: skip
        conn.execute(
            "update operation_outputs set output = ?, serialization = 'py_pickle' "
            "where workflow_uuid = 'bad' and output is not null",
            (_evil(marker),),
        )
        conn.execute(
            "update workflow_events set value = ?, serialization = 'py_pickle' "
            "where workflow_uuid = 'bad'",
            (_evil(marker),),
        )

    listed = subprocess.run(flowc("runs", "--json"), cwd=tmp_path, capture_output=True)
    assert listed.returncode == 0, listed.stderr.decode()
    runs = {r["run_id"]: r for r in json.loads(listed.stdout)}
    assert runs["fine"]["status"] == "ok"
    assert runs["bad"]["status"] == "unreadable"
    assert "run bad cannot be read" in runs["bad"]["unreadable"]
    assert not marker.exists()

    # the other commands in this process (each opens the database as its own process would)
    text = CliRunner().invoke(main, ["runs"])
    # the id column is as wide as the longest id listed
    assert "bad   unreadable" in text.stdout and "fine  ok" in text.stdout, text.output
    for command in (
        ["runs", "show", "bad"],
        ["answer", "bad", "E1", "yes"],
        ["resume", "bad"],
        ["redrive", "bad"],
        ["cancel", "bad"],
        ["redrive", "bad"],
    ):
        done = CliRunner().invoke(main, command)
        assert not marker.exists(), command
        assert done.exception is None or isinstance(done.exception, SystemExit), command
        if command[0] == "cancel":  # cancelling reads no row it cannot read: it is done
            assert done.exit_code == 0, done.output
            continue
        assert done.exit_code == 1, (command, done.output)
        assert "run bad cannot be read" in done.stderr, (command, done.output)
