"""``flowc serve --mcp`` answers every message it cannot take (issue 28, item 13): a stdio line
that is not JSON gets the JSON-RPC error -32700, a request whose ``id`` is no string or integer
-32600 (stdio and streamable HTTP: never HTTP 202 and silence), and the server goes on serving;
a call cancelled over HTTP leaves none of its run's MCP server processes behind."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from support.mcp_wire import INITIALIZE, next_reply
from support.npm_tools import free_port, wait_for_port
from support.processes import children_of

from agentflow.serve_wire import message_problem

FLOWC = Path(sys.executable).parent / "flowc"

COUNT = """/// One.
flow one
output int

stage main {
  return 1
}
"""


ECHO = """/// Say it back.
flow echo
input { said: text }
output text

stage main {
  return input.said
}
"""


@pytest.fixture
def served(tmp_path: Path) -> Path:
    d = tmp_path / "flows"
    d.mkdir()
    (d / "one.flow").write_text(COUNT, encoding="utf-8")
    (d / "echo.flow").write_text(ECHO, encoding="utf-8")
    return d


def test_stdio_answers_unparsable_lines_and_bad_ids_then_serves_on(served):
    proc = subprocess.Popen(
        [str(FLOWC), "serve", "--mcp", str(served)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdin is not None
        for raw in ("this is not json", '{"jsonrpc":"2.0","id":{},"method":"tools/list"}', "[1]"):
            proc.stdin.write(raw + "\n")
            proc.stdin.flush()
            reply = next_reply(proc)
            assert reply["id"] is None and reply["error"]["code"] in (-32700, -32600), reply
            expected = -32700 if raw.startswith("this") else -32600
            assert reply["error"]["code"] == expected, reply
        proc.stdin.write(json.dumps(INITIALIZE) + "\n")
        proc.stdin.flush()
        assert next_reply(proc)["id"] == 1
        proc.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        proc.stdin.write('{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
        proc.stdin.flush()
        listed = next_reply(proc)
        assert listed["id"] == 2
        assert sorted(t["name"] for t in listed["result"]["tools"]) == ["echo", "one"]
        # arguments holding a lone surrogate (JSON-escaped): the run sees U+FFFD, the reply is
        # valid UTF-8 JSON
        call = '{"jsonrpc":"2.0","id":3,"method":"tools/call",'
        call += '"params":{"name":"echo","arguments":{"said":"x\\udcd9\\u2028y"}}}'
        proc.stdin.write(call + "\n")
        proc.stdin.flush()
        echoed = next_reply(proc)
        assert echoed["id"] == 3 and not echoed["result"].get("isError"), echoed
        assert echoed["result"]["structuredContent"] == {"result": "x\ufffd\u2028y"}
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("{", -32700),
        ("[]", -32600),
        ('{"jsonrpc":"1.0","id":1,"method":"x"}', -32600),
        ('{"jsonrpc":"2.0","id":null,"method":"x"}', -32600),
        ('{"jsonrpc":"2.0","id":1.5,"method":"x"}', -32600),
        ('{"jsonrpc":"2.0","id":true,"method":"x"}', -32600),
        ('[{"jsonrpc":"2.0","id":1,"method":"x"},{"jsonrpc":"2.0","id":[],"method":"y"}]', -32600),
        ('{"jsonrpc":"2.0","id":"a","method":"x"}', None),
        ('{"jsonrpc":"2.0","method":"notifications/x"}', None),
        ('{"jsonrpc":"2.0","id":3,"result":{}}', None),
    ],
)
def test_which_messages_are_refused(text, code):
    problem = message_problem(text)
    assert (problem.error.code if problem is not None else None) == code


SLOW = """/// Nap on the tracker.
flow slow
input { seconds: number }

extern tool tracker__slow(seconds: number) -> text

stage main {
  return tracker__slow(seconds: input.seconds)
}
"""

MCP_SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_server.py"


async def _echo_over_http(port: int, escaped: str) -> str:
    """Call the echo flow over raw streamable HTTP with ``escaped`` as JSON string text."""
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=60) as http:
        first = await http.post(url, json=INITIALIZE, headers=headers)
        assert first.status_code == 200, first.text
        session = {**headers, "mcp-session-id": first.headers["mcp-session-id"]}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post(url, json=note, headers=session)
        body = (
            '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo",'
            f'"arguments":{{"said":"{escaped}"}}}}}}'
        )
        reply = await http.post(
            url, content=body, headers={**session, "content-type": "application/json"}
        )
    assert reply.status_code == 200, reply.text
    data = [ln[5:].strip() for ln in reply.text.splitlines() if ln.startswith("data:")]
    message = json.loads(data[-1] if data else reply.text)
    assert message["id"] == 2 and not message["result"].get("isError"), message
    return message["result"]["structuredContent"]["result"]


async def _until(predicate, limit: float = 30.0) -> bool:
    end = asyncio.get_running_loop().time() + limit
    while not predicate():
        if asyncio.get_running_loop().time() > end:
            return False
        await asyncio.sleep(0.05)
    return True


async def test_http_refuses_bad_ids_and_a_cancelled_call_leaves_no_mcp_server_running(tmp_path):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    d = tmp_path / "flows"
    d.mkdir()
    (d / "slow.flow").write_text(SLOW, encoding="utf-8")
    (d / "echo.flow").write_text(ECHO, encoding="utf-8")
    (d / "flow.toml").write_text(
        "[mcp.tracker]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(MCP_SERVER))}]\n",
        encoding="utf-8",
    )
    port = free_port()
    proc = subprocess.Popen(
        [str(FLOWC), "serve", "--mcp", str(d), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        before = children_of(proc.pid)
        # a request whose id is an object: HTTP 400 and -32600, never 202 and silence
        headers = {"Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient() as http:
            bad = await http.post(
                f"http://127.0.0.1:{port}/mcp",
                json={"jsonrpc": "2.0", "id": {}, "method": "tools/list"},
                headers=headers,
            )
        assert bad.status_code == 400
        assert bad.json()["error"]["code"] == -32600 and bad.json()["id"] is None
        assert await _echo_over_http(port, "x\\udcd9y") == "x\ufffdy"
        async with (
            streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (r, w),
            ClientSession(r, w) as session,
        ):
            await session.initialize()
            call = asyncio.ensure_future(session.call_tool("slow", {"seconds": 30}))
            # the run's MCP server is up (a child of the serving process)
            assert await _until(lambda: len(children_of(proc.pid)) > len(before))
            await asyncio.sleep(0.5)  # the slow call is in flight
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            assert await _until(lambda: children_of(proc.pid) == before), children_of(proc.pid)
            # and the server goes on serving
            assert sorted(t.name for t in (await session.list_tools()).tools) == ["echo", "slow"]
    finally:
        proc.terminate()
        proc.wait(10)
