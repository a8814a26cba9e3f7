"""Anthropic Messages API adapter over httpx (docs/spec/RUNTIME.md §5, §10).

``POST {base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version``. Conversation rules
(§10): system messages become the ``system`` field; all tool results of a turn go in ONE user
message as ``tool_result`` blocks (``is_error: true`` for failures); consecutive messages of the same
role are merged; reply content blocks are selected by ``type`` (text, tool_use, thinking, …) and the
assistant turn's blocks are round-tripped unchanged through ``Message.raw`` (thinking blocks with
their signatures, redacted thinking).

Prompt caching: unless ``prompt_cache=False``, requests carry ``cache_control`` breakpoints on the
last tool definition, the system text and the last block of the conversation, so the unchanged
prefix of each round is read from Anthropic's cache; cache reads and writes are counted in usage.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from agentflow.runtime.models.base import (
    ChatRequest,
    ChatResponse,
    Message,
    ReplyShapeError,
    ToolCall,
    note_unreported,
    token_count,
    tool_name_map,
    type_name,
    wire_tool_name,
    with_contract,
)
from agentflow.runtime.models.http import (
    HTTPModelClient,
    StreamFailure,
    error_body,
    event_item,
    event_object,
    event_text,
    malformed_event,
    status_of_error_body,
)
from agentflow.runtime.models.openai import is_strict_as_is, reply_id
from agentflow.runtime.models.schema_subsets import ANTHROPIC, fit_schema, lossy_keywords

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}


class AnthropicClient(HTTPModelClient):
    """A :class:`ModelClient` for one Anthropic model (same constructor shape as OpenAIClient).

    ``tool_choice`` (``auto``/``required``→``any``/``none``) and ``parallel_tool_calls=False``
    (``disable_parallel_tool_use``) map onto the Messages API ``tool_choice`` object.
    ``structured_output``: the output contract goes as ``output_config.format`` (a
    ``json_schema`` fitted into Anthropic's subset, :meth:`native_schema`) instead of prompt
    text, and tools whose schema Anthropic enforces as it is get ``strict: true``; refused once with a 400, the client falls back to prompt text (warning
    through ``on_warning``). ``thinking_budget``: extended thinking with
    that many budget tokens (``max_tokens`` is raised above it; ``temperature`` is not sent, as
    the API requires). ``prompt_cache``: ``cache_control`` breakpoints (default on). ``stream``:
    Server-Sent Events, answer text to ``ChatRequest.on_delta``.
    """

    def __init__(
        self,
        *,
        structured_output: bool = False,
        thinking_budget: int | None = None,
        prompt_cache: bool = True,
        **options: Any,
    ):
        super().__init__(**options)
        self.structured_output = structured_output
        self.thinking_budget = thinking_budget
        self.prompt_cache = prompt_cache
        self.native_refused = False

    @property
    def url(self) -> str:
        """The Messages API endpoint (``/v1`` added unless ``base_url`` already ends with it)."""
        base = self.base_url
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"

    def native_schema(self, request: ChatRequest) -> dict[str, Any] | None:
        """The schema sent as ``output_config.format`` for ``request`` — the contract fitted into
        Anthropic's documented subset (:func:`~agentflow.runtime.models.schema_subsets.fit_schema`:
        ``maxLength``, ``minimum``, ``maxItems`` … moved into descriptions, the answer still
        validated against the whole contract) — or None (prompt text)."""
        if not self.structured_output or self.native_refused or request.response_schema is None:
            return None
        return fit_schema(request.response_schema, ANTHROPIC)

    def build_payload(self, request: ChatRequest, *, native: bool = True) -> dict[str, Any]:
        """The JSON body of the Messages API request for ``request``."""
        strict = self.native_schema(request) if native else None
        source = (
            request.messages
            if strict is not None
            else with_contract(request.messages, request.response_schema)
        )
        system, messages = messages_to_anthropic(source)
        max_tokens = request.max_tokens or self.max_tokens or DEFAULT_MAX_TOKENS
        if self.thinking_budget and max_tokens <= self.thinking_budget:
            max_tokens += self.thinking_budget
        payload: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens}
        if system:
            payload["system"] = system
        payload["messages"] = messages
        if request.tools:
            payload["tools"] = [self._tool(t) for t in request.tools]
            choice: dict[str, Any] = {}
            if self.tool_choice is not None:
                choice["type"] = {"required": "any"}.get(self.tool_choice, self.tool_choice)
            if self.parallel_tool_calls is False:
                choice.setdefault("type", "auto")
                choice["disable_parallel_tool_use"] = True
            if choice:
                payload["tool_choice"] = choice
        if self.thinking_budget:
            payload["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        elif request.temperature is not None or self.temperature is not None:
            payload["temperature"] = (
                request.temperature if request.temperature is not None else self.temperature
            )
        if request.stop:
            payload["stop_sequences"] = list(request.stop)
        if strict is not None:
            payload["output_config"] = {"format": {"type": "json_schema", "schema": strict}}
        if self.stream:
            payload["stream"] = True
        if self.prompt_cache:
            add_cache_breakpoints(payload)
        return payload

    def _tool(self, tool: Any) -> dict[str, Any]:
        schema = tool.input_schema or {"type": "object", "properties": {}}
        out: dict[str, Any] = {
            "name": wire_tool_name(tool.name),
            "description": tool.description,
            "input_schema": schema,
        }
        if (
            self.structured_output
            and is_strict_as_is(schema)
            and not lossy_keywords(schema, ANTHROPIC)
        ):  # strict tool use: only a schema Anthropic enforces as it is
            fitted = fit_schema(schema, ANTHROPIC)
            if fitted is not None:
                out["input_schema"] = fitted
                out["strict"] = True
        return out

    def _reply_shape(self, data: Any, request: ChatRequest) -> None:
        """Raises ReplyShapeError when ``data`` is not of this API's reply shape (retried)."""
        parse_anthropic_response(
            data, default_model=self.model, tool_names=tool_name_map(request.tools)
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Run one inference; raises ModelError(kind) after bounded retries (never shows the key)."""
        headers = {
            "Content-Type": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
            **self._headers,
        }
        if self._api_key:
            headers["x-api-key"] = self._api_key
        data = await self._native_or_prompt(
            self.native_schema(request) is not None,
            lambda native: self._send(self.build_payload(request, native=native), headers, request),
            "output_config.format",
        )
        try:
            return parse_anthropic_response(
                data, default_model=self.model, tool_names=tool_name_map(request.tools)
            )
        except ReplyShapeError as exc:
            raise self._malformed(exc) from None

    async def _send(
        self, payload: dict[str, Any], headers: dict[str, str], request: ChatRequest
    ) -> Any:
        return await self._post_streamed(self.url, payload, headers, request, read_anthropic_stream)


_EPHEMERAL = {"type": "ephemeral"}


def add_cache_breakpoints(payload: dict[str, Any]) -> None:
    """Put ``cache_control`` breakpoints (at most 3 of the API's 4) on ``payload``: the last tool
    definition (tools come first in the cached prefix), the system text (turned into one text
    block) and the last content block of the last message (the conversation so far, so the next
    round reads it from the cache). Blocks are copied, never changed in place (they may be a
    reply's round-tripped blocks)."""
    tools = payload.get("tools")
    if tools:
        tools[-1] = {**tools[-1], "cache_control": _EPHEMERAL}
    system = payload.get("system")
    if isinstance(system, str) and system:
        payload["system"] = [{"type": "text", "text": system, "cache_control": _EPHEMERAL}]
    messages = payload.get("messages") or []
    if messages:
        last = messages[-1]
        content = last.get("content")
        if isinstance(content, list) and content:
            block = content[-1]
            if isinstance(block, dict) and block.get("type") not in (
                "thinking",
                "redacted_thinking",
            ):
                content = list(content)
                content[-1] = {**copy.deepcopy(block), "cache_control": _EPHEMERAL}
                messages[-1] = {**last, "content": content}


async def read_anthropic_stream(events: Any, on_delta: Any, chunks: list[str]) -> dict[str, Any]:
    """A Messages API event stream accumulated into the message a non-streamed reply would have
    been (``message_start``, ``content_block_start``/``_delta``/``_stop``, ``message_delta``;
    thinking and signature deltas included, so thinking blocks round-trip). Text deltas go to
    ``on_delta`` and ``chunks``. Raises StreamFailure on an ``error`` event (e.g. overloaded)
    or a stream that ends before ``message_stop``."""
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial_json: dict[int, list[str]] = {}
    # text pieces by (block index, field), joined once at the end: appending each piece to the
    # field's text was quadratic in the number of pieces
    pieces: dict[tuple[int, str], list[str]] = {}
    done = False
    async for event, data in events:
        try:
            item = json.loads(data)
        except (ValueError, RecursionError):
            raise StreamFailure(
                500, json.dumps({"error": {"message": "a stream event is not JSON"}})
            ) from None
        item = event_item(item, "an event")
        kind = event_text(item, "type", "an event") or event
        error = error_body(item) if kind == "error" else None
        if kind == "error":
            raise StreamFailure(status_of_error_body(error or "error"), data)
        if kind == "message_start":
            message = dict(event_object(item, "message", kind))
            message["content"] = []
        elif kind == "content_block_start":
            index = _event_index(item, len(blocks))
            block = event_object(item, "content_block", kind)
            if block:
                blocks[index] = dict(block)
                for key in ("text", "thinking", "signature"):
                    pieces.pop((index, key), None)
                if block.get("type") == "tool_use":
                    blocks[index]["input"] = {}
                    partial_json[index] = []
        elif kind == "content_block_delta":
            index = _event_index(item, 0)
            delta = event_object(item, "delta", kind)
            block = blocks.setdefault(index, {"type": "text", "text": ""})
            dtype = event_text(delta, "type", "a content_block_delta's delta")
            if dtype == "text_delta":
                piece = _event_text(delta, "text")
                pieces.setdefault((index, "text"), []).append(piece)
                if piece:
                    chunks.append(piece)
                    if on_delta is not None:
                        on_delta(piece)
            elif dtype == "input_json_delta":
                partial_json.setdefault(index, []).append(_event_text(delta, "partial_json"))
            elif dtype in ("thinking_delta", "signature_delta"):
                key = dtype.removesuffix("_delta")
                pieces.setdefault((index, key), []).append(_event_text(delta, key))
            elif dtype == "citations_delta" and delta.get("citation") is not None:
                block.setdefault("citations", []).append(delta["citation"])
        elif kind == "content_block_stop":
            index = _event_index(item, 0)
            if index in partial_json and index in blocks:
                text = "".join(partial_json.pop(index))
                try:
                    blocks[index]["input"] = json.loads(text) if text.strip() else {}
                except (ValueError, RecursionError):
                    blocks[index]["input"] = text  # kept raw: the agent loop reports it
        elif kind == "message_delta":
            delta = event_object(item, "delta", kind)
            for key in ("stop_reason", "stop_sequence"):
                if key in delta:
                    message[key] = event_text(delta, key, "a message_delta's delta") or None
            if item.get("usage") is not None:
                usage = dict(message.get("usage") or {})
                usage.update(
                    {k: v for k, v in event_object(item, "usage", kind).items() if v is not None}
                )
                message["usage"] = usage
        elif kind == "message_stop":
            done = True
            break
    if not done:
        raise StreamFailure(
            502, json.dumps({"error": {"message": "the stream ended before message_stop"}})
        )
    for index, parts in partial_json.items():  # a block never stopped
        blocks[index]["input"] = "".join(parts)
    for (index, key), parts in pieces.items():
        block = blocks[index]
        block[key] = (block.get(key) or "") + "".join(parts)
    message["content"] = [blocks[i] for i in sorted(blocks)]
    message.setdefault("type", "message")
    return message


def _event_index(item: dict[str, Any], default: int) -> int:
    """An event's content block ``index`` (``default`` when it has none); a whole number ≥ 0."""
    index = item.get("index", default)
    if type(index) is not int or index < 0:
        raise malformed_event(f"{item.get('type')}'s index should be a whole number ≥ 0")
    return index


def _event_text(delta: dict[str, Any], key: str) -> str:
    """A delta's text piece ``key`` (``""`` when it is absent or null)."""
    value = delta.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise malformed_event(f"a {delta.get('type')}'s {key} should be text")
    return value


def _arguments_object(arguments: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str):
        return {}
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


#: The text sent for a user turn whose text is empty (the Messages API refuses empty text blocks).
EMPTY_USER_TEXT = "(empty message)"


def _round_trip_blocks(message: Message) -> list[dict[str, Any]]:
    """The assistant turn's original blocks (``message.raw``) to send back.

    Thinking and other blocks are kept unchanged, but the ``tool_use`` blocks carry the ids the
    agent loop assigned (``message.tool_calls``, in order) — a reply with a missing or duplicate
    id would otherwise not match its ``tool_result`` — and text blocks that are empty or blank are
    left out (the API returns them at times but refuses them in a request).
    """
    calls = iter(message.tool_calls)
    blocks: list[dict[str, Any]] = []
    for raw in message.raw:
        block = dict(raw) if isinstance(raw, dict) else raw
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if not isinstance(text, str) or not text.strip():
                continue
        if isinstance(block, dict) and block.get("type") == "tool_use":
            call = next(calls, None)
            if call is not None:
                block["id"] = call.id
        blocks.append(block)
    return blocks


def messages_to_anthropic(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` in Messages API form (see module doc for the rules).

    Text blocks are never empty or blank (the API refuses them): an empty user text becomes
    :data:`EMPTY_USER_TEXT`, an empty assistant text is left out.
    """
    system_parts: list[str] = []
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": list(blocks)})

    for message in messages:
        if message.role == "system":
            if message.content:
                system_parts.append(message.content)
        elif message.role == "user":
            text = message.content if message.content and message.content.strip() else None
            push("user", [{"type": "text", "text": text or EMPTY_USER_TEXT}])
        elif message.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content or "",
            }
            if message.is_error:
                block["is_error"] = True
            push("user", [block])
        else:  # assistant
            if isinstance(message.raw, list) and message.raw:
                kept = _round_trip_blocks(message)
                if kept:
                    push("assistant", kept)
                continue
            blocks: list[dict[str, Any]] = []
            if message.content and message.content.strip():
                blocks.append({"type": "text", "text": message.content})
            for call in message.tool_calls:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.id,
                        "name": wire_tool_name(call.name),
                        "input": _arguments_object(call.arguments),
                    }
                )
            if blocks:
                push("assistant", blocks)
    return "\n\n".join(system_parts), out


def parse_anthropic_response(
    data: Any, *, default_model: str = "", tool_names: dict[str, str] | None = None
) -> ChatResponse:
    """A Messages API reply as a ChatResponse; blocks selected by ``type``; ``raw`` = the blocks.

    ``tool_names`` maps shortened tool names back (see :func:`tool_name_map`). Usage:
    ``input_tokens`` is the whole prompt (uncached + cache reads + cache writes, which the API
    reports apart), with ``cache_read_tokens`` / ``cache_write_tokens``.

    Parsed defensively: a reply that is not an object, ``content`` that is not an array, a block
    that is not an object or a text block whose ``text`` is not a string raise
    :class:`ReplyShapeError` (plain message); malformed ``usage`` counts are taken as 0.
    """
    if not isinstance(data, dict):
        raise ReplyShapeError(f"the reply is {type_name(data)}, not a JSON object")
    blocks = data.get("content")
    if blocks is None:
        blocks = []
    if not isinstance(blocks, list):
        raise ReplyShapeError(f"`content` should be an array of blocks, got {type_name(blocks)}")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            raise ReplyShapeError(f"`content[{index}]` should be an object, got {type_name(block)}")
        kind = block.get("type")
        if kind == "text":
            piece = block.get("text", "")
            if not isinstance(piece, str):
                raise ReplyShapeError(
                    f"`content[{index}].text` should be a string, got {type_name(piece)}"
                )
            texts.append(piece)
        elif kind == "tool_use":
            arguments = block.get("input")
            name = block.get("name")
            name = name if isinstance(name, str) else ""
            call_id = block.get("id")
            calls.append(
                ToolCall(
                    id=str(call_id) if isinstance(call_id, (str, int)) and call_id != "" else "",
                    name=(tool_names or {}).get(name, name),
                    arguments=arguments if isinstance(arguments, (dict, str)) else {},
                )
            )
    stop = data.get("stop_reason")
    if not isinstance(stop, str) or not stop:
        stop = "tool_use" if calls else "end_turn"
    usage = data.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    model = data.get("model")
    text = "".join(texts) if texts else None
    chunks = data.get("_chunks")
    return ChatResponse(
        text=text,
        refusal=(text or "") if stop == "refusal" else None,
        tool_calls=calls,
        finish_reason=_STOP.get(stop, stop),
        usage=anthropic_usage(usage),
        model=model if isinstance(model, str) and model else default_model,
        raw=blocks,
        chunks=chunks if isinstance(chunks, list) else None,
        response_id=reply_id(data),
    )


def anthropic_usage(usage: dict[str, Any]) -> dict[str, int]:
    """Neutral usage from a Messages API ``usage`` block (see :func:`parse_anthropic_response`)."""
    note_unreported(usage.get("input_tokens"), usage.get("output_tokens"))
    read = token_count(usage.get("cache_read_input_tokens"))
    write = token_count(usage.get("cache_creation_input_tokens"))
    out = {
        "input_tokens": token_count(usage.get("input_tokens")) + read + write,
        "output_tokens": token_count(usage.get("output_tokens")),
    }
    if read:
        out["cache_read_tokens"] = read
    if write:
        out["cache_write_tokens"] = write
    return out
