"""A durable runs database that cannot be reached is one line naming it (password masked), with
the driver's reason — no DBOS traceback, no SQLAlchemy "Background on this error" link."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: nobody listens


def test_an_unreachable_postgresql_database_is_one_error_line(tmp_path: Path):
    url = f"postgresql://nobody:secret@127.0.0.1:{_closed_port()}/runs"
    env = {**os.environ, "NO_COLOR": "1"}
    for args in (["runs"], ["resume", "some-run"]):
        done = subprocess.run(
            [sys.executable, "-m", "agentflow", *args, "--database", url],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert "DBOS failed to launch" not in done.stderr
        assert "Background on this error" not in done.stderr
        assert "secret" not in done.stderr
        first, *rest = done.stderr.strip().splitlines()
        assert first.startswith(
            "error: cannot open the durable runs database "
            f"postgresql://nobody:***@127.0.0.1:{url.rsplit(':', 1)[1].split('/')[0]}/runs: "
            "connection failed"
        ), done.stderr
        assert all(line.startswith(("\t", " ")) for line in rest), done.stderr  # psycopg's hint
