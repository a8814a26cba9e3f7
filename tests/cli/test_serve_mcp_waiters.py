"""``flowc serve --mcp --durable``: several calls waiting on one run (one idempotency key).

Two clients of the official SDK, each on its own streamable HTTP session, call one served flow
with the same key: the second joins the first one's run.  It gets the run's progress from the
moment it joined (continuing the run's count, earlier notifications not replayed), and the
run's question is asked of one call at a time — the earliest still waiting (the one that
started the run) — and of the next only when that one is gone."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitResult
from support.npm_tools import free_port, wait_for_port

FLOWC = Path(sys.executable).parent / "flowc"
KEY = "io.agentflow/idempotency-key"

NAPS = """/// Three naps in a row.
flow naps
input { seconds: number }

extern tool user__nap(seconds: number) -> text

stage main {
  let a = user__nap(seconds: input.seconds)
  let b = user__nap(seconds: input.seconds)
  let c = user__nap(seconds: input.seconds)
  return "${a} ${b} ${c}"
}
"""

PAINT = """/// Ask for the wall's colour.
flow paint
input { wall: text }
output { wall: text, colour: text }

stage main {
  let colour = ask "Which colour for the ${input.wall} wall?" expect "blue" | "green" | "white" default "white"
  return { wall: input.wall, colour: colour }
}
"""

NAP_PY = '''import asyncio


async def nap(seconds: float) -> str:
    """Sleep, then say so."""
    await asyncio.sleep(seconds)
    return "woke"
'''


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One durable server for the module's tests (each uses keys of its own)."""
    d = tmp_path_factory.mktemp("waiters") / "flows"
    d.mkdir()
    (d / "naps.flow").write_text(NAPS, encoding="utf-8")
    (d / "paint.flow").write_text(PAINT, encoding="utf-8")
    (d / "nap.py").write_text(NAP_PY, encoding="utf-8")
    (d / "flow.toml").write_text('[tools]\nmodules = ["nap.py"]\n', encoding="utf-8")
    port = free_port()
    proc = subprocess.Popen(
        [str(FLOWC), "serve", "--mcp", str(d), "--durable", "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, proc, timeout=90)  # a loaded machine: flowc compiles, DBOS starts
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


async def test_a_call_joining_a_running_run_gets_its_progress_from_then_on(url):
    first: list[tuple[float, float | None]] = []
    joined: list[tuple[float, float | None]] = []
    one_done = asyncio.Event()

    async def on_first(value, total, message):
        first.append((value, total))
        one_done.set()

    async def on_joined(value, total, message):
        joined.append((value, total))

    async def call(on_progress):
        async with (
            streamable_http_client(url) as (r, w),
            ClientSession(r, w) as session,
        ):
            await session.initialize()
            return await session.call_tool(
                "naps", {"seconds": 0.6}, meta={KEY: "naps-1"}, progress_callback=on_progress
            )

    starter = asyncio.ensure_future(call(on_first))
    await asyncio.wait_for(one_done.wait(), 20)  # the first nap is done: join now
    joiner = asyncio.ensure_future(call(on_joined))
    results = await asyncio.wait_for(asyncio.gather(starter, joiner), 30)
    assert [r.content[0].text for r in results] == ["woke woke woke"] * 2
    assert [r.meta for r in results] == [{"io.agentflow/run": "mcp-naps-naps-1"}] * 2
    assert first == [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]  # three naps (the return folds in)
    # the joiner's notifications continue the run's count; the first step's is not replayed
    assert joined and joined == first[-len(joined) :]
    assert joined[0][0] >= 2.0


async def test_only_the_call_that_started_the_run_is_asked_while_it_waits(url):
    asked_first: list[str] = []
    asked_second: list[str] = []
    second_joined = asyncio.Event()

    async def answer_green_later(context, params):
        asked_first.append(params.message)
        await second_joined.wait()
        await asyncio.sleep(1.0)  # time for the second call to be asked too, if it were
        return ElicitResult(action="accept", content={"answer": "green"})

    async def answer_blue(context, params):
        asked_second.append(params.message)
        return ElicitResult(action="accept", content={"answer": "blue"})

    async def call(elicit):
        async with (
            streamable_http_client(url) as (r, w),
            ClientSession(r, w, elicitation_callback=elicit) as session,
        ):
            await session.initialize()
            return await session.call_tool("paint", {"wall": "east"}, meta={KEY: "paint-1"})

    starter = asyncio.ensure_future(call(answer_green_later))
    while not asked_first:
        await asyncio.sleep(0.05)
    joiner = asyncio.ensure_future(call(answer_blue))
    await asyncio.sleep(1.0)  # the joiner is waiting on the run by now
    second_joined.set()
    results = await asyncio.wait_for(asyncio.gather(starter, joiner), 30)
    assert [r.structured_content for r in results] == [{"wall": "east", "colour": "green"}] * 2
    assert asked_first == ["Which colour for the east wall?"]
    assert asked_second == []


@pytest.mark.parametrize("leaving", ["closes its session", "drops its connection"])
async def test_the_question_goes_to_the_next_call_when_the_asked_one_leaves(url, leaving):
    key = "paint-closed" if leaving == "closes its session" else "paint-dropped"
    asked_first: list[str] = []
    asked_second: list[str] = []
    leave = asyncio.Event()

    async def never_answer(context, params):
        asked_first.append(params.message)
        await asyncio.sleep(60)
        return ElicitResult(action="cancel")

    async def answer_blue(context, params):
        asked_second.append(params.message)
        return ElicitResult(action="accept", content={"answer": "blue"})

    async def call_then_leave() -> None:
        """Call, then leave without answering or cancelling the call: close the session (a
        client that quits), or drop the connection without a goodbye (a client whose process
        died: the session is never closed)."""
        closes = leaving == "closes its session"
        async with (
            streamable_http_client(url, terminate_on_close=closes) as (r, w),
            ClientSession(r, w, elicitation_callback=never_answer) as session,
        ):
            await session.initialize()
            call = asyncio.ensure_future(
                session.call_tool("paint", {"wall": "west"}, meta={KEY: key})
            )
            await leave.wait()
        with contextlib.suppress(BaseException):
            await call

    async def call_and_wait():
        async with (
            streamable_http_client(url) as (r, w),
            ClientSession(r, w, elicitation_callback=answer_blue) as session,
        ):
            await session.initialize()
            return await session.call_tool("paint", {"wall": "west"}, meta={KEY: key})

    starter = asyncio.ensure_future(call_then_leave())
    while not asked_first:
        await asyncio.sleep(0.05)
    joiner = asyncio.ensure_future(call_and_wait())
    await asyncio.sleep(1.0)
    assert asked_second == []  # the first client is still there: only it is asked
    leave.set()
    await asyncio.wait_for(starter, 10)
    result = await asyncio.wait_for(joiner, 20)
    assert result.structured_content == {"wall": "west", "colour": "blue"}
    assert asked_first == asked_second == ["Which colour for the west wall?"]


async def test_an_accepted_form_missing_the_field_leaves_the_durable_question_waiting(url):
    # `{"value": …}` for a form requiring `answer`: asked once more saying why, then the
    # question waits (`flowc answer`, or its timeout) — the `default "white"` never stands in
    asked: list[str] = []
    logged: list[object] = []
    warned = asyncio.Event()

    async def wrong_field(context, params):
        asked.append(params.message)
        return ElicitResult(action="accept", content={"value": "blue"})

    async def on_log(params):
        logged.append(params.data)
        warned.set()

    async with (
        streamable_http_client(url) as (r, w),
        ClientSession(r, w, elicitation_callback=wrong_field, logging_callback=on_log) as session,
    ):
        await session.initialize()
        call = asyncio.ensure_future(
            session.call_tool("paint", {"wall": "north"}, meta={KEY: "paint-form"})
        )
        await asyncio.wait_for(warned.wait(), 30)
        await asyncio.sleep(0.5)
        assert not call.done()  # no result: the question waits, not answered "white"
        call.cancel()
        with contextlib.suppress(BaseException):
            await call
    assert asked == [
        "Which colour for the north wall?",
        "Which colour for the north wall?\n\n(The last answer was not accepted: the form has "
        "no field `answer` (it gave `value`; the requested schema requires `answer`).)",
    ]
    assert logged == [
        "answer to `Which colour for the north wall?` not accepted: the form has no field "
        "`answer` (it gave `value`; the requested schema requires `answer`); the question "
        "waits: flowc answer mcp-paint-paint-form colour VALUE"
    ]
