"""A restarted `flowc serve --mcp --durable` that cannot build a run its predecessor left (here
the `[tools]` module it needs is gone) leaves that run pending rather than ending it: it says
so on stderr (the run, why, what to do), does not hold it (`flowc runs` says `stopped`), and a
call with the run's key is answered with that message; a server started once it is put right
takes the run up and the call gets the run's result.  Before, the server's start-up recovery
built the run inside its root and ended it `error` for good."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path

from mcp.types import ElicitResult
from support.npm_tools import free_port
from support.served_durable import FLOWC, KEY, PAINT, call_killed_while_asked, session, start_served

from agentflow.runtime.durable.runs import run_alive

RUN = "mcp-paint-job-1"

NOTES_PY = '''def note(text: str, ctx) -> str:
    """Append the text to notes.txt in the workspace, return it."""
    with (ctx.workspace / "notes.txt").open("a", encoding="utf-8") as fh:
        fh.write(text + "\\n")
    return text
'''


def _start(directory: Path, port: int, log: Path) -> subprocess.Popen:
    return start_served(directory, port, stderr=log.open("ab"))


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

    async def answer_blue(context, params):
        return ElicitResult(action="accept", content={"answer": "blue"})

    servers = [first]
    try:
        await call_killed_while_asked(url, first)

        (served / "notes.py").rename(tmp_path / "notes.py")  # what the run needs is gone
        second = _start(served, port, log)
        servers.append(second)
        for _ in range(600):  # the server says so as it starts
            if f"run {RUN} cannot be taken up by this process" in log.read_text():
                break
            await asyncio.sleep(0.1)
        assert not run_alive(database, RUN)  # not held: `stopped`, for `flowc resume`
        async with session(url, answer_blue) as client:
            refused = await client.call_tool("paint", {"wall": "north"}, meta={KEY: "job-1"})
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
        async with session(url, answer_blue) as client:
            result = await client.call_tool("paint", {"wall": "north"}, meta={KEY: "job-1"})
        assert result.is_error is False, result.content
        assert result.structured_content == {"wall": "north", "colour": "blue"}
        assert (served / "notes.txt").read_text() == "north\n"  # the note was not run again
    finally:
        for proc in servers:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
