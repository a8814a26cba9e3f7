"""`flowc ui --host` (and `flowc serve --mcp --http N --host`) take a host alone — a name or an
IP address — the port going in `--port` / `--http`: a host with a port glued to it, a port that
is no number or out of range, an empty host or an address no machine has is a usage error
(exit 2) naming the value and the form allowed, before anything listens; a port another
process holds is a one-line error (exit 1) saying so and what to do, and `serve --http 0`
announces the port it got (docs/reference/ui.md, docs/reference/cli.md)."""

from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.durable_questions import flowc, start_flowc

from agentflow.cli import main


def _ui(tmp_path: Path, *args: str):
    return CliRunner().invoke(main, ["ui", "--database", str(tmp_path / "runs.sqlite"), *args])


@pytest.mark.parametrize(
    ("host", "said"),
    [
        ("127.0.0.1:abc", "'127.0.0.1:abc' is not a host: give the port with --port N (0 to 65535)"),
        ("localhost:99999", "'localhost:99999' is not a host: give the port with --port N (0 to 65535)"),
        ("127.0.0.1:8080", "'127.0.0.1:8080' is not a host: give the port with --port: --host 127.0.0.1 --port 8080"),
        ("[::1]:8080", "'[::1]:8080' is not a host: give the port with --port: --host ::1 --port 8080"),
        ("", "'' is not a host"),
        ("a b", "'a b' is not a host"),
        ("999.1.1.1", "'999.1.1.1' is not an IP address"),
        ("http://localhost", "'http://localhost' is not a host"),
    ],
)  # fmt: skip
def test_a_host_that_is_not_one_is_a_usage_error_naming_it(tmp_path, host, said):
    done = _ui(tmp_path, "--host", host, "--port", "0")
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output
    (error,) = [line for line in done.output.splitlines() if line.startswith("Error:")]
    assert error.startswith(f"Error: Invalid value for '--host': {said}"), error
    assert "a name or an IP address" in error, error
    assert "flowc ui:" not in done.output  # nothing listened


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "::1", "[::1]", "my-box.local."])
def test_a_host_name_or_address_passes_the_check(host):
    from agentflow.cli.common import listen_host_problem

    assert listen_host_problem(host) is None


def test_serve_checks_its_host_as_ui_does(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(main, ["serve", "--mcp", ".", "--http", "0", "--host", "h:1"])
    assert done.exit_code == 2, done.output
    assert "Invalid value for '--host': 'h:1' is not a host: give the port with --http" in (
        done.output
    )


def test_a_port_another_process_holds_is_one_line_saying_so(tmp_path):
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.bind(("127.0.0.1", 0))
    held.listen(1)
    port = held.getsockname()[1]
    try:
        done = _ui(tmp_path, "--port", str(port))
    finally:
        held.close()
    assert done.exit_code == 1, done.output
    (line,) = done.stderr.splitlines()
    assert line == (
        f"error: cannot listen on 127.0.0.1 port {port}: another process listens there "
        "(Address already in use): stop it, or give another --port (0: any free port)"
    ), line


def test_serve_on_a_held_port_says_so_before_it_announces_anything(tmp_path):
    """`flowc serve --mcp --http N` binds before it says where it serves: a held port is one
    line, exit 1 — once the server announced the port, then uvicorn's ERROR line, exit 3."""
    (tmp_path / "a.flow").write_text("stage s -> int { return 1 }\n")
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.bind(("127.0.0.1", 0))
    held.listen(1)
    port = held.getsockname()[1]
    try:
        done = subprocess.run(
            flowc("serve", "--mcp", ".", "--http", str(port)),
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        held.close()
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        f"error: cannot listen on 127.0.0.1 port {port}: another process listens there "
        "(Address already in use): stop it, or give another port (--http 0: any free one)"
    ], done.stderr


def test_serve_on_port_0_announces_the_port_it_got(tmp_path):
    (tmp_path / "a.flow").write_text("stage s -> int { return 1 }\n")
    proc = start_flowc(tmp_path, "serve", "--mcp", ".", "--http", "0")
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
    finally:
        proc.kill()
        proc.communicate()
    found = re.fullmatch(r"flowc serve: 1 tool\(s\) on http://127\.0\.0\.1:(\d+)/mcp: a\n", line)
    assert found is not None and int(found.group(1)) > 0, line
