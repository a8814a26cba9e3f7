"""``flowc serve --mcp --durable``: each call a durable run that survives the server's death.

The official SDK's client calls a served flow over streamable HTTP with an idempotency key
(``_meta`` ``io.agentflow/idempotency-key``); the server is killed with SIGKILL while the run's
``ask`` waits on the client's elicitation; a new server on the same directory resumes the run
at start-up (its finished tool step is not repeated), and the client calling again with the same
key is asked the question again, hears the progress of the steps the resumed run finishes, and
gets the run's result."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
from mcp.types import ElicitResult
from support.npm_tools import free_port
from support.served_durable import KEY, PAINT, call_killed_while_asked, session, start_served

from agentflow.runtime.config import load_config
from agentflow.runtime.durable import runs
from agentflow.runtime.durable.runs import run_alive

NAP = """/// Nap, then note it.
flow nap
input { seconds: number }

extern tool user__nap(seconds: number) -> text
extern tool user__note(text: text) -> text

stage main {
  let woke = user__nap(seconds: input.seconds)
  return user__note(text: "after the nap")
}
"""

NOTES_PY = '''import asyncio


def note(text: str, ctx) -> str:
    """Append the text to notes.txt in the workspace (one line per call), return it."""
    with (ctx.workspace / "notes.txt").open("a", encoding="utf-8") as fh:
        fh.write(text + "\\n")
    return text


async def nap(seconds: float, ctx) -> str:
    """Sleep, then leave a mark in the workspace."""
    await asyncio.sleep(seconds)
    (ctx.workspace / "woke.txt").write_text("woke", encoding="utf-8")
    return "woke"
'''


@pytest.fixture
def served(tmp_path: Path) -> Path:
    d = tmp_path / "flows"
    d.mkdir()
    (d / "paint.flow").write_text(PAINT, encoding="utf-8")
    (d / "nap.flow").write_text(NAP, encoding="utf-8")
    (d / "notes.py").write_text(NOTES_PY, encoding="utf-8")
    (d / "flow.toml").write_text('[tools]\nmodules = ["notes.py"]\n', encoding="utf-8")
    return d


async def test_a_killed_server_resumes_the_run_and_the_same_key_gets_its_result(served):
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    first = start_served(served, port)
    questions: list[str] = []
    try:
        await call_killed_while_asked(url, first, questions=questions)
        assert questions == ["Which colour for the north wall?"]
        assert (served / "notes.txt").read_text() == "north\n"

        database = f"sqlite:///{served / '.flowc' / 'durable.sqlite'}"
        assert not run_alive(database, "mcp-paint-job-1")  # its process died: `stopped`
        second = start_served(served, port)
        try:
            # the new server resumed the run at start-up and holds it (`flowc runs`: running)
            assert run_alive(database, "mcp-paint-job-1")
            answers: list[str] = []

            async def answer_blue(context, params):
                answers.append(params.message)
                return ElicitResult(action="accept", content={"answer": "blue"})

            async with session(url, answer_blue) as client:
                progress: list[tuple[float, float | None, str | None]] = []

                async def on_progress(value, total, message):
                    progress.append((value, total, message))

                result = await client.call_tool(
                    "paint", {"wall": "north"}, meta={KEY: "job-1"}, progress_callback=on_progress
                )
                assert result.is_error is False, result.content
                # the resumed run reports the steps it finishes here (the recorded note is
                # not counted again)
                assert progress == [(1.0, 2.0, "step main › colour = ask done")]
                assert result.structured_content == {"wall": "north", "colour": "blue"}
                assert result.meta == {"io.agentflow/run": "mcp-paint-job-1"}
                # the interrupted question was asked again; the finished note not run again
                assert answers == ["Which colour for the north wall?"]
                assert (served / "notes.txt").read_text() == "north\n"

                # the same key again: the recorded result at once, nothing asked or run
                again = await client.call_tool("paint", {"wall": "north"}, meta={KEY: "job-1"})
                assert again.structured_content == {"wall": "north", "colour": "blue"}
                assert len(answers) == 1
                # the same key with other arguments is refused; a malformed key too
                other = await client.call_tool("paint", {"wall": "east"}, meta={KEY: "job-1"})
                assert other.is_error is True
                assert "with other arguments" in other.content[0].text
                bad = await client.call_tool("paint", {"wall": "east"}, meta={KEY: "a/b"})
                assert bad.is_error is True and "idempotency key" in bad.content[0].text
                assert (served / "notes.txt").read_text() == "north\n"

                # a client's cancellation cancels the durable run (as `flowc cancel`: the
                # nap in flight finishes, the note after it never runs); the same key says so
                nap = {"seconds": 2}
                call = asyncio.ensure_future(client.call_tool("nap", nap, meta={KEY: "nap-1"}))
                await asyncio.sleep(1)
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
                ended = await client.call_tool("nap", nap, meta={KEY: "nap-1"})
                assert ended.is_error is True and "cancelled" in ended.content[0].text
                assert (served / "notes.txt").read_text() == "north\n"

                # two calls with one new key at once: one run, and both get its result
                short = {"seconds": 0.5}
                both = await asyncio.gather(
                    *(client.call_tool("nap", short, meta={KEY: "nap-2"}) for _ in range(2))
                )
                assert [b.content[0].text for b in both] == ["after the nap"] * 2
                assert (served / "notes.txt").read_text() == "north\nafter the nap\n"
        finally:
            second.terminate()
            second.wait(10)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(5)


@pytest.mark.battery  # README.md "The battery tier"
async def test_on_temporal_a_killed_server_s_run_goes_on_and_the_same_key_gets_its_result(
    served, temporal_server
):
    # the same directory and the same calls, on Temporal: one line of flow.toml (plus where
    # the server is); the new server is a worker of the task queue, so Temporal hands it the
    # run the killed one left (no recovery of its own)
    (served / "flow.toml").write_text(
        '[tools]\nmodules = ["notes.py"]\n\n[durable]\nengine = "temporal"\n'
        f'address = "{temporal_server.address}"\ntask_queue = "serve-{free_port()}"\n',
        encoding="utf-8",
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    first = start_served(served, port)
    try:
        await call_killed_while_asked(url, first, within=60)
        assert (served / "notes.txt").read_text() == "north\n"
        second = start_served(served, port)
        try:
            answers: list[str] = []

            async def answer_blue(context, params):
                answers.append(params.message)
                return ElicitResult(action="accept", content={"answer": "blue"})

            async with session(url, answer_blue) as client:
                result = await client.call_tool("paint", {"wall": "north"}, meta={KEY: "job-1"})
                assert result.is_error is False, result.content
                assert result.structured_content == {"wall": "north", "colour": "blue"}
                assert result.meta == {"io.agentflow/run": "mcp-paint-job-1"}
                assert answers == ["Which colour for the north wall?"]
                assert (served / "notes.txt").read_text() == "north\n"  # not run again
                again = await client.call_tool("paint", {"wall": "north"}, meta={KEY: "job-1"})
                assert again.structured_content == {"wall": "north", "colour": "blue"}
                other = await client.call_tool("paint", {"wall": "east"}, meta={KEY: "job-1"})
                assert other.is_error is True and "with other arguments" in other.content[0].text
                # a client's cancellation cancels the run (Temporal cancellation)
                nap = {"seconds": 5}
                call = asyncio.ensure_future(client.call_tool("nap", nap, meta={KEY: "nap-1"}))
                database = runs.database_for(load_config(served / "flow.toml"))
                while not any(r.run_id == "mcp-nap-nap-1" for r in await runs.list_runs(database)):
                    await asyncio.sleep(0.1)  # the run started (a loaded server takes a while)
                await asyncio.sleep(0.5)
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
                ended = await client.call_tool("nap", nap, meta={KEY: "nap-1"})
                assert ended.is_error is True and "cancelled" in ended.content[0].text
                assert (served / "notes.txt").read_text() == "north\n"
            assert answers == ["Which colour for the north wall?"]
        finally:
            second.terminate()
            second.wait(10)
            assert second.returncode in (0, -signal.SIGTERM), second.returncode
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(5)
