"""A bare-bones stdio MCP server written without the SDK, for faults the SDK would not let a
server commit: ``python tests/support/raw_mcp_server.py [--garble-at-start]``.

It answers ``initialize``, ``tools/list`` (one tool, ``echo(text)``) and ``tools/call``. Before
each ``tools/call`` answer it writes one line of invalid UTF-8 on stdout — the protocol channel —
as a server printing binary junk would (``--garble-at-start``: also before the ``initialize``
answer). ``--hang-up-on-call``: on ``tools/call`` it closes its stdout instead and keeps running
(a server whose protocol channel is gone while the process lives on). ``--clean``: no invalid
line before answers. ``--id-last``: the ``id`` of each answer is its last member, as the
TypeScript SDK writes it. ``echo`` takes ``repeat`` (an integer): the text that many times, as
one line of the answer however long (tests/runtime/tools/test_mcp_huge_lines.py).
"""

from __future__ import annotations

import json
import os
import sys
import time

GARBAGE = b"\xff\xfe not utf-8 \xc3\x28\n"


def send(message: dict) -> None:
    if "--id-last" in sys.argv and "id" in message:
        message = {**{k: v for k, v in message.items() if k != "id"}, "id": message["id"]}
    sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
    sys.stdout.buffer.flush()


def main() -> None:
    for raw in sys.stdin.buffer:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue  # notifications
        if method == "initialize":
            if "--garble-at-start" in sys.argv:
                sys.stdout.buffer.write(GARBAGE)
            version = msg.get("params", {}).get("protocolVersion", "2025-06-18")
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "result": {
                        "protocolVersion": version,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "raw", "version": "1"},
                    },
                }
            )
        elif method == "tools/list":
            tool = {
                "name": "echo",
                "description": "Echo the text.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}, "repeat": {"type": "integer"}},
                },
            }
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [tool]}})
        elif method == "tools/call":
            if "--hang-up-on-call" in sys.argv:
                sys.stdout.flush()
                os.close(1)
                time.sleep(60)
                return
            if "--clean" not in sys.argv:
                sys.stdout.buffer.write(GARBAGE)
            arguments = msg.get("params", {}).get("arguments", {})
            text = arguments.get("text", "") * int(arguments.get("repeat", 1))
            result = {"content": [{"type": "text", "text": text}], "isError": False}
            send({"jsonrpc": "2.0", "id": mid, "result": result})
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": method}})


if __name__ == "__main__":
    main()
