"""A real MCP server for the tests, written with the official SDK (``mcp`` 2.x: ``MCPServer``,
formerly FastMCP), run over stdio: ``python tests/support/mcp_server.py [--name NAME]``, or over
streamable HTTP with ``--http PORT`` (endpoint ``http://127.0.0.1:PORT/mcp``).

Tools:

* ``list_issues(limit: int = 10, state: str = "open")`` → ``{"issues": [...]}`` (structured);
* ``echo(text: str)`` → the text;
* ``add(a: int, b: int)`` → ``a + b``;
* ``fail(message: str)`` → raises (the result comes back with ``is_error``);
* ``slow(seconds: float)`` → sleeps, then ``"done"``;
* ``die()`` → the process exits immediately (a server dying mid-run);
* ``env(name: str)`` → the value of an environment variable of the server process;
* ``cwd()`` → the server's working directory;
* ``garble()`` → writes a line of invalid UTF-8 on stdout (the protocol channel), then answers.

``--start-delay SECONDS`` sleeps before serving (a server that is slow to start).
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

NAME = sys.argv[sys.argv.index("--name") + 1] if "--name" in sys.argv else "tracker"

server = MCPServer(NAME)


@server.tool()
def list_issues(limit: int = 10, state: str = "open") -> dict:
    """List issues of the tracker, newest first."""
    issues = [
        {"id": f"ISS-{i}", "title": f"Issue {i}", "state": state} for i in range(1, limit + 1)
    ]
    return {"issues": issues}


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(message: str) -> str:
    """Always fails with the message."""
    raise ToolError(message)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep for the given number of seconds."""
    await asyncio.sleep(seconds)
    return "done"


@server.tool()
def die() -> str:
    """Exit the server process at once."""
    os._exit(3)


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable of the server ("" when unset)."""
    return os.environ.get(name, "")


@server.tool()
def cwd() -> str:
    """The server's working directory."""
    return os.getcwd()


@server.tool()
def garble() -> str:
    """Write a line of invalid UTF-8 on stdout (the protocol channel), then answer "ok"."""
    os.write(1, b"\xff\xfe garbage \xc3\x28\n")  # fd 1 itself: the SDK may wrap sys.stdout
    return "ok"


if __name__ == "__main__":
    if "--start-delay" in sys.argv:
        import time

        time.sleep(float(sys.argv[sys.argv.index("--start-delay") + 1]))
    if "--http" in sys.argv:  # streamable HTTP on 127.0.0.1:PORT, path /mcp
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()
