"""OpenAI-compatible chat-completions adapter over httpx (RUNTIME.md §5, §10).

Works with OpenAI, Ollama, vLLM, llama.cpp server, LM Studio: ``POST {base_url}/chat/completions``.
Tools go out in the OpenAI function format; tool-call arguments come back raw (a JSON string, or an
object from servers that decode it). Transient errors and rate limits are retried inside the client
(see :mod:`agentflow.runtime.models.http`); they never reach the agent loop as rounds.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from agentflow.errors import ModelError
from agentflow.runtime.models.base import ChatRequest, ChatResponse, Message, ToolCall
from agentflow.runtime.models.http import RetryPolicy, post_with_retries, redact


class OpenAIClient:
    """A :class:`ModelClient` for one model of an OpenAI-compatible endpoint.

    ``provider``: provider name (for messages); ``base_url``: e.g. ``http://127.0.0.1:11434/v1``;
    ``model``: the provider's model name; ``api_key``: sent as ``Authorization: Bearer`` and never
    logged or put in an error. ``timeout``: seconds per HTTP request. ``structured_output``: send
    ``response_format: json_schema`` (strict) when a request carries a ``response_schema``.
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
        structured_output: bool = False,
        http_client: httpx.AsyncClient | None = None,
        on_retry: Callable[[dict[str, Any]], Any] | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
    ):
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._headers = dict(headers or {})
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.structured_output = structured_output
        self._http = http_client
        self.on_retry = on_retry
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"OpenAIClient(provider={self.provider!r}, model={self.model!r})"

    async def aclose(self) -> None:
        """Close the owned HTTP connection pool (if any)."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient()
        return self._http

    def build_payload(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body of the chat-completions request for ``request``."""
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [message_to_openai(m) for m in request.messages],
        }
        if request.tools:
            payload["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema or {"type": "object", "properties": {}},
                    },
                }
                for t in request.tools
            ]
        max_tokens = request.max_tokens or self.max_tokens
        if max_tokens:
            payload["max_tokens"] = max_tokens
        if self.temperature is not None:
            payload["temperature"] = self.temperature
        strict = None
        if self.structured_output and request.response_schema is not None:
            strict = strict_schema(request.response_schema)
        if strict is not None:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": "output",
                    "schema": strict,
                    "strict": True,
                },
            }
        return payload

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Run one inference; raises ModelError(kind) after bounded retries (never shows the key)."""
        headers = {"Content-Type": "application/json", **self._headers}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        kwargs: dict[str, Any] = {}
        if self._sleep is not None:
            kwargs["sleep"] = self._sleep
        data = await post_with_retries(
            self._client(),
            f"{self.base_url}/chat/completions",
            payload=self.build_payload(request),
            headers=headers,
            provider=self.provider,
            policy=self.retry,
            secret=self._api_key,
            timeout=self.timeout,
            on_retry=self.on_retry,
            **kwargs,
        )
        try:
            return parse_openai_response(data, default_model=self.model)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ModelError(
                redact(
                    f"model provider '{self.provider}' sent an unexpected reply shape "
                    f"({type(exc).__name__}: {exc})",
                    self._api_key,
                ),
                kind="transient",
            ) from None


def message_to_openai(message: Message) -> dict[str, Any]:
    """A neutral Message as an OpenAI chat message dict (arguments always a JSON string)."""
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content or "",
        }
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for call in message.tool_calls
        ]
    elif out["content"] is None:
        out["content"] = ""
    return out


def parse_openai_response(data: dict[str, Any], *, default_model: str = "") -> ChatResponse:
    """A chat-completions reply as a ChatResponse (arguments kept raw, missing ids left empty)."""
    choice = data["choices"][0]
    message = choice.get("message") or {}
    content = message.get("content")
    if isinstance(content, list):  # some servers send content parts
        content = (
            "".join(part.get("text", "") for part in content if isinstance(part, dict)) or None
        )
    calls: list[ToolCall] = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") or {}
        arguments = function.get("arguments")
        if arguments is None:
            arguments = ""
        calls.append(
            ToolCall(
                id=str(raw.get("id") or ""),
                name=str(function.get("name") or ""),
                arguments=arguments,
            )
        )
    finish = choice.get("finish_reason") or ("tool_calls" if calls else "stop")
    usage = data.get("usage") or {}
    return ChatResponse(
        text=content,
        tool_calls=calls,
        finish_reason=str(finish),
        usage={
            "input_tokens": int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0),
            "output_tokens": int(usage.get("completion_tokens") or usage.get("output_tokens") or 0),
        },
        model=str(data.get("model") or default_model),
    )


class _Recursive(Exception):
    pass


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """``schema`` rewritten for OpenAI strict structured output (RUNTIME.md §10), or None if impossible.

    ``$ref`` into ``$defs`` is inlined; every object gets ``additionalProperties: false`` and lists all
    its properties as required, optional ones becoming nullable; ``default`` is dropped. Recursive
    schemas cannot be inlined: None (the caller then sends no ``response_format``; the contract is
    validated all the same).
    """
    defs = schema.get("$defs") or schema.get("definitions") or {}

    def nullable(node: dict[str, Any]) -> dict[str, Any]:
        kind = node.get("type")
        if isinstance(kind, str):
            return {**node, "type": [kind, "null"]} if kind != "null" else node
        if isinstance(kind, list):
            return node if "null" in kind else {**node, "type": [*kind, "null"]}
        return {"anyOf": [node, {"type": "null"}]}

    def conv(node: Any, stack: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [conv(n, stack) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = str(node["$ref"])
            name = ref.rsplit("/", 1)[-1]
            if name in stack or name not in defs:
                raise _Recursive(ref)
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return conv({**defs[name], **rest}, stack | {name})
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$defs", "definitions", "$schema", "default"):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {k: conv(v, stack) for k, v in value.items()}
            elif key in ("items", "anyOf", "oneOf", "allOf", "prefixItems", "not"):
                out[key] = conv(value, stack)
            elif key == "additionalProperties" and isinstance(value, dict):
                out[key] = conv(value, stack)
            else:
                out[key] = value
        if isinstance(out.get("properties"), dict):
            required = set(out.get("required") or [])
            out["properties"] = {
                k: (v if k in required else nullable(v)) for k, v in out["properties"].items()
            }
            out["required"] = list(out["properties"])
            out["additionalProperties"] = False
        return out

    try:
        return conv(schema, frozenset())
    except _Recursive:
        return None
