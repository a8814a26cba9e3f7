"""The npm tools the MCP tests use, installed by ``.ci/npm-tools.sh`` into ``.ci/node/``: a node
22, ``@modelcontextprotocol/server-everything``, ``server-filesystem``, the MCP Inspector and
the conformance suite.  A test that needs one that is not installed fails (never skips), saying
how to install it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PREFIX = REPO / ".ci" / "node"
MODULES = PREFIX / "node_modules"
NODE = MODULES / "node" / "bin" / "node"
EVERYTHING = MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
FILESYSTEM = MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
INSPECTOR = MODULES / "@modelcontextprotocol" / "inspector"


def need(path: Path) -> Path:
    """``path``, or fail the test: the npm tools are not installed."""
    if not path.exists():
        pytest.fail(
            f"{path.relative_to(REPO)} is missing: run `bash .ci/npm-tools.sh` (needs npm) "
            "to install the MCP tools the tests use"
        )
    return path


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """Wait until something listens on 127.0.0.1:``port`` (fail if ``proc`` exits first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stderr.read() if proc.stderr else ""
            pytest.fail(f"the server exited with {proc.returncode}: {out[-500:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    pytest.fail(f"nothing listened on port {port} within {timeout:g}s")


def start_everything_http(port: int) -> subprocess.Popen:
    """server-everything over streamable HTTP on ``port`` (endpoint ``/mcp``)."""
    proc = subprocess.Popen(
        [str(need(NODE)), str(need(EVERYTHING)), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_port(port, proc)
    return proc


def python() -> str:
    """The interpreter running the tests (it has mcp-server-time and mcp-server-git)."""
    return sys.executable
