"""`flowc serve --mcp --durable` over streamable HTTP as the durable serve tests (tests/cli)
drive it with the official SDK's client: the flow ``paint`` (a recorded tool call, then an
``ask``), a server started on a port, a client session, and a call whose server is killed while
its run asks."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitResult

from support.npm_tools import wait_for_port

FLOWC = Path(sys.executable).parent / "flowc"
#: the ``_meta`` key of a call's idempotency key
KEY = "io.agentflow/idempotency-key"

#: notes the wall (``user__note`` of the test's `notes.py`), then asks for its colour
PAINT = """/// Note the wall, then ask for its colour.
flow paint
input { wall: text }
output { wall: text, colour: text }

extern tool user__note(text: text) -> text

stage main {
  let noted = user__note(text: input.wall)
  let colour = ask "Which colour for the ${noted} wall?" expect "blue" | "green" | "white" default "white"
  return { wall: noted, colour: colour }
}
"""


def start_served(
    directory: Path, port: int, stderr: IO[bytes] | int = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """``flowc serve --mcp DIRECTORY --durable --http PORT`` (stdout dropped, stderr to
    ``stderr``), once its port answers (within 90 s: a loaded machine compiles, DBOS starts)."""
    proc = subprocess.Popen(
        [str(FLOWC), "serve", "--mcp", str(directory), "--durable", "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    wait_for_port(port, proc, timeout=90)
    return proc


@contextlib.asynccontextmanager
async def session(url: str, elicitation_callback: Any) -> AsyncIterator[ClientSession]:
    """An initialized client session with the server at ``url`` (``http://…/mcp``) that answers
    its questions with ``elicitation_callback``."""
    async with (
        streamable_http_client(url) as (r, w),
        ClientSession(r, w, elicitation_callback=elicitation_callback) as client,
    ):
        await client.initialize()
        yield client


async def call_killed_while_asked(
    url: str,
    server: subprocess.Popen[bytes],
    within: float = 20,
    questions: list[str] | None = None,
) -> None:
    """Call ``paint`` (wall ``north``, key ``job-1``) and, as the run asks (within ``within``
    seconds; its note is recorded), kill ``server`` with SIGKILL; once it is dead, drop the
    call.  ``questions``: where the question asked is added."""
    asked = asyncio.Event()

    async def kill_while_asked(context: Any, params: Any) -> ElicitResult:
        if questions is not None:
            questions.append(params.message)
        server.send_signal(signal.SIGKILL)  # mid-run: the note is recorded, the ask waits
        asked.set()
        await asyncio.sleep(30)
        return ElicitResult(action="cancel")

    async def call_then_die() -> None:
        async with session(url, kill_while_asked) as client:
            await client.call_tool("paint", {"wall": "north"}, meta={KEY: "job-1"})

    call = asyncio.ensure_future(call_then_die())
    await asyncio.wait_for(asked.wait(), within)
    server.wait(5)
    call.cancel()
    with contextlib.suppress(BaseException):
        await call
