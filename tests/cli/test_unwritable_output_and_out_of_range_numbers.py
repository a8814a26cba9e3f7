"""Output that cannot be written and numbers a socket or SQLite cannot hold are one-line errors,
never tracebacks (docs/reference/cli.md "Exit codes"): `flowc run --json > /dev/full` says the
output cannot be written (exit 1, the run itself done); `--http`/`--port` outside 0–65535 and
`runs show --offset`/`--limit` beyond a 64-bit integer are usage errors (exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from agentflow.cli import main

FLOW = "input { n: int }\nstage double -> int { return input.n * 2 }\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
def test_output_to_a_full_device_is_one_error_line(tmp_path):
    (tmp_path / "a.flow").write_text(FLOW, encoding="utf-8")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "agentflow.cli", "run", "a.flow", "--input", '{"n": 1}',
             "--json"],
            cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "error: cannot write the output: No space left on device" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--mcp", ".", "--http", "99999"],
        ["ui", "--port", "70000"],
        ["runs", "show", "r1", "--offset", "99999999999999999999999"],
        ["runs", "show", "r1", "--limit", "99999999999999999999999"],
    ],
)
def test_numbers_no_socket_or_database_can_hold_are_usage_errors(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2, out.output
    assert "is not in the range" in out.output
