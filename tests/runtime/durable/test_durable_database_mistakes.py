"""A `--database` (or `[durable] database`) that cannot be a durable runs database is one
``error:`` line naming it and exit 1 — no traceback from the engine's own logging — and a URL of
an unknown scheme is refused rather than taken for a SQLite file of that name (which would make
a directory called ``foo:`` in the current directory)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agentflow.errors import ConfigError
from agentflow.runtime.config import load_config
from agentflow.runtime.durable.runs import database_for


def _flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentflow", *args]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _not_a_database(tmp_path: Path) -> str:
    (tmp_path / "junk.sqlite").write_bytes(b"this is not a SQLite database" * 100)
    return "junk.sqlite"


def _a_directory(tmp_path: Path) -> str:
    (tmp_path / "adir").mkdir()
    return "adir"


def _unreachable_postgres(tmp_path: Path) -> str:
    return f"postgresql://someone:hunter2hunter2@127.0.0.1:{_closed_port()}/runs"


# every durable command opens its database through the same call; `resume` stands beside `runs`
@pytest.mark.parametrize(
    ("database", "command"),
    [
        (_not_a_database, ["runs"]),
        (_a_directory, ["runs"]),
        (_unreachable_postgres, ["runs"]),
        (_not_a_database, ["resume", "r1"]),
    ],
    ids=["not-a-database", "a-directory", "unreachable-postgres", "resume-not-a-database"],
)
def test_a_database_that_cannot_be_opened_is_one_error_line_without_a_traceback(
    tmp_path: Path, database, command: list[str]
) -> None:
    url = database(tmp_path)
    done = subprocess.run(
        _flowc(*command, "--database", url),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "DBOS failed to launch" not in done.stderr, done.stderr
    assert "Background on this error" not in done.stderr, done.stderr  # SQLAlchemy's wrapper
    # one line (the driver's reason may continue it, indented: psycopg's hint), no warning before
    first, *rest = done.stderr.strip().splitlines()
    assert first.startswith("error: cannot open the durable runs database "), done.stderr
    assert all(line.startswith(("\t", " ")) for line in rest), done.stderr
    assert "hunter2hunter2" not in done.stderr + done.stdout
    if url.startswith("postgresql:"):  # named with its password masked, the driver's words
        assert f"someone:***@127.0.0.1:{url.rsplit(':', 1)[1].split('/')[0]}/runs: " in first
        assert "connection failed" in first, done.stderr


@pytest.mark.parametrize("url", ["foo://bar", "mysql://u@localhost/db", "sqlite://relative.db"])
def test_a_database_url_of_an_unknown_scheme_is_refused_and_creates_nothing(
    tmp_path: Path, url: str
) -> None:
    config = load_config(None, cwd=tmp_path, env={})
    with pytest.raises(ConfigError) as info:
        database_for(config, url)
    message = str(info.value)
    assert message.startswith("--database: " + url.split("://")[0] + "://"), message
    assert "postgresql://" in message  # says what would do
    assert list(tmp_path.iterdir()) == []


def test_a_database_url_of_an_unknown_scheme_in_flow_toml_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "flow.toml").write_text('[durable]\ndatabase = "mongodb://x/y"\n')
    done = subprocess.run(_flowc("runs"), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "flow.toml: [durable] database: mongodb://" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flow.toml"]
