"""The third-party MCP tools the tests use.  npm ones, installed by ``scripts/npm-tools.sh`` (run
by ``scripts/test.sh`` and ``.ci/run``) into ``.ci/node/``: a node 22,
``@modelcontextprotocol/server-everything``, ``server-filesystem``, the MCP Inspector and the
conformance suite; Python ones (``mcp-server-time``, ``mcp-server-git``) from the ``test`` extra
that ``scripts/setup.sh`` installs.  A test that needs one that is not installed fails (never
skips), saying how to install it."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.paths import REPO

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
            f"{path.relative_to(REPO)} is missing: run `bash scripts/npm-tools.sh` (needs npm) "
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


def python_server(module: str) -> str:
    """The interpreter running the tests, which must have the MCP server ``module`` (e.g.
    ``mcp_server_time``) installed, or fail the test: the ``test`` extra is not installed."""
    if importlib.util.find_spec(module) is None:
        pytest.fail(
            f"the MCP server module {module!r} is missing from {sys.executable}: run "
            "`bash scripts/setup.sh` (installs the package with its `test` extra)"
        )
    return sys.executable
