"""A mistyped command, run id or file gets a "did you mean" (core.diagnostics.did_you_mean):
``flowc show RUN`` names ``flowc runs show`` (a subgroup's command typed without its group),
``flowc runs show myrun`` the run ``myrun1`` the database holds, ``flowc run stat.flow`` the
file ``stats.flow`` beside it.  Nothing is suggested for a name like none of them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.durable_questions import flowc_in_process

from agentflow.cli import main
from agentflow.runtime.durable.run_info import no_run_message

OK = "stage s -> int {\n  return 1\n}\n"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    return tmp_path


def _flowc(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(main, list(args), prog_name="flowc")
    return done.exit_code, done.stderr


def test_a_subgroups_command_typed_alone_names_it_with_its_group(here: Path) -> None:
    code, said = _flowc("show", "RUN")
    assert code == 2
    assert "No such command 'show'. Did you mean 'flowc cache show' or 'flowc runs show'?" in said
    code, said = _flowc("validate", "x.plan.yaml")
    assert "Did you mean 'flowc plan validate'?" in said, said


def test_a_slip_of_a_subgroups_command_names_it_and_a_top_level_one_stays_clicks(
    here: Path,
) -> None:
    assert "Did you mean 'flowc plan validate'?" in _flowc("valdiate")[1]
    assert "No such command 'rnus'. Did you mean 'runs'?" in _flowc("rnus")[1]
    code, said = _flowc("xyzzy")
    assert code == 2 and "No such command 'xyzzy'." in said and "Did you mean" not in said


def test_a_missing_flow_file_names_the_one_beside_it(here: Path) -> None:
    (here / "stats.flow").write_text(OK)
    for command in ("run", "check", "compile"):
        code, said = _flowc(command, "stat.flow")
        assert code == 2, said
        assert "did you mean `stats.flow`?" in said, (command, said)
    os.mkdir(here / "sub")
    (here / "sub" / "stats.flow").write_text(OK)
    assert "did you mean `sub/stats.flow`?" in _flowc("run", "sub/stat.flow")[1]
    code, said = _flowc("run", "other.flow")
    assert code == 2 and "other.flow: no such file" in said and "did you mean" not in said


def test_a_run_id_short_of_a_runs_names_it(here: Path) -> None:
    (here / "q.flow").write_text(OK)
    (here / "flow.toml").write_text("[tools]\nentry_points = false\n")
    started = flowc_in_process("run", "--durable", "--run-id", "myrun1", "q.flow")
    assert started.exit_code == 0, started.output
    for command in (("runs", "show"), ("cancel",), ("resume",), ("redrive",)):
        done = flowc_in_process(*command, "myrun")
        assert done.exit_code == 1, done.output
        assert "no durable run 'myrun' in " in done.stderr, (command, done.stderr)
        assert "hint: did you mean `myrun1`?" in done.stderr, (command, done.stderr)
    unlike = flowc_in_process("runs", "show", "zzzz")
    assert "hint:" not in unlike.stderr, unlike.stderr


def test_the_start_of_exactly_one_run_id_names_it() -> None:
    ids = ["run-20261207-194311-363dcc", "run-20261208-101010-aaaaaa", "other"]
    said = no_run_message("run-20261207", "db", ids)
    assert (
        said
        == "no durable run 'run-20261207' in db\nhint: did you mean `run-20261207-194311-363dcc`?"
    )
    assert no_run_message("run-2026", "db", ids) == "no durable run 'run-2026' in db"


def test_a_run_id_short_of_a_runs_names_it_on_temporal(here: Path, temporal_server: Any) -> None:
    (here / "q.flow").write_text(OK)
    (here / "flow.toml").write_text(
        '[tools]\nentry_points = false\n[durable]\nengine = "temporal"\n'
        f'address = "{temporal_server.address}"\ntask_queue = "didyoumean{os.getpid()}"\n'
    )
    flowc = [sys.executable, "-m", "agentflow"]
    started = subprocess.run(
        [*flowc, "run", "--durable", "--run-id", "myrun1", "q.flow"],
        cwd=here, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    shown = subprocess.run(
        [*flowc, "runs", "show", "myrun"], cwd=here, capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 1, shown.stderr
    assert "no durable run 'myrun' in Temporal " in shown.stderr, shown.stderr
    assert "hint: did you mean `myrun1`?" in shown.stderr, shown.stderr
