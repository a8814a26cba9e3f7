"""The per-user index of durable runs (runtime/run_index.py; docs/durable.md "Which database a
command reads") is a hint that never gets in the way: a bad line is skipped (every field's
type checked), an index that is not a regular file (a FIFO) is never waited on, an entry after
a line cut short starts a line of its own, a relative ``$XDG_STATE_HOME`` is ignored (the XDG
spec); and what it leads to is said right: a run started with ``--database`` is named by that
database, a flow path a hint prints works from the current directory, deleted projects are
not offered, and ``flowc runs`` lines its statuses up whatever the ids' lengths.  Real durable
runs on SQLite in ``tmp_path``, through the real CLI; the index is the test's own
``$XDG_STATE_HOME`` (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from support.durable_questions import flowc_in_process, start_flowc

from agentflow.runtime import run_index

OK = "stage s -> int {\n  return 1\n}\n"


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "q.flow").write_text(OK)
    (root / "flow.toml").write_text("[tools]\nentry_points = false\n")
    return root


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path.resolve()


def test_a_bad_index_line_is_skipped_by_every_command_that_takes_a_run_id(tmp: Path) -> None:
    index = run_index.index_path()
    index.parent.mkdir(parents=True, exist_ok=True)
    bad = [
        '{"run": "zz", "database": null, "config": null, "at": 1' + "0" * 400 + "}",  # overflows
        '{"run": "zz", "at": "soon"}',
        '{"run": "zz", "at": true}',
        '{"run": 5}',
        '{"run": "zz", "database": 3}',
        '{"run": "zz", "config": ["x"]}',
        '{"run": "zz", "own": "yes"}',
        "[1, 2]",
        '{"run": "zz", "datab',
    ]
    good = json.dumps({"run": "ok1", "database": None, "config": None, "at": 1.5})
    index.write_text("\n".join([*bad, good]) + "\n")
    assert run_index.recall("zz") is None
    assert run_index.recall("ok1") == run_index.IndexEntry("ok1", None, None, 1.5)
    for args in (("runs", "show", "r1"), ("answer", "r1", "c", "1"), ("cancel", "r1")):
        result = flowc_in_process(*args)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        assert "no durable run 'r1'" in result.stderr, (args, result.output)
    listed = flowc_in_process("runs")
    assert listed.exit_code == 0 and "no durable runs" in listed.stderr, listed.output


def test_an_index_that_is_a_fifo_is_never_waited_on(tmp: Path) -> None:
    index = run_index.index_path()
    index.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(index)
    (tmp / "q.flow").write_text(OK)
    # both at once, each bounded: before, each blocked opening the FIFO
    run = start_flowc(tmp, "run", "--durable", "--run-id", "fifo1", "q.flow")
    show = start_flowc(tmp, "runs", "show", "x")
    try:
        _, run_err = run.communicate(timeout=120)
        _, show_err = show.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("a flowc command waited on the index's FIFO")
    finally:
        for proc in (run, show):
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert run.returncode == 0, run_err.decode()[-2000:]
    assert show.returncode == 1 and b"no durable run 'x'" in show_err, show_err.decode()


def test_an_entry_after_a_line_cut_short_starts_a_line_of_its_own(tmp: Path) -> None:
    project = _project(tmp / "project")
    index = run_index.index_path()
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text('{"run": "cut", "datab')
    assert (
        flowc_in_process("run", "--durable", "--run-id", "after1", "project/q.flow").exit_code == 0
    )
    lines = index.read_text().splitlines()
    assert lines[0] == '{"run": "cut", "datab' and json.loads(lines[1])["run"] == "after1"
    os.chdir(tmp / "elsewhere")
    shown = flowc_in_process("runs", "show", "after1")
    assert shown.exit_code == 0, shown.output
    assert "note: run after1 is in " in shown.stderr and "run after1: " in shown.stdout
    assert run_index.recall("after1").database == str(project / ".flowc" / "durable.sqlite")


def test_a_relative_state_home_is_ignored(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", "state")  # the XDG spec: relative paths are ignored
    monkeypatch.setenv("HOME", str(tmp / "home"))
    assert run_index.index_path() == tmp / "home" / ".local" / "state" / "agentflow" / "runs.jsonl"
    (tmp / "q.flow").write_text(OK)
    assert flowc_in_process("run", "--durable", "--run-id", "rel1", "q.flow").exit_code == 0
    assert not (tmp / "state").exists()
    assert run_index.recall("rel1") is not None


def test_a_run_on_a_database_of_its_own_is_named_by_that_database(tmp: Path) -> None:
    project = _project(tmp / "p")
    os.chdir(project)
    started = flowc_in_process(
        "run", "--durable", "--database", "sqlite:///rel2.sqlite", "--run-id", "db2", "q.flow"
    )
    assert started.exit_code == 0, started.output
    rel2 = run_index.recall("db2").database
    assert rel2 is not None and rel2.endswith("rel2.sqlite") and Path(rel2).is_file()
    os.chdir(tmp / "elsewhere")
    listed = flowc_in_process("runs", "--elsewhere")  # a sibling: named with --elsewhere
    assert f"(the latest: db2): flowc runs --database {rel2}\n" in listed.stderr, listed.stderr
    shown = flowc_in_process("runs", "show", "db2")
    assert shown.exit_code == 0, shown.output
    assert f"note: run db2 is in {rel2}, where it was started" in shown.stderr, shown.stderr


def test_redrive_of_a_finished_run_from_elsewhere_names_a_flow_path_that_works_there(
    tmp: Path,
) -> None:
    project = _project(tmp / "project")
    os.chdir(project)
    for rid in ("m1", "run-20261207-101821-2f67cd"):
        assert flowc_in_process("run", "--durable", "--run-id", rid, "q.flow").exit_code == 0
    listed = flowc_in_process("runs").stdout.splitlines()  # the statuses line up, whatever the ids
    assert len(listed) == 2 and {line.index(" ok ") for line in listed} == {27}, listed

    os.chdir(tmp)  # above the project: relative to here
    above = flowc_in_process("redrive", "m1")
    assert above.exit_code == 1, above.output
    assert "to run it again taking its finished steps: flowc run project/q.flow --reuse m1" in (
        above.stderr
    ), above.stderr
    os.chdir(tmp / "elsewhere")  # a sibling: absolute
    sibling = flowc_in_process("redrive", "m1")
    assert f"flowc run {project / 'q.flow'} --reuse m1" in sibling.stderr, sibling.stderr
    # ... and naming the run's database, which is not this directory's: the hint, pasted, works
    hint = sibling.stderr.split("taking its finished steps: ", 1)[1].strip()
    assert " --database sqlite:" in hint, hint
    again = flowc_in_process(*shlex.split(hint)[1:])
    assert again.exit_code == 0, again.output
    os.chdir(project)  # where it was started: as recorded
    assert "flowc run q.flow --reuse m1" in flowc_in_process("redrive", "m1").stderr

    # a failed run redriven from a sibling: its new run names the flow as a path from there
    (project / "boom.flow").write_text('stage s -> int {\n  fail "no"\n}\n')
    assert flowc_in_process("run", "--durable", "--run-id", "b1", "boom.flow").exit_code == 1
    os.chdir(tmp / "elsewhere")
    redriven = flowc_in_process("redrive", "b1")
    assert redriven.exit_code == 1 and "(redrive of b1)" in redriven.stderr, redriven.output
    # the absolute path (the console cuts a long line at its width, ending it with "…")
    (line,) = [x for x in redriven.stderr.splitlines() if x.startswith("run boom  ")]
    shown = line.removeprefix("run boom  ")
    full = f"{tmp}/project/boom.flow"
    assert shown == full or (shown.endswith("…") and full.startswith(shown[:-1])), line


def test_runs_does_not_offer_a_deleted_project(tmp: Path) -> None:
    for name in ("projB", "projC"):
        _project(tmp / name)
        assert (
            flowc_in_process("run", "--durable", "--run-id", name, f"{name}/q.flow").exit_code == 0
        )
    shutil.rmtree(tmp / "projC")
    os.chdir(tmp / "elsewhere")
    listed = flowc_in_process("runs", "--elsewhere")
    assert "(the latest: projB): flowc runs --config " in listed.stderr, listed.stderr
    assert "projC" not in listed.stderr, listed.stderr


def test_a_run_whose_flow_toml_names_another_database_now_is_named_by_its_own(tmp: Path) -> None:
    # a run started when `sqlite:///runs.db` in proj/flow.toml was the current directory's
    # (now it is proj/'s): its index line names proj/flow.toml and ./runs.db, and
    # every hint names the database it is in (--database), never a --config that finds none
    # (regression battery)
    proj = _project(tmp / "proj")
    (proj / "flow.toml").write_text('[durable]\ndatabase = "sqlite:///runs.db"\n')
    old_db = tmp / "runs.db"
    started = flowc_in_process(
        "run", "proj/q.flow", "--run-id", "old1", "--database", f"sqlite:///{old_db}"
    )
    assert started.exit_code == 0, started.output
    run_index.remember("old1", f"sqlite:///{old_db}", proj / "flow.toml", own=False)
    os.chdir(tmp / "elsewhere")
    shown = flowc_in_process("runs", "show", "old1")
    assert shown.exit_code == 0, shown.output
    assert f"note: run old1 is in {old_db}, where it was started" in shown.stderr, shown.output
    listed = flowc_in_process("runs", "--elsewhere")
    assert f"(the latest: old1): flowc runs --database {old_db}" in listed.stderr, listed.output
    again = flowc_in_process("runs", "--database", str(old_db))
    assert again.exit_code == 0 and "old1" in again.output, again.output
