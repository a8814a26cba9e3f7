"""``flowc serve --mcp`` answers every message it cannot take (issue 28, item 13): a stdio line
that is not JSON gets the JSON-RPC error -32700, a request whose ``id`` is no string or integer
-32600 (stdio and streamable HTTP: never HTTP 202 and silence), and the server goes on serving."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from support.npm_tools import free_port, wait_for_port

from agentflow.serve import message_problem

FLOWC = Path(sys.executable).parent / "flowc"

COUNT = """/// One.
flow one
output int

stage main {
  return 1
}
"""


@pytest.fixture
def served(tmp_path: Path) -> Path:
    d = tmp_path / "flows"
    d.mkdir()
    (d / "one.flow").write_text(COUNT, encoding="utf-8")
    return d


def _line(proc: subprocess.Popen, timeout: float = 60) -> dict:
    """The next line the server writes, within ``timeout`` seconds (no reply fails the test)."""
    assert proc.stdout is not None
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert box and box[0], "no reply from the server"
    return json.loads(box[0])


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
            reply = _line(proc)
            assert reply["id"] is None and reply["error"]["code"] in (-32700, -32600), reply
            expected = -32700 if raw.startswith("this") else -32600
            assert reply["error"]["code"] == expected, reply
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        proc.stdin.write(json.dumps(init) + "\n")
        proc.stdin.flush()
        assert _line(proc)["id"] == 1
        proc.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        proc.stdin.write('{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
        proc.stdin.flush()
        listed = _line(proc)
        assert listed["id"] == 2 and [t["name"] for t in listed["result"]["tools"]] == ["one"]
    finally:
        proc.kill()
        proc.wait(10)


def test_http_answers_a_request_with_an_object_id_with_invalid_request(served):
    port = free_port()
    proc = subprocess.Popen(
        [str(FLOWC), "serve", "--mcp", str(served), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        headers = {"Accept": "application/json, text/event-stream"}
        url = f"http://127.0.0.1:{port}/mcp"
        bad = httpx.post(
            url, json={"jsonrpc": "2.0", "id": {}, "method": "tools/list"}, headers=headers
        )
        assert bad.status_code == 400
        assert bad.json()["error"]["code"] == -32600 and bad.json()["id"] is None
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        ok = httpx.post(url, json=init, headers=headers)
        assert ok.status_code == 200, ok.text
    finally:
        proc.terminate()
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
