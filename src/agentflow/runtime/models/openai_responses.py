"""OpenAI Responses API adapter over httpx (``kind = "openai-responses"``; docs/models.md
"OpenAI Responses API").

``POST {base_url}/responses``, stateless: every request says ``store: false`` and carries the
whole conversation as input items, so nothing depends on the provider keeping state. System text
goes as ``instructions``; a user turn is a ``user`` message item; a tool result is a
``function_call_output`` item with the ``call_id`` of its call; an assistant turn this adapter
produced is sent back as the output items it came as (``Message.raw``) — reasoning items with
their ``encrypted_content`` included (asked for with ``include: ["reasoning.encrypted_content"]``
for reasoning models), so a reasoning model keeps its reasoning across tool rounds — with the
``function_call`` items' ``call_id`` set to the ids the agent loop used.

Structured output: ``text.format`` ``json_schema`` (strict, the same strict copy as Chat
Completions, :func:`~agentflow.runtime.models.openai.strict_schema`); function tools are sent
``strict: false`` unless strict mode keeps their schema as it is (the Responses API makes them
strict by default). Streaming: ``response.output_text.delta`` pieces go to
``ChatRequest.on_delta``; the reply is the ``response`` of ``response.completed`` (or
``response.incomplete``), the items of ``response.output_item.done`` when it holds none.
Errors: the shared classification (:mod:`agentflow.runtime.models.http`), a ``failed`` response
and an ``error`` / ``response.failed`` event classified by their error code; an ``incomplete``
answer cut by ``max_output_tokens`` is ``finish_reason: length``, one stopped by the content
filter a ``content_filter`` ModelError; a ``refusal`` part is ``ChatResponse.refusal``.
"""

from __future__ import annotations

import json
from typing import Any

from agentflow.errors import ModelError, ModelErrorKind
from agentflow.runtime.models.base import (
    ChatRequest,
    ChatResponse,
    Message,
    ReplyShapeError,
    ToolCall,
    ToolSpec,
    tool_name_map,
    type_name,
    wire_tool_name,
    with_contract,
)
from agentflow.runtime.models.http import (
    StreamFailure,
    _failed,
    event_index,
    event_item,
    event_object,
    event_text,
    malformed_event,
    status_of_error_body,
)
from agentflow.runtime.models.openai import (
    _COMPLETION_TOKENS_MODELS,
    OpenAIClient,
    is_strict_as_is,
    openai_usage,
    strict_schema,
)

#: Fields of an output item that only describe the reply (not sent back in a request).
_OUTPUT_ONLY = {"logprobs"}


class OpenAIResponsesClient(OpenAIClient):
    """A :class:`ModelClient` for one model of the OpenAI Responses API (same options as
    :class:`~agentflow.runtime.models.openai.OpenAIClient`; ``max_completion_tokens`` and
    ``max_tokens`` are sent as ``max_output_tokens``, ``reasoning_effort`` as
    ``reasoning.effort``). ``include_reasoning``: ask for ``reasoning.encrypted_content``
    (default: for reasoning models — a ``reasoning_effort`` is set or the model name is an
    o-series or gpt-5 one)."""

    def __init__(self, *, include_reasoning: bool | None = None, **options: Any):
        super().__init__(**options)
        self.include_reasoning = include_reasoning

    @property
    def url(self) -> str:
        """The Responses API endpoint."""
        return f"{self.base_url}/responses"

    def _reasoning_model(self) -> bool:
        if self.include_reasoning is not None:
            return self.include_reasoning
        return self.reasoning_effort is not None or bool(
            _COMPLETION_TOKENS_MODELS.match(self.model)
        )

    def build_payload(self, request: ChatRequest, *, native: bool = True) -> dict[str, Any]:
        """The JSON body of the ``/responses`` request for ``request``."""
        strict = self.native_schema(request) if native else None
        messages = (
            request.messages
            if strict is not None
            else with_contract(request.messages, request.response_schema)
        )
        instructions, items = messages_to_responses(messages)
        payload: dict[str, Any] = {"model": self.model}
        if instructions:
            payload["instructions"] = instructions
        payload["input"] = items
        if request.tools:
            payload["tools"] = [self._function(t) for t in request.tools]
            if self.tool_choice is not None:
                payload["tool_choice"] = self.tool_choice
            if self.parallel_tool_calls is not None:
                payload["parallel_tool_calls"] = self.parallel_tool_calls
        max_tokens = request.max_tokens or self.max_completion_tokens or self.max_tokens
        if max_tokens:
            payload["max_output_tokens"] = max_tokens
        temperature = request.temperature if request.temperature is not None else self.temperature
        if temperature is not None:
            payload["temperature"] = temperature
        if self.reasoning_effort is not None:
            payload["reasoning"] = {"effort": self.reasoning_effort}
        if strict is not None:
            payload["text"] = {
                "format": {
                    "type": "json_schema",
                    "name": "output",
                    "schema": strict,
                    "strict": True,
                }
            }
        payload["store"] = False
        if self._reasoning_model():
            payload["include"] = ["reasoning.encrypted_content"]
        if self.stream:
            payload["stream"] = True
        return payload

    def _function(self, tool: ToolSpec) -> dict[str, Any]:
        schema = tool.input_schema or {"type": "object", "properties": {}}
        out: dict[str, Any] = {
            "type": "function",
            "name": wire_tool_name(tool.name),
            "description": tool.description,
            "parameters": schema,
            "strict": False,
        }
        if self.structured_output and is_strict_as_is(schema):
            out["parameters"] = strict_schema(schema)
            out["strict"] = True
        return out

    def _reply_shape(self, data: Any, request: ChatRequest) -> None:
        """Raises ReplyShapeError when ``data`` is not of this API's reply shape (retried)."""
        if isinstance(data, dict) and data.get("status") == "failed":
            return  # a failed response is an error, read as one after the POST
        parse_responses_reply(
            data, default_model=self.model, tool_names=tool_name_map(request.tools)
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Run one inference; raises ModelError(kind) after bounded retries (never shows the key)."""
        headers = self._request_headers()
        data = await self._native_or_prompt(
            self.native_schema(request) is not None,
            lambda native: self._send_responses(
                self.build_payload(request, native=native), headers, request
            ),
            "text.format",
        )
        try:
            response = parse_responses_reply(
                data, default_model=self.model, tool_names=tool_name_map(request.tools)
            )
        except ReplyShapeError as exc:
            raise self._malformed(exc) from None
        if response.finish_reason == "content_filter":
            raise ModelError(
                f"model provider '{self.provider}': the provider's content filter stopped the "
                "answer (incomplete: content_filter)",
                kind=ModelErrorKind.CONTENT_FILTER,
            )
        return response

    async def _send_responses(
        self, payload: dict[str, Any], headers: dict[str, str], request: ChatRequest
    ) -> Any:
        data = await self._post_streamed(self.url, payload, headers, request, read_responses_stream)
        if isinstance(data, dict) and data.get("status") == "failed":
            error = data.get("error") if isinstance(data.get("error"), dict) else {}
            failure = json.dumps({"error": error or {"message": "the response failed"}})
            status = status_of_error_body(error or "failed")
            _, kind, message, _, _ = _failed(status, failure, None)
            raise ModelError(
                f"model provider '{self.provider}' failed: the response failed ({message})",
                kind=kind,
                status=status,
            )
        return data


def _stream_error(message: str, status: int = 502) -> StreamFailure:
    return StreamFailure(status, json.dumps({"error": {"message": message}}))


async def read_responses_stream(events: Any, on_delta: Any, chunks: list[str]) -> dict[str, Any]:
    """A Responses API event stream as the reply a non-streamed request would have had: the
    ``response`` of its ``response.completed`` / ``response.incomplete`` event, its ``output``
    filled from the ``response.output_item.done`` items when it came empty. Text deltas go to
    ``on_delta`` and ``chunks``. Raises StreamFailure on an ``error`` or ``response.failed``
    event and on a stream that ends without a terminal event (a cut answer)."""
    items: dict[int, dict[str, Any]] = {}
    final: dict[str, Any] | None = None
    async for event, data in events:
        try:
            item = json.loads(data)
        except (ValueError, RecursionError):
            raise _stream_error("a stream event is not JSON", 500) from None
        item = event_item(item, "an event")  # each field's type checked where it is read
        kind = event_text(item, "type", "an event") or event
        if kind == "error":
            nested = item.get("error")
            error: dict[str, Any] = (
                nested
                if isinstance(nested, dict)
                else {k: item[k] for k in ("code", "message", "type") if item.get(k) is not None}
            )
            raise StreamFailure(
                status_of_error_body(error or "error"), json.dumps({"error": error})
            )
        if kind == "response.failed":
            response = item.get("response")
            failed = response.get("error") if isinstance(response, dict) else None
            error = failed if isinstance(failed, dict) else {}
            raise StreamFailure(
                status_of_error_body(error or "failed"), json.dumps({"error": error})
            )
        if kind == "response.output_text.delta":
            piece = event_text(item, "delta", kind)
            if piece:
                chunks.append(piece)
                if on_delta is not None:
                    on_delta(piece)
        elif kind == "response.output_item.done":
            done = event_object(item, "item", kind)
            index = event_index(item, "output_index", kind, len(items))
            if done:
                items[len(items) if index is None else index] = done
        elif kind in ("response.completed", "response.incomplete"):
            final = dict(event_object(item, "response", kind))
            if not isinstance(final.get("output") or [], list):
                raise malformed_event(f"{kind}'s response.output should be an array")
            break
    if final is None:
        raise _stream_error("the stream broke off before the response was completed")
    if not final.get("output") and items:
        final["output"] = [items[i] for i in sorted(items)]
    return final


def _sendable(item: dict[str, Any]) -> dict[str, Any]:
    """An output item as it goes back in a request (output-only fields left out)."""
    out = {k: v for k, v in item.items() if k not in _OUTPUT_ONLY and v is not None}
    if out.get("type") == "message" and isinstance(out.get("content"), list):
        out["content"] = [
            {k: v for k, v in part.items() if k not in _OUTPUT_ONLY}
            if isinstance(part, dict)
            else part
            for part in out["content"]
        ]
    if out.get("type") == "function_call":
        out.pop("status", None)
    return out


def _arguments_text(arguments: str | dict[str, Any]) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def messages_to_responses(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """``(instructions, input items)`` for the Responses API (see the module doc)."""
    system: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            if message.content:
                system.append(message.content)
        elif message.role == "user":
            items.append({"role": "user", "content": message.content or ""})
        elif message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": message.content or "",
                }
            )
        elif isinstance(message.raw, list) and message.raw:
            calls = iter(message.tool_calls)
            for raw in message.raw:
                if not isinstance(raw, dict):
                    continue
                item = _sendable(raw)
                if item.get("type") == "function_call":
                    call = next(calls, None)
                    if call is not None:
                        item["call_id"] = call.id
                        item["arguments"] = _arguments_text(call.arguments)
                items.append(item)
        else:
            if message.content:
                items.append({"role": "assistant", "content": message.content})
            for call in message.tool_calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": wire_tool_name(call.name),
                        "arguments": _arguments_text(call.arguments),
                    }
                )
    return "\n\n".join(system), items


def parse_responses_reply(
    data: Any, *, default_model: str = "", tool_names: dict[str, str] | None = None
) -> ChatResponse:
    """A Responses API reply as a ChatResponse: the text of its ``message`` items'
    ``output_text`` parts, a ``refusal`` part as ``refusal``, its ``function_call`` items as tool
    calls (``call_id`` as the id, arguments raw), every output item in ``raw`` (sent back by
    :func:`messages_to_responses`: reasoning state included). ``finish_reason``: ``tool_calls``
    when it calls tools, ``length`` / ``content_filter`` for an ``incomplete`` reply cut by
    ``max_output_tokens`` / the content filter, else ``stop``. Usage as Chat Completions'
    (:func:`~agentflow.runtime.models.openai.openai_usage`: cached input tokens, reasoning
    tokens). Raises :class:`ReplyShapeError` for a reply without the expected shape."""
    if not isinstance(data, dict):
        raise ReplyShapeError(f"the reply is {type_name(data)}, not a JSON object")
    output = data.get("output")
    if output is None:
        output = []
    if not isinstance(output, list):
        raise ReplyShapeError(f"`output` should be an array of items, got {type_name(output)}")
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[ToolCall] = []
    for index, item in enumerate(output):
        if not isinstance(item, dict):
            raise ReplyShapeError(f"`output[{index}]` should be an object, got {type_name(item)}")
        kind = item.get("type")
        if kind == "message":
            content = item.get("content") or []
            if not isinstance(content, list):
                raise ReplyShapeError(
                    f"`output[{index}].content` should be an array, got {type_name(content)}"
                )
            for part in content:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "output_text":
                    piece = part.get("text", "")
                    if not isinstance(piece, str):
                        raise ReplyShapeError(
                            f"an output_text part's `text` should be a string, got "
                            f"{type_name(piece)}"
                        )
                    texts.append(piece)
                elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                    refusals.append(part["refusal"])
        elif kind == "function_call":
            name = item.get("name")
            name = name if isinstance(name, str) else ""
            call_id = item.get("call_id") or item.get("id")
            arguments = item.get("arguments")
            calls.append(
                ToolCall(
                    id=str(call_id) if isinstance(call_id, (str, int)) and call_id != "" else "",
                    name=(tool_names or {}).get(name, name),
                    arguments=arguments if isinstance(arguments, (str, dict)) else "",
                )
            )
    finish = "tool_calls" if calls else "stop"
    details = data.get("incomplete_details")
    if data.get("status") == "incomplete" and isinstance(details, dict):
        reason = details.get("reason")
        if reason == "max_output_tokens":
            finish = "length"
        elif reason == "content_filter":
            finish = "content_filter"
    usage = data.get("usage")
    model = data.get("model")
    chunks = data.get("_chunks")
    return ChatResponse(
        text="".join(texts) if texts else None,
        refusal="".join(refusals) if refusals else None,
        tool_calls=calls,
        finish_reason=finish,
        usage=openai_usage(usage if isinstance(usage, dict) else {}),
        model=model if isinstance(model, str) and model else default_model,
        raw=[item for item in output if isinstance(item, dict)] or None,
        chunks=chunks if isinstance(chunks, list) else None,
    )


__all__ = [
    "OpenAIResponsesClient",
    "messages_to_responses",
    "parse_responses_reply",
    "read_responses_stream",
]
