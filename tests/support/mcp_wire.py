"""The raw MCP stdio wire of ``flowc serve --mcp`` as the serve tests speak it: the client's
first request (:data:`INITIALIZE`) and the next line the server writes (:func:`next_reply`,
read on a thread so that a missing reply fails the test, never hangs it)."""

from __future__ import annotations

import json
import subprocess
import threading

#: The client's first request of an MCP session, as the tests write it on the wire.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


def next_reply(proc: subprocess.Popen, timeout: float = 60) -> dict:
    """The next line ``proc`` (a ``flowc serve --mcp`` subprocess) writes, as JSON, within
    ``timeout`` seconds (no reply fails the test)."""
    assert proc.stdout is not None
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert box and box[0], "no reply from the server"
    return json.loads(box[0])
