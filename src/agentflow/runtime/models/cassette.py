"""Record and replay model exchanges (docs/spec/RUNTIME.md §5: ``--record FILE`` / ``--replay
FILE``).

A cassette is a JSON Lines file; each line is one exchange::

    {"key": "<sha256>", "request": {messages, tools, response_schema}, "response": {...}}

The key is the SHA-256 of the *normalised* request: messages, tools and the response schema only,
never the provider, model name, URL, headers or API key, so a recorded run replays against any
configuration or none.  Nothing secret is ever written: requests are stored in the neutral form of
:mod:`agentflow.runtime.models.base`, which holds no credentials, and every configured secret a
model or a tool put into a message is redacted (:mod:`agentflow.core.redaction`).

Identical requests recorded several times are replayed in recorded order.  A request that is not in
the cassette raises :class:`~agentflow.errors.RunError` with code ``replay_miss``, whose message
shows the nearest recorded request and where it differs; the executor adds the step path.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import threading
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentflow.core.redaction import redact_data
from agentflow.core.text import escape_surrogates, finite_dumps
from agentflow.core.vocabulary import Code
from agentflow.errors import ConfigError, RunError
from agentflow.runtime.config import Config, ProviderConfig, ResolvedModel
from agentflow.runtime.extract import json_depth_exceeds, too_deep_message
from agentflow.runtime.models.base import (
    MAX_TOKEN_COUNT,
    ChatRequest,
    ChatResponse,
    ModelClient,
    ToolCall,
    is_token_count,
    note_unreported,
    token_count,
    unreported_now,
)
from agentflow.runtime.models.router import ModelRouter, RoutedClient

__all__ = [
    "normalise_request",
    "request_key",
    "CassetteWriter",
    "RecordingClient",
    "ReplayClient",
    "ReplayRouter",
    "recording_router",
]


def normalise_request(request: ChatRequest) -> dict[str, Any]:
    """The parts of a request that decide the answer, as plain JSON data."""
    messages = []
    for m in request.messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            item["tool_calls"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls
            ]
        if m.tool_call_id:
            item["tool_call_id"] = m.tool_call_id
        if m.is_error:
            item["is_error"] = True
        messages.append(item)
    out: dict[str, Any] = {
        "messages": messages,
        "tools": [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ],
        "response_schema": request.response_schema,
    }
    # sampling preferences decide the answer too; absent when unset (older cassettes' keys hold)
    if request.temperature is not None:
        out["temperature"] = request.temperature
    if request.stop:
        out["stop"] = list(request.stop)
    return out


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def request_key(request: ChatRequest) -> str:
    """SHA-256 (hex) of the canonical JSON of :func:`normalise_request`, configured secrets
    redacted (as the cassette stores the request, so a replay that sends the stored text back
    finds it)."""
    normal = redact_data(normalise_request(request))
    return hashlib.sha256(_canonical(normal).encode("utf-8", "surrogatepass")).hexdigest()


def response_data(response: ChatResponse) -> dict[str, Any]:
    """A response as a cassette stores it: what the agent loop reads, plus the provider state
    that goes back with the next request (``raw``: thinking blocks, reasoning fields) and, for a
    streamed answer, its text pieces (``chunks``) so a replay streams them again."""
    return {
        "text": response.text,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls
        ],
        "finish_reason": response.finish_reason,
        # a reply that reported no usage is kept so: its replay says so again, never 0→0
        "usage": {} if unreported_now() else dict(response.usage or {}),
        "model": response.model,
        **({"refusal": response.refusal} if response.refusal is not None else {}),
        **({"raw": response.raw} if response.raw is not None else {}),
        **({"chunks": list(response.chunks)} if response.chunks is not None else {}),
    }


def response_problem(data: Any) -> str | None:
    """What is wrong with a recorded response (None: it can be replayed)."""
    if not isinstance(data, dict):
        return "`response` is not an object"
    if not isinstance(data.get("text"), (str, type(None))):
        return "`response.text` is not a string or null"
    calls = data.get("tool_calls", [])
    if not isinstance(calls, list) or not all(
        isinstance(c, dict)
        and isinstance(c.get("id"), str)
        and isinstance(c.get("name"), str)
        and isinstance(c.get("arguments"), (str, dict))
        for c in calls
    ):
        return "`response.tool_calls` is not a list of {id, name, arguments}"
    usage = data.get("usage") or {}
    if not isinstance(usage, dict):
        return "`response.usage` is not an object"
    for key in _USAGE_KEYS:  # replayed as recorded: a count that is not one is refused here,
        value = usage.get(key)  # as a bad tool call is, never read as 0 tokens
        if value is not None and not is_token_count(value):
            return (
                f"`response.usage.{key}` is not a token count (a whole number from 0 to "
                f"{MAX_TOKEN_COUNT:,}): {json.dumps(value)}"[:200]
            )
    chunks = data.get("chunks")
    if chunks is not None and not (
        isinstance(chunks, list) and all(isinstance(c, str) for c in chunks)
    ):
        return "`response.chunks` is not a list of strings"
    for field in ("finish_reason", "model", "refusal"):
        if not isinstance(data.get(field), (str, type(None))):
            return f"`response.{field}` is not a string"
    if json_depth_exceeds(data):
        return "`response` is " + too_deep_message()
    return None


def response_from(data: dict[str, Any]) -> ChatResponse:
    return ChatResponse(
        text=data.get("text"),
        tool_calls=[
            ToolCall(c["id"], c["name"], c["arguments"]) for c in data.get("tool_calls", [])
        ],
        finish_reason=data.get("finish_reason") or "stop",
        usage=_usage_from(data.get("usage") or {}),
        model=data.get("model") or "",
        refusal=data.get("refusal"),
        raw=data.get("raw"),
        chunks=data.get("chunks"),
    )


#: the token counts a cassette line's ``response.usage`` may hold
_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


def _usage_from(usage: dict[str, Any]) -> dict[str, int]:
    note_unreported(usage.get("input_tokens"), usage.get("output_tokens"))
    out = {k: token_count(usage.get(k)) for k in ("input_tokens", "output_tokens")}
    for key in ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
        if token_count(usage.get(key)):
            out[key] = token_count(usage.get(key))
    return out


class CassetteWriter:
    """Appends exchanges to a cassette file (thread- and task-safe); truncates it on open."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        #: why the cassette stopped taking exchanges (a write failed: a full disk, /dev/full)
        self.failed: str | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("", encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"{self.path}: cannot write cassette: {e.strerror or e}") from None

    def write(self, request: ChatRequest, response: ChatResponse) -> str | None:
        """Append one exchange. A write that fails (a full disk) never fails the model call
        that was made: the cassette takes no more exchanges of this run, and the first failure
        returns what to say of it (the run's warning, naming the ``--record`` file; the run
        goes on and prints its result, as with a failing ``--trace`` file); else None."""
        if self.failed is not None:
            return None
        line = {
            "key": request_key(request),
            "request": redact_data(normalise_request(request)),
            "response": redact_data(response_data(response)),
        }  # no configured secret reaches the file, wherever a model or a tool put it
        text = escape_surrogates(finite_dumps(line, ensure_ascii=False, sort_keys=True)) + "\n"
        with self._lock:
            if self.failed is not None:
                return None
            try:
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(text)
            except OSError as e:
                self.failed = e.strerror or str(e)
                return (
                    f"the --record cassette '{self.path}' cannot be written ({self.failed}): "
                    "it records no more model exchanges of this run"
                )
        return None


class RecordingClient:
    """Wraps a real :class:`ModelClient` and writes every successful exchange to a cassette."""

    def __init__(
        self,
        inner: ModelClient,
        writer: CassetteWriter,
        on_warning: Callable[[str], None] | None = None,
    ):
        self.inner = inner
        self.writer = writer
        self.on_warning = on_warning

    async def chat(self, request: ChatRequest) -> ChatResponse:
        response = await self.inner.chat(request)
        failed = self.writer.write(request, response)
        if failed is not None and self.on_warning is not None:
            self.on_warning(failed)
        return response

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


class ReplayClient:
    """Answers requests from a cassette; raises ``RunError(replay_miss)`` for unknown ones."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._entries: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        self._requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        try:
            data = self.path.read_bytes()
        except OSError as e:
            raise ConfigError(f"{self.path}: cannot read cassette: {e.strerror or e}") from None
        for number, raw_bytes in enumerate(data.splitlines(), 1):
            try:
                raw = raw_bytes.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ConfigError(
                    f"{self.path}:{number}:{e.start + 1}: cannot read cassette: not UTF-8 text"
                ) from None
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
                key, response = entry["key"], entry["response"]
                problem = response_problem(response) if isinstance(key, str) else "a bad key"
            except (ValueError, KeyError, TypeError, RecursionError):
                problem = "expected JSON with key, request and response"
            if problem:
                raise ConfigError(f"{self.path}:{number}:1: not a cassette line ({problem})")
            self._entries[key].append(response)
            self._requests.append(entry.get("request") or {})

    def __len__(self) -> int:
        return len(self._requests)

    async def chat(self, request: ChatRequest) -> ChatResponse:
        key = request_key(request)
        with self._lock:
            queue = self._entries.get(key)
            data = None
            if queue:
                data = queue.popleft() if len(queue) > 1 else queue[0]
        if data is None:
            raise RunError(Code.REPLAY_MISS, self._miss_message(request))
        response = response_from(data)
        if response.chunks and request.on_delta is not None:
            for piece in response.chunks:  # a recorded stream is streamed again
                request.on_delta(piece)
        return response

    def _miss_message(self, request: ChatRequest) -> str:
        wanted = normalise_request(request)
        head = f"no recorded answer in {self.path} for this model request"
        if not self._requests:
            return head + " (the cassette is empty)"
        wanted_lines = _lines(wanted)
        best, best_ratio = None, -1.0
        for rec in self._requests:
            ratio = difflib.SequenceMatcher(None, _lines(rec), wanted_lines, autojunk=False).ratio()
            if ratio > best_ratio:
                best, best_ratio = rec, ratio
        diff = list(
            difflib.unified_diff(
                _lines(best),
                wanted_lines,
                "nearest recorded request",
                "this request",
                n=1,
                lineterm="",
            )
        )
        shown = "\n".join(_windowed(diff[:24]))
        more = "\n…" if len(diff) > 24 else ""
        return (
            f"{head}; nearest recorded request ({best_ratio:.0%} similar) differs:\n{shown}{more}"
        )


def _windowed(diff: list[str], width: int = 160) -> list[str]:
    """Cut long diff lines to a window around the first character where a removed line and the
    added line after it differ, so the difference itself is always visible."""
    out = list(diff)
    for i in range(len(out) - 1):
        a, b = out[i], out[i + 1]
        if a.startswith("-") and b.startswith("+") and not a.startswith("---"):
            k = next(
                (j for j, (x, y) in enumerate(zip(a[1:], b[1:], strict=False)) if x != y), None
            )
            if k is None:
                k = min(len(a), len(b)) - 1
            start = max(0, k - width // 3)
            for j, line in ((i, a), (i + 1, b)):
                body = line[1 + start : 1 + start + width]
                out[j] = (
                    line[0]
                    + ("…" if start else "")
                    + body
                    + ("…" if len(line) > 1 + start + width else "")
                )
    return [line if len(line) <= width + 8 else line[: width + 8] + "…" for line in out]


def _lines(data: Any) -> list[str]:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False).split("\n")


_REPLAY_MODEL = ResolvedModel(
    label="replay", provider_name="replay", provider=ProviderConfig(kind="openai"), model="replay"
)


class ReplayRouter(ModelRouter):
    """A :class:`ModelRouter` whose every role and named model answers from one cassette.

    Needs no model, key or provider configuration (docs/spec/RUNTIME.md §5).
    """

    answers_every_model = True

    def __init__(self, cassette: str | Path, config: Config | None = None, **kwargs: Any):
        super().__init__(config or Config(), **kwargs)
        self.replay = ReplayClient(cassette)

    def client_for(self, role_or_name: str | None = None) -> RoutedClient:
        name = role_or_name or "chat"
        if name not in self._routed:
            self._routed[name] = RoutedClient(self, name, [(_REPLAY_MODEL, self.replay)])
        return self._routed[name]


def recording_router(config: Config, cassette: str | Path, **kwargs: Any) -> ModelRouter:
    """A :class:`ModelRouter` over ``config`` that records every exchange into ``cassette``."""
    writer = CassetteWriter(cassette)
    holder: dict[str, ModelRouter] = {}

    def factory(resolved: ResolvedModel) -> ModelClient:
        def warn(message: str) -> None:  # a `warning` event of the run (router.on_event)
            on_event = holder["router"].on_event
            if on_event is not None:
                on_event("warning", {"message": message, "model": resolved.label})

        return RecordingClient(ModelRouter._build(holder["router"], resolved), writer, warn)

    router = ModelRouter(config, client_factory=factory, **kwargs)
    holder["router"] = router
    return router
