"""The wire of ``flowc serve --mcp`` (serve.py): which stdio lines and HTTP bodies are JSON-RPC
messages the server can answer (:func:`message_problem`, its error replies otherwise), and the
lines of the stdio wire checked and made whole (lone surrogates escaped in JSON become U+FFFD)
before the MCP SDK reads them (docs/mcp.md "Transports")."""

from __future__ import annotations

import json
import re
from typing import Any

from agentflow.core.text import clean_json

__all__ = ["SURROGATE_ESCAPE", "CheckedLines", "made_whole", "message_problem"]


def message_problem(text: str | bytes) -> Any:
    """Why ``text`` (one stdio line, or an HTTP body) is no JSON-RPC message the server can
    answer, as the MCP SDK's ``JSONRPCError`` to send back (``id`` null), or None when it is
    one (a single message or a batch): -32700 when it is not JSON; -32600 when it is JSON but
    no JSON-RPC 2.0 message, or a request (it has a ``method``) whose ``id`` is not a string or
    an integer (MCP: ``null``, objects, arrays, fractions and booleans are refused)."""
    from mcp import types

    def error(code: int, message: str) -> Any:
        return types.JSONRPCError(
            jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)
        )

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return error(types.PARSE_ERROR, "Parse error: the message is not JSON")
    for item in data if isinstance(data, list) and data else [data]:
        if not isinstance(item, dict) or item.get("jsonrpc") != "2.0":
            return error(types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
        if "method" in item and "id" in item:
            rid = item["id"]
            if isinstance(rid, bool) or not isinstance(rid, int | str):
                return error(
                    types.INVALID_REQUEST,
                    "Invalid Request: a request id must be a string or an integer, "
                    f"not {json.dumps(rid)[:40]}",
                )
    return None


#: a JSON ``\uXXXX`` escape of a surrogate
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def made_whole(text: str) -> str:
    """A JSON message with each lone surrogate it escapes (``"\\udcd9"``) replaced by U+FFFD
    (:func:`agentflow.core.text.clean_json`), re-encoded; ``text`` itself when it has none. The
    SDK's parser refuses lone surrogates outright (no reply), and a run could not hold one."""
    if SURROGATE_ESCAPE.search(text) is None:
        return text
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text
    cleaned = clean_json(data)
    return text if cleaned is data else json.dumps(cleaned, ensure_ascii=False)


class CheckedLines:
    """The lines of the stdio wire with the ones :func:`message_problem` refuses taken out (their
    error replies go to ``rejected``); blank lines are skipped."""

    def __init__(self, lines: Any, rejected: Any) -> None:
        self.lines = lines
        self.rejected = rejected

    def __aiter__(self) -> Any:
        return self._checked()

    async def _checked(self) -> Any:
        async with self.rejected:
            async for line in self.lines:
                if not line.strip():
                    continue
                problem = message_problem(line)
                if problem is None:
                    yield made_whole(line)
                else:
                    await self.rejected.send(problem)
