"""Commands that only read or message durable runs (``flowc runs``, ``runs show``, ``answer``,
``cancel``, ``resume``, ``redrive``) on a PostgreSQL database its server does not have say so,
as on a SQLite file that does not exist, and create nothing: the engine creates a database it
opens, so they never open it.  On an existing database no run was ever started in (no engine
tables), they find no run and migrate no schema into it (docs/decisions.md "Read-only commands
on PostgreSQL")."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def _flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentflow", *args]


def _databases(server: Any) -> set[str]:
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as conn:
        return {r[0] for r in conn.execute("SELECT datname FROM pg_database").fetchall()}


def _schemas(url: str) -> set[str]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace").fetchall()}


def _with_password(url: str) -> str:
    # trust authentication: the server never asks for it, the error must still mask it
    return url.replace("://agentflow@", "://agentflow:s3cret@")


def test_listing_runs_of_a_postgres_database_that_does_not_exist_says_so_and_creates_nothing(
    postgres_server: Any, tmp_path: Path
) -> None:
    url = _with_password(postgres_server.url.rsplit("/", 1)[0] + "/nodb")
    done = subprocess.run(
        _flowc("runs", "--database", url),
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = url.replace("s3cret", "***")
    assert f"no durable runs (no database at {shown})" in done.stderr, done.stderr
    assert "s3cret" not in done.stderr
    assert "nodb" not in _databases(postgres_server)


def test_cancelling_a_run_of_a_postgres_database_that_does_not_exist_is_an_error_that_creates_nothing(
    postgres_server: Any, tmp_path: Path
) -> None:
    url = postgres_server.url.rsplit("/", 1)[0] + "/nodb3"
    done = subprocess.run(
        _flowc("cancel", "x", "--database", url),
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert f"no durable run 'x' (no database at {url})" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert "nodb3" not in _databases(postgres_server)


def _calls(url: str) -> dict[str, Any]:
    from agentflow.runtime.durable import runs

    return {
        "show": lambda: runs.show_run(url, "r1"),
        "answer": lambda: runs.answer(url, "r1", "E1", "1"),
        "cancel": lambda: runs.cancel(url, "r1"),
        "resume": lambda: runs.resume(url, "r1"),
        "redrive": lambda: runs.recorded_spec(url, "r1"),
    }


@pytest.mark.parametrize("name", ["show", "answer", "cancel", "resume", "redrive"])
def test_a_run_command_on_a_postgres_database_that_does_not_exist_names_it_and_creates_nothing(
    postgres_server: Any, name: str
) -> None:
    from agentflow.errors import InputError

    url = postgres_server.url.rsplit("/", 1)[0] + f"/gone_{name}"
    with pytest.raises(InputError) as info:
        asyncio.run(_calls(url)[name]())
    assert str(info.value) == f"no durable run 'r1' (no database at {url})"
    assert f"gone_{name}" not in _databases(postgres_server)


@pytest.mark.parametrize("name", ["show", "answer", "cancel", "resume", "redrive"])
def test_a_run_command_on_an_empty_postgres_database_finds_no_run_and_migrates_nothing(
    postgres: Any, name: str
) -> None:
    from agentflow.errors import InputError
    from agentflow.runtime.durable import runs

    with pytest.raises(InputError) as info:
        asyncio.run(_calls(postgres.url)[name]())
    assert str(info.value) == f"no durable run 'r1' (no run was ever started in {postgres.url})"
    assert asyncio.run(runs.list_runs(postgres.url)) == []
    assert asyncio.run(runs.count_runs(postgres.url)) == (0, 0)
    assert "dbos" not in _schemas(postgres.url)
