"""A restarted `flowc serve --mcp --durable` that cannot build a run its predecessor left (here
the `[tools]` module it needs is gone) leaves that run pending rather than ending it: it says
so on stderr (the run, why, what to do), does not hold it (`flowc runs` says `stopped`), and a
call with the run's key is answered with that message; a server started once it is put right
takes the run up and the call gets the run's result.  Before, the server's start-up recovery
built the run inside its root and ended it `error` for good."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitResult
from support.npm_tools import free_port, wait_for_port

from agentflow.runtime.durable.runs import run_alive

FLOWC = Path(sys.executable).parent / "flowc"
KEY = "io.agentflow/idempotency-key"
RUN = "mcp-paint-job-1"

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

NOTES_PY = '''def note(text: str, ctx) -> str:
    """Append the text to notes.txt in the workspace, return it."""
    with (ctx.workspace / "notes.txt").open("a", encoding="utf-8") as fh:
        fh.write(text + "\\n")
    return text
'''


def _start(directory: Path, port: int, log: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [str(FLOWC), "serve", "--mcp", str(directory), "--durable", "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab"),
    )
    wait_for_port(port, proc, timeout=90)  # a loaded machine: flowc compiles, DBOS starts
    return proc


def _status(directory: Path) -> str:
    database = f"sqlite:///{directory / '.flowc' / 'durable.sqlite'}"
    done = subprocess.run(
        [str(FLOWC), "runs", "--json", "--database", database], capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    (run,) = [r for r in json.loads(done.stdout) if r["run_id"] == RUN]
    return str(run["status"])


async def test_a_restarted_server_leaves_a_run_it_cannot_build_stopped_for_one_that_can(
    tmp_path: Path,
):
    served = tmp_path / "flows"
    served.mkdir()
    (served / "paint.flow").write_text(PAINT, encoding="utf-8")
    (served / "notes.py").write_text(NOTES_PY, encoding="utf-8")
    (served / "flow.toml").write_text('[tools]\nmodules = ["notes.py"]\n', encoding="utf-8")
    log = tmp_path / "serve.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    database = f"sqlite:///{served / '.flowc' / 'durable.sqlite'}"
    first = _start(served, port, log)
    asked = asyncio.Event()

    async def kill_while_asked(context, params):
        first.send_signal(signal.SIGKILL)  # mid-run: the note is recorded, the ask waits
        asked.set()
        await asyncio.sleep(30)
        return ElicitResult(action="cancel")

    async def call_then_die() -> None:
        async with (
            streamable_http_client(url) as (r, w),
            ClientSession(r, w, elicitation_callback=kill_while_asked) as session,
        ):
            await session.initialize()
            await session.call_tool("paint", {"wall": "north"}, meta={KEY: "job-1"})

    async def answer_blue(context, params):
        return ElicitResult(action="accept", content={"answer": "blue"})

    servers = [first]
    try:
        call = asyncio.ensure_future(call_then_die())
        await asyncio.wait_for(asked.wait(), 20)
        first.wait(5)
        call.cancel()
        with contextlib.suppress(BaseException):
            await call

        (served / "notes.py").rename(tmp_path / "notes.py")  # what the run needs is gone
        second = _start(served, port, log)
        servers.append(second)
        for _ in range(600):  # the server says so as it starts
            if f"run {RUN} cannot be taken up by this process" in log.read_text():
                break
            await asyncio.sleep(0.1)
        assert not run_alive(database, RUN)  # not held: `stopped`, for `flowc resume`
        async with (
            streamable_http_client(url) as (r, w),
            ClientSession(r, w, elicitation_callback=answer_blue) as session,
        ):
            await session.initialize()
            refused = await session.call_tool("paint", {"wall": "north"}, meta={KEY: "job-1"})
        assert refused.is_error is True
        said = refused.content[0].text
        assert f"run {RUN} cannot be taken up by this process" in said, said
        assert "notes.py" in said and f"flowc resume {RUN}" in said, said
        second.send_signal(signal.SIGINT)
        second.wait(30)
        text = log.read_text()
        assert "Traceback" not in text, text
        assert _status(served) == "stopped"

        (tmp_path / "notes.py").rename(served / "notes.py")  # put right: a server takes it up
        third = _start(served, port, log)
        servers.append(third)
        async with (
            streamable_http_client(url) as (r, w),
            ClientSession(r, w, elicitation_callback=answer_blue) as session,
        ):
            await session.initialize()
            result = await session.call_tool("paint", {"wall": "north"}, meta={KEY: "job-1"})
        assert result.is_error is False, result.content
        assert result.structured_content == {"wall": "north", "colour": "blue"}
        assert (served / "notes.txt").read_text() == "north\n"  # the note was not run again
    finally:
        for proc in servers:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
