"""A real, scripted OpenAI-compatible chat-completions server for tests.

``ChatServer`` listens on 127.0.0.1 (a free port) in a background thread and answers
``POST /v1/chat/completions`` from a *script*: a list of replies consumed in order, or a callable
``fn(request_json) -> reply`` (a "scripted investigator" that can look at the tool results in the
messages). A reply is a :class:`Reply`, a ``str`` (a text answer) or a ``dict`` (a full response
body). Helpers build the usual ones::

    server.script([tool_calls(("builtin__read_file", {"path": "a.txt"})), text('{"ok": true}')])
    server.script([status(429, headers={"Retry-After": "0.1"}), text("{}")])

Every request is recorded in ``server.requests`` (JSON bodies) and ``server.headers``, and in
``server.log`` when it came and when its reply was sent (``{"index", "received", "sent"}``, epoch
seconds; ``sent`` is None for a reply cut off by a fault).

Both protocols are spoken: ``POST /v1/chat/completions`` (OpenAI) and ``POST /v1/messages``
(Anthropic; build replies with :func:`anthropic_message`, :func:`anthropic_error`). Faults::

    status(429, headers={"Retry-After": "1"})     # rate limit
    status(500) / anthropic_error(529)            # transient server errors
    reset()                                       # the socket is closed in the middle of the reply
    text("late", delay=2.0)                       # a slow reply (client timeout)
    text('{"a": "cut', finish_reason="length")    # cut off by the token limit
    anthropic_message([...], "max_tokens")        # the same, Anthropic style
    overloaded_200()                              # HTTP 200 whose body is an "Overloaded" error

Streams (Server-Sent Events): :func:`sse` sends a list of events (``(name, data)`` pairs or
data dicts) as ``text/event-stream``; :func:`openai_stream` / :func:`anthropic_stream` build the
events of a whole answer from a reply body, cut into pieces; ``cut_after=N`` drops the
connection after N events (a stream that breaks off). ``server.stream_only = True`` makes the
server answer every request as a stream, asked for or not (a streaming-only server)::

    server.script([openai_stream(completion('{"a": 1}'), pieces=4)])
    server.script([sse([{"error": {"type": "overloaded_error", "message": "Overloaded"}}])])
"""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agentflow.core.text import escape_surrogates
from agentflow.runtime.models.schema_subsets import subset_problems

__all__ = [
    "ChatServer",
    "Reply",
    "TEST_API_KEY",
    "answer",
    "anthropic_error",
    "anthropic_message",
    "anthropic_stream",
    "anthropic_text",
    "completion",
    "enforced_schemas",
    "extra_models",
    "extra_rest",
    "gemini_reply",
    "openai_stream",
    "overloaded_200",
    "recorded_sse",
    "reset",
    "responses_reply",
    "sse",
    "status",
    "system_text",
    "text",
    "tool_calls",
    "tool_messages",
    "tool_use",
]

TEST_API_KEY = "sk-test-SECRET-do-not-leak-0123456789"


@dataclass
class Reply:
    """One scripted HTTP reply: status, JSON (or raw text) body, headers, and a delay in seconds.

    ``fault``: ``"reset"`` sends the status line, headers and half the body, then resets the
    connection (TCP RST); ``"drop"`` closes the connection without sending anything.
    ``events``: a Server-Sent Events reply (``[(event name or "", data text)]``) sent chunk by
    chunk; ``cut_after``: close the connection after that many events, with a TCP reset
    (``cut="reset"``) or an orderly close that ends the body as if it were complete
    (``cut="close"``: the stream just stops, as behind a proxy that hit its time limit). ``trickle``: send the
    body one byte every that many seconds (never idle long enough for a between-bytes timeout).
    ``line_end``: the line ending of a stream's frames (``"\\r"`` or ``"\\r\\n"`` as some servers
    send; the Server-Sent Events format allows all three).
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    fault: str | None = None
    events: list[tuple[str, str]] | None = None
    cut_after: int | None = None
    cut: str = "reset"
    trickle: float | None = None
    line_end: str = "\n"


_ids = itertools.count(1)


def completion(
    content: str | None = None,
    calls: list[dict[str, Any]] | None = None,
    finish_reason: str | None = None,
    usage: tuple[int, int] = (10, 5),
    model: str = "test-model",
) -> dict[str, Any]:
    """A chat-completions response body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        },
    }


def text(content: str | None, finish_reason: str = "stop", delay: float = 0.0, **kw: Any) -> Reply:
    """A text answer (``content`` may be None for an empty reply)."""
    return Reply(body=completion(content, finish_reason=finish_reason, **kw), delay=delay)


def answer(value: Any, **kw: Any) -> Reply:
    """A text answer holding ``value`` as JSON (Unicode kept).  An agent whose ``expect`` type
    is not an object answers its wrapped contract: ``answer({"value": "tech"})`` for
    ``expect "tech" | "billing"`` (``answer("tech")`` is refused, and the repair message says
    so)."""
    return text(json.dumps(value, ensure_ascii=False), **kw)


#: a scripted tool call: ``(name, arguments)`` or ``(name, arguments, id)``
_Call = tuple[str, object] | tuple[str, object, str | None]


def tool_calls(*calls: _Call, content: str | None = None, delay: float = 0.0, **kw: Any) -> Reply:
    """Tool calls: each ``(name, arguments)`` or ``(name, arguments, id)``.

    ``arguments``: a dict (sent as a JSON string, like OpenAI), a str (sent verbatim: use it for
    malformed arguments), or ``("object", dict)`` to send an already-decoded object (like Ollama).
    ``id`` ``None`` or ``""`` omits the id.
    """
    out = []
    for index, call in enumerate(calls, start=1):
        name, arguments = call[0], call[1]
        call_id = call[2] if len(call) > 2 else f"call_{next(_ids)}_{index}"
        if isinstance(arguments, tuple) and arguments[0] == "object":
            wire = arguments[1]
        elif isinstance(arguments, str):
            wire = arguments
        else:
            wire = json.dumps(arguments, ensure_ascii=False)
        item: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": wire}}
        if call_id:
            item["id"] = call_id
        out.append(item)
    return Reply(body=completion(content, calls=out, **kw), delay=delay)


def responses_reply(
    text: str | None = None,
    *calls: _Call,
    usage: tuple[int, int, int] = (10, 5, 0),
    reasoning: str | None = None,
    model: str = "test-model",
) -> Reply:
    """An OpenAI Responses API reply (``POST /v1/responses``): an optional reasoning item (with
    ``reasoning`` as its encrypted content), a message with ``text``, and a ``function_call``
    item per ``(name, arguments)`` / ``(name, arguments, call_id)``; ``usage`` is (input,
    output, cached input) tokens."""
    n = next(_ids)
    output: list[dict[str, Any]] = []
    if reasoning is not None:
        output.append(
            {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": reasoning}
        )
    if text is not None:
        output.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for index, call in enumerate(calls, start=1):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{n}_{index}",
                "call_id": call[2] if len(call) > 2 else f"call_{n}_{index}",
                "name": call[0],
                "arguments": json.dumps(call[1], ensure_ascii=False),
                "status": "completed",
            }
        )
    return Reply(
        body={
            "id": f"resp_{n}",
            "object": "response",
            "status": "completed",
            "error": None,
            "model": model,
            "output": output,
            "usage": {
                "input_tokens": usage[0],
                "input_tokens_details": {"cached_tokens": usage[2]},
                "output_tokens": usage[1],
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage[0] + usage[1],
            },
        }
    )


def gemini_reply(
    text: str | None = None,
    *calls: _Call,
    usage: tuple[int, int, int] = (10, 5, 0),
    signature: str | None = None,
    finish: str = "STOP",
    model: str = "gemini-test",
) -> Reply:
    """A Gemini generateContent reply: a text part and a ``functionCall`` part per ``(name,
    args)``; ``signature`` is put as the ``thoughtSignature`` of the first part; ``usage`` is
    (prompt, candidates, cached) tokens."""
    parts: list[dict[str, Any]] = []
    if text is not None:
        parts.append({"text": text})
    for call in calls:
        parts.append({"functionCall": {"name": call[0], "args": call[1]}})
    if signature is not None and parts:
        parts[0]["thoughtSignature"] = signature
    metadata = {
        "promptTokenCount": usage[0],
        "candidatesTokenCount": usage[1],
        "totalTokenCount": usage[0] + usage[1],
    }
    if usage[2]:
        metadata["cachedContentTokenCount"] = usage[2]
    return Reply(
        body={
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}
            ],
            "usageMetadata": metadata,
            "modelVersion": model,
        }
    )


def status(code: int, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
    """An error reply; ``body`` defaults to an OpenAI-style error object."""
    if body is None:
        body = {"error": {"message": f"scripted status {code}", "type": "test", "code": None}}
    return Reply(status=code, body=body, headers=dict(headers or {}))


def reset(*, before_reply: bool = False) -> Reply:
    """A connection reset: half a reply then TCP RST (or, ``before_reply``, no reply at all)."""
    return Reply(
        body=completion("this reply never arrives whole"),
        fault="drop" if before_reply else "reset",
    )


def anthropic_message(
    blocks: list[dict[str, Any]],
    stop_reason: str = "end_turn",
    usage: tuple[int, int] = (7, 3),
    model: str = "claude-test",
) -> dict[str, Any]:
    """An Anthropic Messages API response body with content ``blocks``."""
    return {
        "id": f"msg_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def anthropic_text(content: str, stop_reason: str = "end_turn", **kw: Any) -> dict[str, Any]:
    """An Anthropic reply holding one text block."""
    return anthropic_message([{"type": "text", "text": content}], stop_reason, **kw)


def tool_use(name: str, arguments: Any, call_id: str | None = None) -> dict[str, Any]:
    """An Anthropic ``tool_use`` block."""
    return {
        "type": "tool_use",
        "id": call_id or f"toolu_{next(_ids)}",
        "name": name,
        "input": arguments,
    }


def anthropic_error(
    code: int, kind: str | None = None, message: str | None = None, **kw: Any
) -> Reply:
    """An Anthropic-style error reply (529 → ``overloaded_error`` by default)."""
    kind = kind or {
        429: "rate_limit_error",
        529: "overloaded_error",
        401: "authentication_error",
    }.get(code, "api_error")
    body = {"type": "error", "error": {"type": kind, "message": message or f"scripted {kind}"}}
    return status(code, body=body, **kw)


def overloaded_200(kind: str = "openai") -> Reply:
    """An HTTP 200 whose body is an "Overloaded" error (OpenAI or Anthropic shape), as some
    servers and gateways send under load."""
    if kind == "anthropic":
        body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    else:
        body = {"error": {"message": "Overloaded", "type": "server_error", "code": None}}
    return Reply(body=body)


def sse(
    events: list[Any], *, cut_after: int | None = None, cut: str = "reset", delay: float = 0.0
) -> Reply:
    """A Server-Sent Events reply: each event a data dict/str, or an ``(event name, data)``
    pair (data a dict or str); ``cut_after``/``cut`` as in :class:`Reply`."""
    out: list[tuple[str, str]] = []
    for item in events:
        name, data = item if isinstance(item, tuple) else ("", item)
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        out.append((name, escape_surrogates(text)))
    return Reply(events=out, cut_after=cut_after, cut=cut, delay=delay)


def recorded_sse(text: str) -> Reply:
    """A recorded Server-Sent Events body (as a provider sent it) replayed event by event."""
    events: list[tuple[str, str]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):  # Gemini frames with CRLF
        name, data = "", []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[len("event:") :].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:") :].removeprefix(" "))
        if data:
            events.append((name, "\n".join(data)))
    return Reply(events=events)


def _pieces(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def openai_stream(
    body: dict[str, Any],
    *,
    pieces: int = 3,
    cut_after: int | None = None,
    done: bool = True,
    cut: str = "reset",
) -> Reply:
    """A chat-completions reply ``body`` (see :func:`completion`) as the chunks OpenAI streams:
    the role first, the content cut into ``pieces``, each tool call (its head, then its
    arguments in ``pieces``), the ``finish_reason``, usage last, then ``[DONE]``;
    ``cut_after``/``cut`` as in :class:`Reply`."""
    choice = body["choices"][0]
    message = choice["message"]
    base = {
        "id": body.get("id", "chatcmpl-s"),
        "object": "chat.completion.chunk",
        "model": body["model"],
    }
    events: list[Any] = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    for key in ("reasoning_content", "reasoning"):
        for piece in _pieces(message.get(key) or "", pieces):
            events.append({**base, "choices": [{"index": 0, "delta": {key: piece}}]})
    for piece in _pieces(message.get("content") or "", pieces):
        events.append({**base, "choices": [{"index": 0, "delta": {"content": piece}}]})
    for index, call in enumerate(message.get("tool_calls") or []):
        head = {k: v for k, v in call.items() if k != "function"}
        head["index"] = index
        head["function"] = {"name": call["function"]["name"], "arguments": ""}
        events.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [head]}}]})
        for piece in _pieces(call["function"]["arguments"], pieces):
            part = {"index": index, "function": {"arguments": piece}}
            events.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [part]}}]})
    events.append(
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    )
    events.append({**base, "choices": [], "usage": body.get("usage")})
    if done:
        events.append("[DONE]")
    return sse(events, cut_after=cut_after, cut=cut)


def anthropic_stream(
    body: dict[str, Any], *, pieces: int = 3, cut_after: int | None = None, cut: str = "reset"
) -> Reply:
    """An Anthropic reply ``body`` (see :func:`anthropic_message`) as the Messages API streams
    it: message_start, each block started / delta'd in ``pieces`` / stopped, message_delta,
    message_stop; ``cut_after``/``cut`` as in :class:`Reply`."""
    start = {k: v for k, v in body.items() if k not in ("content", "stop_reason")}
    start["content"] = []
    start["stop_reason"] = None
    usage = dict(body.get("usage") or {})
    start["usage"] = {**usage, "output_tokens": 1}
    events: list[Any] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(body["content"]):
        kind = block["type"]
        first: dict[str, Any]
        if kind == "text":
            first = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], pieces)]
        elif kind == "thinking":
            first = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in _pieces(block["thinking"], pieces)
            ] + [{"type": "signature_delta", "signature": block.get("signature", "")}]
        elif kind == "tool_use":
            first = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            text = json.dumps(block["input"], ensure_ascii=False)
            deltas = [
                {"type": "input_json_delta", "partial_json": p} for p in _pieces(text, pieces)
            ]
        else:
            first, deltas = block, []
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": first},
            )
        )
        for delta in deltas:
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": body.get("stop_reason"), "stop_sequence": None},
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(events, cut_after=cut_after, cut=cut)


Script = list[Any] | Callable[[dict[str, Any]], Any]


class ChatServer:
    """The server; use as a context manager or call start()/stop(). ``url`` ends with ``/v1``.

    It also accepts ``POST /v1/messages`` (Anthropic) so dict replies can script that API; the
    request path is recorded in ``paths``.
    """

    PATHS = (
        "/v1/chat/completions",
        "/chat/completions",
        "/v1/messages",
        "/v1/responses",
        "/responses",
        "/openai/v1/chat/completions",  # Azure OpenAI's v1 API
        "/openai/v1/responses",
    )
    #: Azure OpenAI's classic deployment URL (``/openai/deployments/DEPLOYMENT/chat/completions``)
    AZURE = re.compile(r"/openai/deployments/[^/]+/chat/completions")
    #: Bedrock's Converse / ConverseStream paths (``/model/MODEL/converse``)
    BEDROCK = re.compile(r"/model/[^/]+/(?:converse|converse-stream)")

    def __init__(self, script: Script | None = None):
        self._lock = threading.Lock()
        self._script: Script = []
        self._position = 0
        self.requests: list[dict[str, Any]] = []
        #: per request: its index in ``requests``, when it came, when its reply was sent
        self.log: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        #: the bytes of each request's body, as sent (a signature over them can be checked)
        self.raw_bodies: list[bytes] = []
        #: when set (``"anthropic"``, ``"openai"``, ``"gemini"``): every schema a request asks
        #: the provider to enforce is checked against that provider's documented subset
        #: (:func:`agentflow.runtime.models.schema_subsets.subset_problems`) and a request using
        #: anything outside it is refused with a 400, as the real endpoint does; the refused
        #: requests' problems are kept in ``refused``
        self.schema_subset: str | None = None
        self.refused: list[list[str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        #: answer every request as a stream (a streaming-only server), asked for or not
        self.stream_only = False
        if script is not None:
            self.script(script)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> ChatServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence
                return

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                route = self.path.split("?", 1)[0].rstrip("/")
                if (
                    route not in server.PATHS
                    and not _GEMINI_PATH.fullmatch(route)
                    and not server.BEDROCK.fullmatch(route)
                    and not server.AZURE.fullmatch(route)
                ):
                    self._send(Reply(status=404, body={"error": {"message": "not found"}}))
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(Reply(status=400, body={"error": {"message": "bad json"}}))
                    return
                if server.schema_subset is not None:
                    refusal = server._refusal(route, body)
                    if refusal is not None:
                        with server._lock:
                            server.paths.append(self.path)
                            server.requests.append(body)
                            server.headers.append(dict(self.headers.items()))
                        self._send(refusal)
                        return
                received = time.time()
                with server._lock:
                    server.paths.append(self.path)
                    server.raw_bodies.append(raw)
                reply = server._next(body, dict(self.headers.items()))
                with server._lock:
                    index = next(
                        i for i in range(len(server.requests) - 1, -1, -1)
                        if server.requests[i] is body
                    )  # fmt: skip
                    entry = {"index": index, "received": received, "sent": None}
                    server.log.append(entry)
                if reply.delay:
                    time.sleep(reply.delay)
                with server._lock:
                    server.in_flight -= 1
                if reply.fault:
                    self._fault(reply)
                    return
                if reply.events is None and server.stream_only and reply.status < 400:
                    if "/messages" in self.path:
                        reply = anthropic_stream(reply.body)
                    elif isinstance(reply.body, dict) and "choices" in reply.body:
                        reply = openai_stream(reply.body)
                if reply.events is not None:
                    self._send_events(reply)
                else:
                    self._send(reply)
                entry["sent"] = time.time()

            def _send_events(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for number, (name, data) in enumerate(reply.events or [], start=1):
                    end = reply.line_end
                    frame = (f"event: {name}{end}" if name else "") + f"data: {data}{end}{end}"
                    self.wfile.write(frame.encode("utf-8"))
                    self.wfile.flush()
                    if reply.cut_after is not None and number >= reply.cut_after:
                        if reply.cut == "reset":  # SO_LINGER 0: close() sends a TCP RST
                            self.connection.setsockopt(
                                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                            )
                        else:  # an orderly FIN: the body (read to EOF) just ends here
                            self.connection.shutdown(socket.SHUT_RDWR)
                        self.connection.close()
                        return

            def _fault(self, reply: Reply) -> None:
                self.close_connection = True
                if reply.fault == "reset":
                    data = json.dumps(reply.body).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                # SO_LINGER 0: close() sends a TCP RST instead of an orderly FIN
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.connection.close()

            def _send(self, reply: Reply) -> None:
                headers = dict(reply.headers)
                if isinstance(reply.body, (dict, list)):  # a lone surrogate sent as its escape
                    data = escape_surrogates(json.dumps(reply.body, ensure_ascii=False)).encode()
                    ctype = "application/json"
                elif isinstance(reply.body, bytes):  # e.g. an AWS event stream, as recorded
                    data = reply.body
                    ctype = headers.pop("Content-Type", "application/octet-stream")
                else:
                    data = str(reply.body or "").encode()
                    ctype = "text/plain"
                self.send_response(reply.status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if reply.trickle:
                    try:
                        for i in range(len(data)):
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                            time.sleep(reply.trickle)
                    except (BrokenPipeError, ConnectionResetError):
                        self.close_connection = True
                    return
                self.wfile.write(data)

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------------ script

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """Base URL for an OpenAI-compatible client (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, script: Script) -> ChatServer:
        """Replace the script (and reset the position; recorded requests are kept)."""
        with self._lock:
            self._script = script if callable(script) else list(script)
            self._position = 0
        return self

    @property
    def remaining(self) -> int:
        """Replies of a list script not consumed yet."""
        return 0 if callable(self._script) else len(self._script) - self._position

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            script = self._script
            if not callable(script):
                if self._position >= len(script):
                    return status(
                        400, {"error": {"message": "chat_server: script exhausted", "type": "test"}}
                    )
                item = script[self._position]
                self._position += 1
        if callable(script):
            try:
                item = script(body)
            except Exception as exc:  # noqa: BLE001 - report script bugs as a 400 (never retried)
                return status(400, {"error": {"message": f"chat_server script raised: {exc!r}"}})
        return _as_reply(item)

    def _refusal(self, route: str, body: dict[str, Any]) -> Reply | None:
        """The 400 the provider of :attr:`schema_subset` answers a request whose enforced
        schemas leave its documented subset (None: accepted)."""
        assert self.schema_subset is not None
        problems: list[str] = []
        for where, schema in enforced_schemas(route, body):
            problems.extend(f"{where}: {p}" for p in subset_problems(schema, self.schema_subset))
        if not problems:
            return None
        with self._lock:
            self.refused.append(problems)
        message = "; ".join(problems[:5])
        if route.endswith("/messages"):
            error: dict[str, Any] = {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": message},
            }
        elif _GEMINI_PATH.fullmatch(route):
            error = {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
        else:
            error = {
                "error": {
                    "message": f"Invalid schema for response_format 'output': {message}",
                    "type": "invalid_request_error",
                    "param": "response_format",
                }
            }
        return status(400, body=error)

    # ------------------------------------------------------------------ config helpers

    def env(self, model: str = "test-model", api_key: str | None = TEST_API_KEY) -> dict[str, str]:
        """Environment variables that point a configuration at this server, whichever way it is
        made: ``OPENAI_BASE_URL`` / ``OPENAI_MODEL`` / ``OPENAI_API_KEY`` (no flow.toml: the
        default model from the environment) and ``SCRIPTED_API_KEY``, the key
        :meth:`write_config`'s flow.toml reads — so ``load_config(server.write_config(d),
        env=server.env())`` and a ``flowc`` run with these variables work as they are
        (docs/reference/testing.md "Testing from Python")."""
        out = {"OPENAI_BASE_URL": self.url, "OPENAI_MODEL": model}
        if api_key:
            out["OPENAI_API_KEY"] = api_key
            out["SCRIPTED_API_KEY"] = api_key
        return out

    def config_text(self, *, model: str = "test-model", extra: str = "", retries: int = 2) -> str:
        """A flow.toml pointing every role at this server (provider ``scripted``; its key is read
        from ``SCRIPTED_API_KEY``, which :meth:`env` sets)."""
        return (
            "[models]\n"
            f'default = "scripted:{model}"\n'
            f"{extra_models(extra)}"
            "[providers.scripted]\n"
            'kind = "openai"\n'
            f'base_url = "{self.url}"\n'
            'api_key_env = "SCRIPTED_API_KEY"\n'
            f"max_retries = {retries}\n"
            "backoff_base = 0.01\n"
            "backoff_max = 0.05\n"
            f"{extra_rest(extra)}"
        )

    def write_config(self, directory: str | os.PathLike[str], **kw: Any) -> Path:
        """Write ``flow.toml`` (see :meth:`config_text`; ``kw`` its options) into ``directory``,
        made with its parents when it does not exist; returns the file's path.  Raises
        NotADirectoryError when ``directory`` is a file (docs/reference/testing.md "Testing
        from Python")::

            with ChatServer([answer({"ok": True})]) as server:
                config = load_config(server.write_config(tmp / "cfg"), env=server.env())
        """
        folder = Path(directory)
        if folder.exists() and not folder.is_dir():
            raise NotADirectoryError(
                f"{folder}: is a file; write_config writes flow.toml into a directory"
            )
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "flow.toml"
        path.write_text(self.config_text(**kw), encoding="utf-8")
        return path

    # ------------------------------------------------------------------ inspection

    def last_messages(self) -> list[dict[str, Any]]:
        """The messages of the last request."""
        return self.requests[-1]["messages"] if self.requests else []


class _QuietServer(ThreadingHTTPServer):
    """Client-side disconnects (timeouts, injected resets) are expected: no tracebacks."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        return


def extra_models(extra: str) -> str:
    """Lines of ``extra`` that belong in [models] (before the first table header)."""
    lines = []
    for line in extra.splitlines():
        if line.strip().startswith("["):
            break
        lines.append(line)
    return "".join(f"{line}\n" for line in lines)


def extra_rest(extra: str) -> str:
    """Lines of ``extra`` from its first table header on."""
    lines = extra.splitlines()
    for index, line in enumerate(lines):
        if line.strip().startswith("["):
            return "".join(f"{line}\n" for line in lines[index:])
    return ""


def _as_reply(item: Any) -> Reply:
    if isinstance(item, Reply):
        return item
    if isinstance(item, str):
        return text(item)
    if isinstance(item, dict):
        return Reply(body=item)
    raise TypeError(f"cannot turn {type(item).__name__} into a chat reply")


#: Gemini's generateContent / streamGenerateContent paths (``/v1beta/models/M:generateContent``)
_GEMINI_PATH = re.compile(
    r"(?:/v1beta|/v1)?/models/[^/:]+:(?:generateContent|streamGenerateContent)"
)


def enforced_schemas(route: str, body: dict[str, Any]) -> list[tuple[str, Any]]:
    """``[(where, schema)]``: the schemas a request asks the provider to enforce — Anthropic
    ``output_config.format.schema`` and strict tools' ``input_schema``; OpenAI strict
    ``response_format`` and strict functions' ``parameters``; Responses ``text.format.schema``
    and strict tools; Gemini ``generationConfig.responseJsonSchema``."""
    out: list[tuple[str, Any]] = []
    if route.endswith("/messages"):
        fmt = (body.get("output_config") or {}).get("format") or {}
        if isinstance(fmt, dict) and "schema" in fmt:
            out.append(("output_config.format.schema", fmt["schema"]))
        for index, tool in enumerate(body.get("tools") or []):
            if isinstance(tool, dict) and tool.get("strict"):
                out.append((f"tools.{index}.input_schema", tool.get("input_schema")))
    elif route.endswith("/responses"):
        fmt = (body.get("text") or {}).get("format") or {}
        if isinstance(fmt, dict) and fmt.get("strict") and "schema" in fmt:
            out.append(("text.format.schema", fmt["schema"]))
        for index, tool in enumerate(body.get("tools") or []):
            if isinstance(tool, dict) and tool.get("strict"):
                out.append((f"tools[{index}].parameters", tool.get("parameters")))
    elif _GEMINI_PATH.fullmatch(route):
        config = body.get("generationConfig") or {}
        if isinstance(config, dict) and "responseJsonSchema" in config:
            out.append(("generationConfig.responseJsonSchema", config["responseJsonSchema"]))
    else:
        fmt = (body.get("response_format") or {}).get("json_schema") or {}
        if isinstance(fmt, dict) and fmt.get("strict") and "schema" in fmt:
            out.append(("response_format.json_schema.schema", fmt["schema"]))
        for index, tool in enumerate(body.get("tools") or []):
            function = tool.get("function") if isinstance(tool, dict) else None
            if isinstance(function, dict) and function.get("strict"):
                out.append((f"tools[{index}].function.parameters", function.get("parameters")))
    return out


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``role: tool`` messages of a recorded request."""
    return [m for m in request.get("messages", []) if m.get("role") == "tool"]


def system_text(request: dict[str, Any]) -> str:
    """The system text of a recorded request: Anthropic's ``system`` (a string or a list of text
    blocks, as sent with ``cache_control``) or the OpenAI system/developer message."""
    system = request.get("system")
    if isinstance(system, list):
        return "".join(b.get("text", "") for b in system if isinstance(b, dict))
    if isinstance(system, str):
        return system
    for message in request.get("messages", []):
        content = message.get("content")
        if message.get("role") in ("system", "developer") and isinstance(content, str):
            return content
    return ""
