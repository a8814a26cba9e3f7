"""The lines a stdio MCP server writes, read in linear time and bounded in size
(docs/reference/tools.md "MCP servers": "A result too large").

The ``mcp`` SDK's stdio client (``mcp.client.stdio.stdio_client``) reads the server's stdout as
text chunks and splits ``buffer + chunk`` at each one: a line of N bytes arriving in chunks of
64 KiB is copied N / 64 KiB times — quadratic (a 5 MB tool result took 1.4 s, 20 MB 28 s;
bench/mcp_huge_line.py).  :class:`LineChunks` takes the place of the ``TextReceiveStream`` it
reads through (:func:`install`): it gathers the bytes of a line in a list and hands the SDK
whole lines only, so the SDK's buffer is always empty and each byte is copied a fixed number of
times.

A line longer than :data:`MAX_LINE_BYTES` is not kept: its first and last bytes are, and at its
end the reader hands the SDK, in its place, a JSON-RPC error answering the request the line
answered (its ``id`` read from those ends, where every SDK writes it), so the one tool call
fails — ``tool_error``, naming the size and the limit — and the server and the run go on.  An
oversized line whose request cannot be told (no ``id`` at either end: a notification) is
skipped, as the SDK skips a line it cannot parse.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

__all__ = ["MAX_LINE_BYTES", "TOO_LARGE_CODE", "LineChunks", "install"]

#: The longest line (one JSON-RPC message: a tool's result, a resource) read from a stdio MCP
#: server: 64 MB.  A longer one fails the call it answers (``tool_error``).
MAX_LINE_BYTES = 64_000_000
#: The JSON-RPC error code of the answer put in place of a line too long (an implementation-
#: defined server error, -32000 … -32099).
TOO_LARGE_CODE = -32010
#: Bytes kept of each end of a line too long: where its ``id`` is read.
_ENDS = 512

_ID = r'(?P<id>-?\d+|"(?:[^"\\]|\\.)*")'
#: ``{"jsonrpc": "2.0", "id": …`` or ``{"id": …`` at the start of a line (Python SDK order)
_ID_FIRST = re.compile(rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _ID.encode())
#: ``…, "id": …}`` at the end of a line (the TypeScript SDK's order): its last member
_ID_LAST = re.compile(rb'[,{]\s*"id"\s*:\s*' + _ID.encode() + rb"\s*\}\s*\Z")

logger = logging.getLogger(__name__)


class LineChunks:
    """Text chunks of whole lines from ``stream`` (an anyio byte stream: the server's stdout),
    each ending with a newline (the last one may not, at the end of the stream): what
    ``mcp.client.stdio`` iterates in place of ``anyio.streams.text.TextReceiveStream``, with
    the same arguments.  A line over ``limit`` bytes (:data:`MAX_LINE_BYTES` by default) comes
    as the JSON-RPC error that answers its request instead, or not at all."""

    def __init__(
        self, transport_stream: Any, encoding: str = "utf-8", errors: str = "strict"
    ) -> None:
        self.stream = transport_stream
        self.encoding = encoding
        self.errors = errors
        self.limit = MAX_LINE_BYTES
        self._parts: list[bytes] = []  # the line so far (while it is within the limit)
        self._size = 0
        self._head = b""  # a line too long: its first bytes …
        self._tail = b""  # … and its last ones
        self._ended = False

    def __aiter__(self) -> LineChunks:
        return self

    async def __anext__(self) -> str:
        import anyio

        while not self._ended:
            try:
                data = await self.stream.receive()
            except anyio.EndOfStream:
                self._ended = True
                break
            text = self._take(data)
            if text:
                return text
        if self._parts:  # the last line, unended (the SDK keeps it and drops it at the end)
            rest, self._parts = b"".join(self._parts), []
            return rest.decode(self.encoding, self.errors)
        raise StopAsyncIteration

    def _take(self, data: bytes) -> str:
        """The whole lines ``data`` ends, decoded (``""`` when it ends none)."""
        out: list[bytes] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                self._add(data[start:])
                break
            self._add(data[start:end])
            line = self._line()
            if line is not None:
                out.append(line + b"\n")
            start = end + 1
        return b"".join(out).decode(self.encoding, self.errors) if out else ""

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        self._size += len(piece)
        if self._size <= self.limit:
            self._parts.append(piece)
            return
        if self._parts:  # just went over: keep its ends only from here on
            whole = b"".join(self._parts)
            self._head, self._parts = whole[:_ENDS], []
            self._tail = whole[-_ENDS:]
        if len(self._head) < _ENDS:
            self._head += piece[: _ENDS - len(self._head)]
        self._tail = (self._tail + piece[-_ENDS:])[-_ENDS:]

    def _line(self) -> bytes | None:
        """The line just ended: itself, or in place of one too long the error answering it."""
        size, self._size = self._size, 0
        if size <= self.limit:
            line, self._parts = b"".join(self._parts), []
            return line
        head, tail, self._head, self._tail = self._head, self._tail, b"", b""
        found = _ID_FIRST.match(head) or _ID_LAST.search(tail)
        if found is None:
            logger.warning("skipped a line of %d bytes from an MCP server (no request id)", size)
            return None
        request = json.loads(found.group("id"))
        message = (
            f"its answer is {_mb(size)}, more than the {_mb(self.limit)} a stdio MCP server's "
            "message may be (one line of its stdout)"
        )
        error = {"code": TOO_LARGE_CODE, "message": message, "data": {"bytes": size}}
        return json.dumps({"jsonrpc": "2.0", "id": request, "error": error}).encode()


def _mb(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB" if size >= 100_000 else f"{size} bytes"


def install() -> None:
    """Make ``mcp.client.stdio`` read through :class:`LineChunks` (its module global
    ``TextReceiveStream``, which its ``stdio_client`` constructs per server with the server's
    stdout, ``encoding`` and ``errors``; pinned by tests/runtime/tools/test_mcp_huge_lines.py).
    Idempotent; for every stdio MCP server of this process."""
    import mcp.client.stdio as sdk_stdio

    if getattr(sdk_stdio, "TextReceiveStream", None) is not LineChunks:
        # the SDK imports the name from anyio without re-exporting it (attr-defined under
        # no-implicit-reexport); LineChunks is no subclass of anyio's class (assignment)
        sdk_stdio.TextReceiveStream = LineChunks  # type: ignore[attr-defined,assignment]
