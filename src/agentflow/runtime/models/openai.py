"""OpenAI-compatible chat-completions adapter over httpx (RUNTIME.md §5, §10).

Works with OpenAI, Ollama, vLLM, llama.cpp server, LM Studio: ``POST {base_url}/chat/completions``.
Tools go out in the OpenAI function format; tool-call arguments come back raw (a JSON string, or an
object from servers that decode it). Transient errors and rate limits are retried inside the client
(see :mod:`agentflow.runtime.models.http`); they never reach the agent loop as rounds.
"""

from __future__ import annotations

import json
from typing import Any

from agentflow.runtime.models.base import (
    ChatRequest,
    ChatResponse,
    Message,
    ReplyShapeError,
    ToolCall,
    token_count,
    type_name,
)
from agentflow.runtime.models.http import HTTPModelClient


class OpenAIClient(HTTPModelClient):
    """A :class:`ModelClient` for one model of an OpenAI-compatible endpoint.

    ``provider``: provider name (for messages); ``base_url``: e.g. ``http://127.0.0.1:11434/v1``;
    ``model``: the provider's model name; ``api_key``: sent as ``Authorization: Bearer`` and never
    logged or put in an error. ``timeout``: seconds per HTTP request. ``structured_output``: send
    ``response_format: json_schema`` (strict, see :func:`strict_schema`) when a request carries a
    ``response_schema``. ``tool_choice`` (``auto``/``required``/``none``) and
    ``parallel_tool_calls`` are sent, when set, with requests that offer tools (unset: the
    server's default, which is ``auto`` and parallel for OpenAI; some local servers reject them).
    The other keyword arguments are those of :class:`HTTPModelClient`.
    """

    def __init__(self, *, structured_output: bool = False, **options: Any):
        super().__init__(**options)
        self.structured_output = structured_output

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
            if self.tool_choice is not None:
                payload["tool_choice"] = self.tool_choice
            if self.parallel_tool_calls is not None:
                payload["parallel_tool_calls"] = self.parallel_tool_calls
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
        data = await self._post(
            f"{self.base_url}/chat/completions", self.build_payload(request), headers
        )
        try:
            return parse_openai_response(data, default_model=self.model)
        except ReplyShapeError as exc:
            raise self._malformed(exc) from None


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


def parse_openai_response(data: Any, *, default_model: str = "") -> ChatResponse:
    """A chat-completions reply as a ChatResponse (arguments kept raw, missing ids left empty).

    Parsed defensively: a reply without the expected shape (no ``choices`` array, a message or
    tool call that is not an object, ``content`` that is neither text, null nor an array of text
    parts, ``tool_calls`` that is not an array) raises :class:`ReplyShapeError` with a plain
    message. Malformed ``usage`` counts are taken as 0; a non-text ``finish_reason``/``model``
    falls back to the default.
    """
    if not isinstance(data, dict):
        raise ReplyShapeError(f"the reply is {type_name(data)}, not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        what = "an empty array" if isinstance(choices, list) else type_name(choices)
        raise ReplyShapeError(f"`choices` should be a non-empty array, got {what}")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise ReplyShapeError(f"`choices[0]` should be an object, got {type_name(choice)}")
    message = choice.get("message")
    if message is None:
        message = {}
    if not isinstance(message, dict):
        raise ReplyShapeError(f"`choices[0].message` should be an object, got {type_name(message)}")
    content = message.get("content")
    if isinstance(content, list):  # some servers send content parts
        texts = []
        for part in content:
            if isinstance(part, dict):
                piece = part.get("text", "")
                if not isinstance(piece, str):
                    raise ReplyShapeError(
                        f"a content part's `text` should be a string, got {type_name(piece)}"
                    )
                texts.append(piece)
        content = "".join(texts) or None
    elif content is not None and not isinstance(content, str):
        raise ReplyShapeError(
            f"`message.content` should be a string or null, got {type_name(content)}"
        )
    raw_calls = message.get("tool_calls")
    if raw_calls is None:
        raw_calls = []
    if not isinstance(raw_calls, list):
        raise ReplyShapeError(
            f"`message.tool_calls` should be an array, got {type_name(raw_calls)}"
        )
    calls: list[ToolCall] = []
    for index, raw in enumerate(raw_calls):
        if not isinstance(raw, dict):
            raise ReplyShapeError(
                f"`tool_calls[{index}]` should be an object, got {type_name(raw)}"
            )
        function = raw.get("function") or {}
        if not isinstance(function, dict):
            raise ReplyShapeError(
                f"`tool_calls[{index}].function` should be an object, got {type_name(function)}"
            )
        arguments = function.get("arguments")
        if arguments is None:
            arguments = ""
        name = function.get("name")
        call_id = raw.get("id")
        calls.append(
            ToolCall(
                id=str(call_id) if isinstance(call_id, (str, int)) and call_id != "" else "",
                name=name if isinstance(name, str) else "",
                arguments=arguments,
            )
        )
    finish = choice.get("finish_reason")
    if not isinstance(finish, str) or not finish:
        finish = "tool_calls" if calls else "stop"
    usage = data.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    model = data.get("model")
    refusal = message.get("refusal")
    return ChatResponse(
        text=content,
        refusal=refusal if isinstance(refusal, str) else None,
        tool_calls=calls,
        finish_reason=finish,
        usage={
            "input_tokens": token_count(usage.get("prompt_tokens"))
            or token_count(usage.get("input_tokens")),
            "output_tokens": token_count(usage.get("completion_tokens"))
            or token_count(usage.get("output_tokens")),
        },
        model=model if isinstance(model, str) and model else default_model,
    )


class _Recursive(Exception):
    pass


class _Unsupported(Exception):
    pass


_DROP = ("$defs", "definitions", "$schema", "$id", "default")
#: The ``format`` values OpenAI's strict mode accepts; any other is refused with a 400 ("'uri' is
#: not a valid format"), so it is left out of the request (the contract still checks it).
STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
#: Keywords strict mode refuses outright: a schema using them is sent without response_format.
_REFUSED = ("allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas")


def _accepts_null(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_accepts_null(n) for n in node.get("anyOf") or [])


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    if _accepts_null(node):
        return node
    kind = node.get("type")
    if isinstance(kind, str) and "enum" not in node and "const" not in node:
        return {**node, "type": [kind, "null"]}
    return {"anyOf": [node, {"type": "null"}]}


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """``schema`` rewritten for OpenAI strict structured output (RUNTIME.md §10), or None.

    Only the *provider request* uses the result; answers are always validated against the original
    contract. Every object gets ``additionalProperties: false`` and lists all its properties as
    required, the optional ones made nullable (a ``T?`` field, already ``anyOf [T, null]``, is left
    as it is); ``default``/``$schema`` and our ``x-*`` annotations are dropped, as is a ``format``
    strict mode does not know (:data:`STRICT_FORMATS`); ``oneOf`` is sent as ``anyOf``. ``$ref``
    into ``$defs`` is inlined; a recursive
    schema (which cannot be inlined) keeps its ``$defs``, converted the same way (OpenAI accepts
    recursive ``$ref``). None when strict mode cannot express the schema (a map type:
    ``additionalProperties`` with a schema; an empty "any" schema; ``allOf``, ``not``,
    ``if``/``then``/``else``, ``dependent*``, which strict mode refuses): the caller then sends no
    ``response_format`` and validates the contract all the same.
    """
    defs = schema.get("$defs") or schema.get("definitions") or {}

    def conv(node: Any, stack: frozenset[str] | None) -> Any:
        if isinstance(node, list):
            return [conv(n, stack) for n in node]
        if not isinstance(node, dict):
            return node
        if not node:
            raise _Unsupported("an empty schema (any value)")
        if "$ref" in node and stack is not None:
            ref = str(node["$ref"])
            name = ref.rsplit("/", 1)[-1]
            if ref == "#" or name in stack:
                raise _Recursive(ref)
            if name not in defs:
                raise _Unsupported(ref)
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return conv({**defs[name], **rest}, stack | {name})
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROP or key.startswith("x-"):  # our own annotations (`x-flow-type`)
                continue
            if key in _REFUSED:
                raise _Unsupported(key)
            if key == "format" and value not in STRICT_FORMATS:
                continue
            if key == "oneOf":  # refused by strict mode; the request may say anyOf
                key = "anyOf"
            if key == "properties" and isinstance(value, dict):
                out[key] = {k: conv(v, stack) for k, v in value.items()}
            elif key in ("items", "anyOf", "prefixItems"):
                out[key] = conv(value, stack)
            elif key == "additionalProperties" and value not in (False, None):
                raise _Unsupported("additionalProperties with a schema (a map)")
            else:
                out[key] = value
        if out.get("type") == "object" or isinstance(out.get("properties"), dict):
            props = out.get("properties") or {}
            required = set(out.get("required") or [])
            out["properties"] = {
                k: (v if k in required else _nullable(v)) for k, v in props.items()
            }
            out["required"] = list(props)
            out["additionalProperties"] = False
        return out

    try:
        try:
            return conv(schema, frozenset())
        except _Recursive:
            out = conv(schema, None)
            if defs:
                out["$defs"] = {name: conv(d, None) for name, d in defs.items()}
            return out
    except _Unsupported:
        return None
