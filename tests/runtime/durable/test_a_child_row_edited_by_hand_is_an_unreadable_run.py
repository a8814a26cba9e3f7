"""The battery of edited child rows: every kind of row a durable run records besides its own —
a map item's unit (its status, input, output, error), an operation's result (a step's
``{"d", "v"}``, a unit's link, the engine's ``recv`` and ``sleep``), an item record
(``agentflow_items``), a published question and its history, an answer's message and its claim
(``agentflow_answers``) — corrupted each way (not JSON, JSON of the wrong type, missing keys,
a huge or deep value, a pickle marker, an unknown serialization) and read by every command that
reads it: ``flowc runs``, ``runs show``, ``answer``, ``cancel``, ``resume``, ``redrive``,
``run --reuse``.  Each command ends (a bounded wait), never with a traceback, exits as the
reference says, says ``run RUN cannot be read: …`` when it fails for the row (or reads a value
it can still use), never runs a pickle, and the other run of the database lists as before
(docs/durable.md "The database"; docs/decisions.md "A child row edited by hand")."""

from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
import signal
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.durable_questions import start_flowc, wait_asked
from support.timing import scaled

from agentflow.cli import main
from agentflow.runtime.durable.dbos_engine import shutdown

FLOW = """\
input { items: text[] }
stage listed -> int[] {
  map input.items as s { list_dir(path: ".").count }
}
stage sizes -> int[] {
  parallel map input.items as s {
    let a = list_dir(path: ".")
    let b = list_dir(path: ".")
    a.count + b.count + listed.count
  }
}
stage decide -> bool {
  ask "Go with ${sizes.count}?" expect bool default false
}
"""

INPUT = '{"items": ["a", "bb"]}'


class _Payload:
    """Unpickling this makes the directory ``marker`` (what an attacker's row would do)."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (self.marker,))


#: The rows, each a SQL ``update`` of one row of run ``s`` (stopped, its question answered
#: while it was) or ``d`` (ended ok): (table, column, where).  ``{R}`` is the run's id.
ROWS: dict[str, tuple[str, str, str]] = {
    "unit.status": ("workflow_status", "status", "workflow_uuid = '{R}/E1/do.0'"),
    "unit.created_at": ("workflow_status", "created_at", "workflow_uuid = '{R}/E1/do.0'"),
    "unit.name": ("workflow_status", "name", "workflow_uuid = '{R}/E1/do.0'"),
    "unit.serialization": ("workflow_status", "serialization", "workflow_uuid = '{R}/E1/do.0'"),
    "unit.input": ("workflow_input", "inputs", "workflow_uuid = '{R}/E1/do.0'"),
    "unit.output": ("workflow_output", "output", "workflow_uuid = '{R}/E1/do.0'"),
    "unit.error": ("workflow_output", "error", "workflow_uuid = '{R}/E1/do.0'"),
    "root.output": ("workflow_output", "output", "workflow_uuid = '{R}'"),
    "op.link": ("operation_outputs", "child_workflow_id",
                "workflow_uuid = '{R}' and child_workflow_id = '{R}/E1/do.0'"),
    "op.name": ("operation_outputs", "function_name",
                "workflow_uuid = '{R}' and child_workflow_id = '{R}/E1/do.0'"),
    "op.recv": ("operation_outputs", "output",
                "workflow_uuid = '{R}' and function_name = 'DBOS.recv'"),
    "op.sleep": ("operation_outputs", "output",
                 "workflow_uuid = '{R}' and function_name = 'DBOS.sleep'"),
    "op.ask": ("operation_outputs", "output",
               "workflow_uuid = '{R}' and function_name like 'E2/ask#%'"),
    "op.ask_error": ("operation_outputs", "error",
                     "workflow_uuid = '{R}' and function_name like 'E2/ask#%'"),
    "op.started": ("operation_outputs", "started_at_epoch_ms",
                   "workflow_uuid = '{R}' and function_name = 'DBOS.setEvent'"),
    "item.output": ("agentflow_items", "output", "workflow_id = '{R}' and name like 'E0/do.0/%'"),
    "item.error": ("agentflow_items", "error", "workflow_id = '{R}' and name like 'E0/do.0/%'"),
    "item.started": ("agentflow_items", "started_at",
                     "workflow_id = '{R}' and name like 'E0/do.0/%'"),
    "unit_item.output": ("agentflow_items", "output",
                         "workflow_id = '{R}/E1/do.0' and name like '%/E0/%'"),
    "event.question": ("workflow_events", "value", "workflow_uuid = '{R}'"),
    "event.history": ("workflow_events_history", "value", "workflow_uuid = '{R}'"),
    "message.answer": ("notifications", "message", "destination_uuid = '{R}'"),
    "claim.value": ("agentflow_answers", "value", "workflow_id = '{R}' and question <> '@end'"),
    "claim.kind": ("agentflow_answers", "kind", "workflow_id = '{R}' and question <> '@end'"),
    "claim.at": ("agentflow_answers", "claimed_at", "workflow_id = '{R}' and question <> '@end'"),
}  # fmt: skip

#: The corruptions: a value for the column, or (value, serialization) for a row with its own
#: serialization column.  ``{PICKLE}``: a pickle whose loading would make the marker directory.
EDITS: dict[str, Any] = {
    "not_json": "{not json",
    "wrong_type": "[1, 2]",
    "a_text": '"text"',
    "missing_keys": "{}",
    "deep": "[" * 100_000 + "]" * 100_000,
    "huge": '{"d": "x", "v": "' + "x" * 2_000_000 + '"}',
    "pickle": ("{PICKLE}", "py_pickle"),
    "portable": ('{"d": 1}', "portable_json"),
    "unknown_serializer": ('{"d": "x", "v": 1}', "nonesuch"),
    "word": "WEIRD",
    "sql_null": None,
    "pickle_marker": "py_pickle",
    "unknown_marker": "nonesuch",
}

#: The suite edits each row one way (its first corruption below): 28 cases.
#: ``FLOW_CHILD_ROW_BATTERY=all`` runs every corruption of every row, 49 cases (bench/README.md).
_ALL = os.environ.get("FLOW_CHILD_ROW_BATTERY") == "all"

#: Which row gets which corruptions, on which runs (``s``: the stopped run, whose rows a
#: resume replays; ``d``: the ended one, whose rows a reuse takes).
CASES: list[tuple[str, str, str]] = [
    (run, row, edit)
    for row, edits, runs in [
        ("unit.status", ["word", "sql_null"], "s"),
        ("unit.created_at", ["word"], "s"),
        ("unit.name", ["word"], "s"),
        ("unit.serialization", ["pickle_marker", "unknown_marker"], "s"),
        ("unit.input", ["not_json", "wrong_type", "missing_keys"], "s"),
        ("unit.output", ["not_json", "huge"], "sd"),
        ("unit.error", ["missing_keys"], "s"),
        ("root.output", ["wrong_type", "missing_keys"], "d"),
        ("op.link", ["word"], "sd"),
        ("op.name", ["word"], "s"),
        ("op.recv", ["wrong_type", "pickle", "unknown_serializer"], "d"),
        ("op.sleep", ["a_text", "portable"], "s"),
        ("op.ask", ["not_json", "missing_keys", "pickle", "portable"], "d"),
        ("op.ask_error", ["missing_keys"], "d"),
        ("op.started", ["word"], "s"),
        ("item.output", ["not_json", "wrong_type", "deep"], "s"),
        ("item.output", ["missing_keys"], "d"),
        ("item.error", ["missing_keys"], "s"),
        ("item.started", ["word"], "s"),
        ("unit_item.output", ["wrong_type"], "s"),
        ("event.question", ["not_json", "wrong_type", "missing_keys", "pickle",
                            "unknown_serializer"], "s"),
        ("event.history", ["wrong_type"], "s"),
        ("message.answer", ["wrong_type", "pickle", "unknown_serializer"], "s"),
        ("claim.value", ["not_json"], "s"),
        ("claim.kind", ["word"], "s"),
        ("claim.at", ["word"], "s"),
    ]
    for edit in (edits if _ALL else edits[:1])
    for run in runs
]  # fmt: skip


#: Edits that leave a value agentflow could have written (a unit's result of 2 MB) or a row no
#: command reads (DBOS's history of events, for its forks): every command goes on as before.
BENIGN = {("unit.output", "huge"), ("event.history", "wrong_type")}
#: The rows `flowc runs` reads of a run that has not ended (its units, questions and claims),
#: and of every run (its outcome): a damaged one lists the run `unreadable`.
LISTED = ("unit.", "event.question", "claim.", "root.")
#: The rows only a unit that has not finished reads (a message not taken yet): `resume`
#: refuses, `runs show` (which shows the claim) shows the run.
RESUMED_ONLY = ("message.",)


def _commands(run: str) -> list[list[str]]:
    """The commands that read run ``run``'s rows (``s`` waits on nothing a reuse could take:
    its answer is not recorded as a step until it goes on, so a reuse of it would ask)."""
    shown = [["runs", "--json"], ["runs", "show", run], ["runs", "show", run, "--json", "--all"]]
    if run == "s":
        return [*shown, ["answer", run, "decide", "no"], ["resume", run], ["cancel", run]]
    return [
        *shown,
        ["run", "f.flow", "--durable", "--reuse", run, "--run-id", f"{run}-again"],
        ["redrive", run],
        ["answer", run, "decide", "no"],
        ["resume", run],
        ["cancel", run],
    ]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose database holds run ``s`` (killed as it waited on its question, then
    answered) and run ``d`` (answered, ended ok)."""
    where = tmp_path_factory.mktemp("clean")
    (where / "f.flow").write_text(FLOW)
    db = where / ".flowc" / "durable.sqlite"
    env = {**os.environ, "NO_COLOR": "1"}
    for run_id in ("s", "d"):
        proc = start_flowc(
            where, "run", "--durable", "--run-id", run_id, "f.flow", "--input", INPUT, env=env
        )
        try:
            wait_asked(db, run_id, proc, "E2")
            if run_id == "s":
                proc.send_signal(signal.SIGKILL)
                proc.communicate()
            answered = _invoke(where, ["answer", run_id, "decide", "yes"])
            assert answered.exit_code == 0, answered.output
            if run_id == "d":
                out, err = proc.communicate(timeout=120)
                assert proc.returncode == 0, err.decode()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    with sqlite3.connect(db) as conn:  # one file to copy
        conn.execute("pragma wal_checkpoint(truncate)")
    return where


def _invoke(where: Path, argv: list[str]) -> Any:
    cwd = os.getcwd()
    os.chdir(where)
    try:
        return CliRunner().invoke(main, argv)
    finally:
        os.chdir(cwd)
        shutdown()


def _bounded(where: Path, argv: list[str]) -> Any:
    """``flowc ARGV`` in ``where``, in this process, in a thread waited on for a bounded time:
    None when it did not end (a hang fails the test, not the suite)."""
    done: list[Any] = []

    def go() -> None:
        done.append(CliRunner().invoke(main, argv))

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.join(min(scaled(20), 120))
    return done[0] if done else None


def _edited(clean: Path, where: Path, run: str, row: str, edit: str) -> int:
    """A copy of ``clean`` in ``where`` whose run ``run`` has ``row`` edited so; the rows
    changed."""
    shutil.copytree(clean, where, dirs_exist_ok=True)
    table, column, cond = ROWS[row]
    value = EDITS[edit]
    serialization = None
    if isinstance(value, tuple):
        value, serialization = value
    if value == "{PICKLE}":
        value = base64.b64encode(pickle.dumps(_Payload(str(where / "pwned")))).decode()
    sets, args = f"{column} = ?", [value]
    if serialization is not None:
        sets += ", serialization = ?"
        args.append(serialization)
    with sqlite3.connect(where / ".flowc" / "durable.sqlite") as conn:
        changed = conn.execute(
            f"update {table} set {sets} where {cond.format(R=run)}", args
        ).rowcount
    return changed


def _named(argv: list[str], run: str) -> str:
    """The command of ``argv`` as the matrix names it (``runs show --json --all``)."""
    kept = [a for a in argv if a not in (run, f"{run}-again", "f.flow", "decide", "no")]
    return " ".join(a for a in kept if a not in ("--durable", "--run-id"))


def _verdict(done: Any, run: str) -> str:
    if done is None:
        return "HANG"
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        return f"TRACEBACK {type(done.exception).__name__}: {str(done.exception)[:80]}"
    text = done.output.replace("\n", " ")
    if done.exit_code == 1 and f"run {run} cannot be read" in text:
        return "unreadable"
    return f"exit {done.exit_code}: {text[:100]}"


MATRIX = os.environ.get("AF_BATTERY_MATRIX")


@pytest.mark.parametrize(("run", "row", "edit"), CASES)
def test_an_edited_child_row_never_shows_a_traceback_or_hangs(
    clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: str, row: str, edit: str
) -> None:
    other = "d" if run == "s" else "s"
    if not _edited(clean, tmp_path, run, row, edit):
        pytest.skip(f"run {run} has no {row} row")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    verdicts: dict[str, str] = {}
    try:
        for argv in _commands(run):
            done = _bounded(tmp_path, argv)
            shutdown() if done is not None else None
            verdicts[_named(argv, run)] = _verdict(done, run)
            if done is None:
                break
            if argv == ["runs", "--json"] and done.exit_code == 0:
                runs = {r["run_id"]: r for r in json.loads(done.stdout)}
                verdicts["other"] = runs.get(other, {}).get("status", "missing")
                verdicts["listed"] = runs.get(run, {}).get("status", "missing")
    finally:
        if MATRIX:
            with open(MATRIX, "a") as out:
                out.write(json.dumps({"run": run, "row": row, "edit": edit, **verdicts}) + "\n")
    assert not (tmp_path / "pwned").exists()
    bad = {k: v for k, v in verdicts.items() if v == "HANG" or v.startswith("TRACEBACK")}
    assert not bad, verdicts
    assert verdicts["other"] == ("ok" if run == "s" else "stopped"), verdicts
    assert all(v.startswith(("exit 0", "exit 1", "unreadable")) or k in ("other", "listed")
               for k, v in verdicts.items()), verdicts  # fmt: skip
    if (row, edit) in BENIGN:
        assert "unreadable" not in verdicts.values(), verdicts
        return
    if row.startswith(LISTED) and (run == "s" or row.startswith("root.")):
        assert verdicts["listed"] == "unreadable", verdicts
    reads = ["resume"] if run == "s" else ["run --reuse"]
    if not row.startswith(RESUMED_ONLY):
        reads += ["runs show", "runs show --json --all"]
    assert all(verdicts[k] == "unreadable" for k in reads), verdicts


def test_a_resume_of_a_run_another_version_recorded_ends_at_once(
    clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DBOS takes up a pending workflow only in a process of the version that recorded it
    (agentflow's): `flowc resume` of such a run once waited for ever, the run `stopped`; it
    now says why and ends (docs/decisions.md "A recovered root no process calls")."""
    shutil.copytree(clean, tmp_path, dirs_exist_ok=True)
    with sqlite3.connect(tmp_path / ".flowc" / "durable.sqlite") as conn:
        conn.execute("update workflow_status set application_version = '0.0.1-old' "
                     "where workflow_uuid like 's%'")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    try:
        done = _bounded(tmp_path, ["resume", "s"])
        assert done is not None, "flowc resume of a run of another version did not end"
    finally:
        shutdown()
    assert done.exception is None or isinstance(done.exception, SystemExit), done.output
    assert done.exit_code == 1, done.output
    assert "error: run s cannot be resumed: it was recorded by agentflow 0.0.1-old" in done.stderr
    assert "flowc cancel s" in done.stderr
    listed = _invoke(tmp_path, ["runs", "--json"])
    assert {r["run_id"]: r["status"] for r in json.loads(listed.stdout)}["s"] == "stopped"


def test_a_resume_of_a_run_with_no_recorded_version_says_so_in_the_users_terms(
    clean: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's row with no version (NULL: written by an older agentflow, or edited) is one no
    process takes up either: `flowc resume` says the run has no recorded version and how to go
    on, never "agentflow None"."""
    shutil.copytree(clean, tmp_path, dirs_exist_ok=True)
    with sqlite3.connect(tmp_path / ".flowc" / "durable.sqlite") as conn:
        conn.execute("update workflow_status set application_version = NULL "
                     "where workflow_uuid like 's%'")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    try:
        done = _bounded(tmp_path, ["resume", "s"])
        assert done is not None, "flowc resume of a run with no version did not end"
    finally:
        shutdown()
    assert done.exception is None or isinstance(done.exception, SystemExit), done.output
    assert done.exit_code == 1, done.output
    assert "None" not in done.stderr and "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        "error: run s cannot be resumed: its row records no agentflow version"
    ), line
    assert "flowc cancel s" in line and "flowc redrive s" in line
