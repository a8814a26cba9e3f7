"""Anthropic Messages API adapter over httpx (RUNTIME.md §5, §10).

``POST {base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version``. Conversation rules
(§10): system messages become the ``system`` field; all tool results of a turn go in ONE user
message as ``tool_result`` blocks (``is_error: true`` for failures); consecutive messages of the same
role are merged; reply content blocks are selected by ``type`` (text, tool_use, thinking, …) and the
assistant turn's blocks are round-tripped unchanged through ``Message.raw``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from agentflow.errors import ModelError
from agentflow.runtime.models.base import ChatRequest, ChatResponse, Message, ToolCall
from agentflow.runtime.models.http import RetryPolicy, post_with_retries, redact

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}


class AnthropicClient:
    """A :class:`ModelClient` for one Anthropic model (same constructor shape as OpenAIClient).

    ``tool_choice`` (``auto``/``required``→``any``/``none``) and ``parallel_tool_calls=False``
    (``disable_parallel_tool_use``) map onto the Messages API ``tool_choice`` object.
    """

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        headers: dict[str, str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        tool_choice: str | None = None,
        parallel_tool_calls: bool | None = None,
        http_client: httpx.AsyncClient | None = None,
        on_retry: Callable[[dict[str, Any]], Any] | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
    ):
        self.provider = provider
        base = base_url.rstrip("/")
        self.url = f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"
        self.model = model
        self._api_key = api_key
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._headers = dict(headers or {})
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.tool_choice = tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self._http = http_client
        self.on_retry = on_retry
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"AnthropicClient(provider={self.provider!r}, model={self.model!r})"

    async def aclose(self) -> None:
        """Close the owned HTTP connection pool (if any)."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

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
        if self._http is None:
            self._http = httpx.AsyncClient()
        headers = {
            "Content-Type": "application/json",
            "anthropic-version": ANTHROPIC_VERSION,
            **self._headers,
        }
        if self._api_key:
            headers["x-api-key"] = self._api_key
        kwargs: dict[str, Any] = {"sleep": self._sleep} if self._sleep is not None else {}
        data = await post_with_retries(
            self._http,
            self.url,
            payload=self.build_payload(request),
            headers=headers,
            provider=self.provider,
            policy=self.retry,
            secret=self._api_key,
            timeout=self.timeout,
            on_retry=self.on_retry,
            **kwargs,
        )
        if isinstance(data, dict) and data.get("type") == "error":
            message = str((data.get("error") or {}).get("message") or "error")
            kind = "transient" if "overloaded" in json.dumps(data).lower() else "permanent"
            raise ModelError(
                redact(f"model provider '{self.provider}' failed: {message}", self._api_key),
                kind=kind,
            )
        try:
            return parse_anthropic_response(data, default_model=self.model)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ModelError(
                f"model provider '{self.provider}' sent an unexpected reply shape ({type(exc).__name__})",
                kind="transient",
            ) from None


def _arguments_object(arguments: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def messages_to_anthropic(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` in Messages API form (see module doc for the rules)."""
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
            push("user", [{"type": "text", "text": message.content or ""}])
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
                push("assistant", [dict(b) for b in message.raw])
                continue
            blocks: list[dict[str, Any]] = []
            if message.content:
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


def parse_anthropic_response(data: dict[str, Any], *, default_model: str = "") -> ChatResponse:
    """A Messages API reply as a ChatResponse; blocks selected by ``type``; ``raw`` = the blocks."""
    blocks = data.get("content") or []
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text", ""))
        elif kind == "tool_use":
            arguments = block.get("input")
            calls.append(
                ToolCall(
                    id=str(block.get("id") or ""),
                    name=str(block.get("name") or ""),
                    arguments=arguments if isinstance(arguments, (dict, str)) else {},
                )
            )
    stop = str(data.get("stop_reason") or ("tool_use" if calls else "end_turn"))
    usage = data.get("usage") or {}
    return ChatResponse(
        text="".join(texts) if texts else None,
        tool_calls=calls,
        finish_reason=_STOP.get(stop, stop),
        usage={
            "input_tokens": int(usage.get("input_tokens") or 0),
            "output_tokens": int(usage.get("output_tokens") or 0),
        },
        model=str(data.get("model") or default_model),
        raw=blocks,
    )
