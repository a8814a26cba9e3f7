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
* ``book(city: str)`` → asks the client (elicitation: ``nights: int``, ``breakfast: bool`` with a
  default) and returns ``{"action", "content"}``;
* ``summarize(text: str)`` → asks the client's model (sampling, with a temperature, a stop
  sequence and a model hint) and returns its text;
* ``steps(count: int)`` → reports progress ``1..count`` and logs each step, then ``"stepped"``;
* ``clock(zone: str)`` → ``{"zone", "hour"}`` with an output schema (structured);
* ``bad_clock()`` → declared like ``clock`` but returns ``{"zone": 3}`` (breaks its schema);
* the resource ``memo://readme`` (text) and ``memo://config`` (JSON), the prompt
  ``review(topic)``.

``--name empty`` serves no tool at all (only the prompt), like a prompt-only server.
* ``garble()`` → writes a line of invalid UTF-8 on stdout (the protocol channel), then answers.

``--start-delay SECONDS`` sleeps before serving (a server that is slow to start).
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ModelHint, ModelPreferences, SamplingMessage, TextContent
from pydantic import BaseModel, Field

NAME = sys.argv[sys.argv.index("--name") + 1] if "--name" in sys.argv else "tracker"

server = MCPServer(NAME)


@server.prompt()
def review(topic: str) -> str:
    """Review a topic."""
    return f"Please review {topic}."


if NAME == "empty":
    server.run()
    sys.exit(0)


@server.resource("memo://readme", mime_type="text/plain", description="The read-me.")
def readme() -> str:
    return "Read me first."


@server.resource("memo://config", mime_type="application/json", description="The settings.")
def settings() -> str:
    return '{"retries": 3}'


class Booking(BaseModel):
    nights: int = Field(description="How many nights")
    breakfast: bool = Field(default=True, description="Breakfast included")


@server.tool()
async def book(city: str, ctx: Context) -> dict:
    """Book a room: asks the user how many nights."""
    result = await ctx.elicit(f"Booking in {city}: how long?", Booking)
    data = result.data.model_dump() if result.action == "accept" and result.data else None
    return {"action": result.action, "content": data}


@server.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Summarize the text with the client's model."""
    reply = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text=text))],
        max_tokens=50,
        system_prompt="Summarize in one line.",
        temperature=0.2,
        stop_sequences=["END"],
        model_preferences=ModelPreferences(hints=[ModelHint(name="unknown")]),
    )
    return reply.content.text if reply.content.type == "text" else ""


@server.tool()
async def steps(count: int, ctx: Context) -> str:
    """Report progress for each step."""
    for i in range(1, count + 1):
        await ctx.info(f"step {i}")
        await ctx.report_progress(i, count, f"step {i} of {count}")
    return "stepped"


class Clock(BaseModel):
    zone: str
    hour: int


@server.tool()
def clock(zone: str) -> Clock:
    """The hour in a zone."""
    return Clock(zone=zone, hour=12)


@server.tool(structured_output=False)
def bad_clock() -> dict:
    """Claims a Clock, returns something else."""
    return {"zone": 3}


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
