"""Anthropic Messages API adapter over httpx (RUNTIME.md §5, §10).

``POST {base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version``. Conversation rules
(§10): system messages become the ``system`` field; all tool results of a turn go in ONE user
message as ``tool_result`` blocks (``is_error: true`` for failures); consecutive messages of the same
role are merged; reply content blocks are selected by ``type`` (text, tool_use, thinking, …) and the
assistant turn's blocks are round-tripped unchanged through ``Message.raw``.
"""

from __future__ import annotations

import json
from typing import Any

from agentflow.errors import ModelError
from agentflow.runtime.models.base import (
    ChatRequest,
    ChatResponse,
    Message,
    ReplyShapeError,
    ToolCall,
    token_count,
    type_name,
)
from agentflow.runtime.models.http import HTTPModelClient, redact

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
    """

    @property
    def url(self) -> str:
        """The Messages API endpoint (``/v1`` added unless ``base_url`` already ends with it)."""
        base = self.base_url
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"

    def build_payload(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body of the Messages API request for ``request``."""
        system, messages = messages_to_anthropic(request.messages)
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens or self.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": messages,
        }
        if system:
            payload["system"] = system
        if request.tools:
            payload["tools"] = [
                {
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.input_schema or {"type": "object", "properties": {}},
                }
                for t in request.tools
            ]
            choice: dict[str, Any] = {}
            if self.tool_choice is not None:
                choice["type"] = {"required": "any"}.get(self.tool_choice, self.tool_choice)
            if self.parallel_tool_calls is False:
                choice.setdefault("type", "auto")
                choice["disable_parallel_tool_use"] = True
            if choice:
                payload["tool_choice"] = choice
        if self.temperature is not None:
            payload["temperature"] = self.temperature
        return payload

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Run one inference; raises ModelError(kind) after bounded retries (never shows the key)."""
        headers = {
            "Content-Type": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
            **self._headers,
        }
        if self._api_key:
            headers["x-api-key"] = self._api_key
        data = await self._post(self.url, self.build_payload(request), headers)
        if isinstance(data, dict) and data.get("type") == "error":
            err = data.get("error")
            message = str((err.get("message") if isinstance(err, dict) else err) or "error")
            kind = "transient" if "overloaded" in json.dumps(data).lower() else "permanent"
            raise ModelError(
                redact(f"model provider '{self.provider}' failed: {message}", self._api_key),
                kind=kind,
            )
        try:
            return parse_anthropic_response(data, default_model=self.model)
        except ReplyShapeError as exc:
            raise self._malformed(exc) from None


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
                        "name": call.name,
                        "input": _arguments_object(call.arguments),
                    }
                )
            if blocks:
                push("assistant", blocks)
    return "\n\n".join(system_parts), out


def parse_anthropic_response(data: Any, *, default_model: str = "") -> ChatResponse:
    """A Messages API reply as a ChatResponse; blocks selected by ``type``; ``raw`` = the blocks.

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
            call_id = block.get("id")
            calls.append(
                ToolCall(
                    id=str(call_id) if isinstance(call_id, (str, int)) and call_id != "" else "",
                    name=name if isinstance(name, str) else "",
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
    return ChatResponse(
        text=text,
        refusal=(text or "") if stop == "refusal" else None,
        tool_calls=calls,
        finish_reason=_STOP.get(stop, stop),
        usage={
            "input_tokens": token_count(usage.get("input_tokens")),
            "output_tokens": token_count(usage.get("output_tokens")),
        },
        model=model if isinstance(model, str) and model else default_model,
        raw=blocks,
    )
