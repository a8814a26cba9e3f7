"""Commands that only read or message durable runs (``flowc runs``, ``runs show``, ``answer``,
``cancel``, ``resume``, ``redrive``) on a SQLite database that does not exist say so and create
nothing: neither the file nor its directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentflow", *args]


def test_listing_runs_of_a_database_that_does_not_exist_says_so_and_creates_nothing(
    tmp_path: Path,
) -> None:
    database = tmp_path / "new" / "dir" / "x.sqlite"
    done = subprocess.run(
        _flowc("runs", "--database", str(database)),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"no durable runs (no database at {database})" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["show", "answer", "cancel", "resume", "redrive"])
def test_a_run_command_on_a_database_that_does_not_exist_names_it_and_creates_nothing(
    tmp_path: Path, name: str
) -> None:
    # in process: the same calls the commands make, without a subprocess each
    import asyncio

    from agentflow.errors import InputError
    from agentflow.runtime.durable import runs

    url = f"sqlite:///{tmp_path / 'new' / 'x.sqlite'}"
    calls = {
        "show": lambda: runs.show_run(url, "r1"),
        "answer": lambda: runs.answer(url, "r1", "E1", "1"),
        "cancel": lambda: runs.cancel(url, "r1"),
        "resume": lambda: runs.resume(url, "r1"),
        "redrive": lambda: runs.recorded_spec(url, "r1"),
    }
    with pytest.raises(InputError) as info:
        asyncio.run(calls[name]())
    missing = tmp_path / "new" / "x.sqlite"
    assert str(info.value) == f"no durable run 'r1' (no database at {missing})"
    assert list(tmp_path.iterdir()) == []


def test_showing_a_run_of_a_database_that_does_not_exist_is_one_error_line(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        _flowc("runs", "show", "r1", "--database", "gone/x.sqlite"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "no durable run 'r1' (no database at" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []
