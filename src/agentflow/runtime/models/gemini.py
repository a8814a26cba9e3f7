"""Google Gemini API adapter over httpx (``kind = "gemini"``; docs/models.md "Gemini").

``POST {base_url}/v1beta/models/{model}:generateContent`` (``:streamGenerateContent?alt=sse``
when streaming) with the key in ``x-goog-api-key``. Conversation rules: system text is the
``systemInstruction``; the assistant is role ``model``; a tool call is a ``functionCall`` part
and its result a ``functionResponse`` part (``{"result": text}``, with the call's name and id);
consecutive turns of one role are merged into one content, so all results of a round go back
together. An assistant turn this adapter produced is sent back as the parts it came as
(``Message.raw``) — with their ``thoughtSignature`` s, which Gemini's thinking models require
with the function calls of a tool round — and the ``functionCall`` ids the agent loop used.

Structured output: ``responseMimeType: application/json`` with ``responseJsonSchema``, the
contract fitted into Gemini's documented subset
(:func:`~agentflow.runtime.models.schema_subsets.fit_schema`: ``pattern``, ``minLength`` … moved
into descriptions; the answer is still validated against the whole contract). A refused schema
falls back to prompt text once, as for the other providers. Usage: ``promptTokenCount`` is the
whole prompt (``cachedContentTokenCount`` of it read from the cache), thoughts count as output
(``reasoning_tokens``). Safety: a candidate stopped for ``SAFETY``, ``PROHIBITED_CONTENT``,
``BLOCKLIST``, ``SPII``, ``RECITATION``, ``IMAGE_SAFETY`` or ``MODEL_ARMOR``, and a prompt blocked
by ``promptFeedback.blockReason``, are a ``content_filter`` ModelError (never retried).
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
    event_list,
    event_object,
    event_text,
    status_of_error_body,
)
from agentflow.runtime.models.schema_subsets import GEMINI, fit_schema

#: finishReason values that mean a safety filter stopped the answer
SAFETY_REASONS = frozenset(
    {
        "SAFETY",
        "PROHIBITED_CONTENT",
        "BLOCKLIST",
        "SPII",
        "RECITATION",
        "IMAGE_SAFETY",
        "MODEL_ARMOR",
    }
)
_FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}
_CHOICE = {"auto": "AUTO", "required": "ANY", "none": "NONE"}


class GeminiClient(HTTPModelClient):
    """A :class:`ModelClient` for one Gemini model (the :class:`HTTPModelClient` options, plus
    ``structured_output`` — the contract as ``responseJsonSchema`` — and ``thinking_budget`` —
    ``thinkingConfig.thinkingBudget`` tokens). ``tool_choice`` maps to
    ``toolConfig.functionCallingConfig.mode`` (``auto``/``required``→``ANY``/``none``)."""

    def __init__(
        self,
        *,
        structured_output: bool = False,
        thinking_budget: int | None = None,
        **options: Any,
    ):
        super().__init__(**options)
        self.structured_output = structured_output
        self.thinking_budget = thinking_budget
        self.native_refused = False

    def url(self, stream: bool) -> str:
        """The generateContent (or streamGenerateContent) endpoint of the model."""
        base = self.base_url
        if not base.endswith(("/v1beta", "/v1")):
            base = f"{base}/v1beta"
        model = self.model if self.model.startswith("models/") else f"models/{self.model}"
        if stream:
            return f"{base}/{model}:streamGenerateContent?alt=sse"
        return f"{base}/{model}:generateContent"

    def native_schema(self, request: ChatRequest) -> dict[str, Any] | None:
        """The schema sent as ``responseJsonSchema`` for ``request`` (the contract fitted into
        Gemini's subset), or None (prompt text)."""
        if not self.structured_output or self.native_refused or request.response_schema is None:
            return None
        return fit_schema(request.response_schema, GEMINI)

    def build_payload(self, request: ChatRequest, *, native: bool = True) -> dict[str, Any]:
        """The JSON body of the generateContent request for ``request``."""
        schema = self.native_schema(request) if native else None
        source = (
            request.messages
            if schema is not None
            else with_contract(request.messages, request.response_schema)
        )
        system, contents = messages_to_gemini(source)
        payload: dict[str, Any] = {}
        if system:
            payload["systemInstruction"] = {"parts": [{"text": system}]}
        payload["contents"] = contents
        if request.tools:
            payload["tools"] = [
                {"functionDeclarations": [self._function(t) for t in request.tools]}
            ]
            if self.tool_choice is not None:
                payload["toolConfig"] = {
                    "functionCallingConfig": {"mode": _CHOICE.get(self.tool_choice, "AUTO")}
                }
        config: dict[str, Any] = {}
        max_tokens = request.max_tokens or self.max_tokens
        if max_tokens:
            config["maxOutputTokens"] = max_tokens
        temperature = request.temperature if request.temperature is not None else self.temperature
        if temperature is not None:
            config["temperature"] = temperature
        if request.stop:
            config["stopSequences"] = list(request.stop)
        if schema is not None:
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = schema
        if self.thinking_budget:
            config["thinkingConfig"] = {"thinkingBudget": self.thinking_budget}
        if config:
            payload["generationConfig"] = config
        return payload

    def _function(self, tool: ToolSpec) -> dict[str, Any]:
        schema = tool.input_schema or {"type": "object", "properties": {}}
        out: dict[str, Any] = {"name": wire_tool_name(tool.name), "description": tool.description}
        out["parametersJsonSchema"] = fit_schema(schema, GEMINI) or schema
        return out

    def _reply_shape(self, data: Any, request: ChatRequest) -> None:
        """Raises ReplyShapeError when ``data`` is not of this API's reply shape (retried)."""
        parse_gemini_response(
            data, default_model=self.model, tool_names=tool_name_map(request.tools)
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Run one inference; raises ModelError(kind) after bounded retries (never shows the key)."""
        headers = {"Content-Type": "application/json", **self._headers}
        if self._api_key:
            headers["x-goog-api-key"] = self._api_key
        data = await self._native_or_prompt(
            self.native_schema(request) is not None,
            lambda native: self._send(self.build_payload(request, native=native), headers, request),
            "responseJsonSchema",
        )
        try:
            response = parse_gemini_response(
                data, default_model=self.model, tool_names=tool_name_map(request.tools)
            )
        except ReplyShapeError as exc:
            raise self._malformed(exc) from None
        if response.finish_reason == "content_filter":
            reason = (response.raw or {}) if isinstance(response.raw, dict) else {}
            raise ModelError(
                f"model provider '{self.provider}': the provider's safety filter stopped the "
                f"answer ({reason.get('blocked') or 'SAFETY'})",
                kind=ModelErrorKind.CONTENT_FILTER,
            )
        return response

    async def _send(
        self, payload: dict[str, Any], headers: dict[str, str], request: ChatRequest
    ) -> Any:
        return await self._post_streamed(
            self.url(self.stream), payload, headers, request, read_gemini_stream
        )


def _plain_text(part: dict[str, Any]) -> bool:
    return set(part) == {"text"}


async def read_gemini_stream(events: Any, on_delta: Any, chunks: list[str]) -> dict[str, Any]:
    """A streamGenerateContent event stream (each ``data:`` a GenerateContentResponse) as the
    one reply a non-streamed request would have had: the first candidate's parts in order
    (consecutive plain text parts joined; thought signatures kept), the last ``finishReason``
    and ``usageMetadata``. Answer text goes to ``on_delta`` and ``chunks``. Raises
    StreamFailure on an error chunk and on a stream that ends without a ``finishReason`` (a
    cut answer) — unless its prompt was blocked (``promptFeedback.blockReason``)."""
    parts: list[dict[str, Any]] = []
    texts: dict[int, list[str]] = {}  # the pieces of each plain text part, by its place
    finish: Any = None
    last: dict[str, Any] = {}
    usage: Any = None
    feedback: Any = None
    async for _event, data in events:
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):
            raise StreamFailure(
                500, json.dumps({"error": {"message": "a stream chunk is not JSON"}})
            ) from None
        error = error_body(chunk)
        if error is not None:
            raise StreamFailure(status_of_error_body(error), data)
        # each field's type is checked where it is read (a chunk of the wrong shape is a
        # malformed reply: transient, retried)
        chunk = event_item(chunk, "a chunk")
        last = chunk
        usage = event_object(chunk, "usageMetadata", "a chunk") or usage
        feedback = event_object(chunk, "promptFeedback", "a chunk") or feedback
        candidates = event_list(chunk, "candidates", "a chunk")
        if not candidates:
            continue
        candidate = event_item(candidates[0], "a candidate")
        finish = event_text(candidate, "finishReason", "a candidate") or finish
        content = event_object(candidate, "content", "a candidate")
        for part in event_list(content, "parts", "a candidate's content"):
            part = event_item(part, "a part")
            if _plain_text(part):
                piece = event_text(part, "text", "a part")
                if not piece:
                    continue  # an empty closing part holds nothing
                chunks.append(piece)
                if on_delta is not None:
                    on_delta(piece)
                if parts and _plain_text(parts[-1]):  # joined once at the end (linear)
                    texts[len(parts) - 1].append(piece)
                    continue
                texts[len(parts)] = [piece]
            parts.append(dict(part))
    for at, pieces in texts.items():
        parts[at] = {"text": "".join(pieces)}
    blocked = isinstance(feedback, dict) and feedback.get("blockReason")
    if finish is None and not blocked:
        raise StreamFailure(
            502,
            json.dumps(
                {"error": {"message": "the stream broke off before the answer was finished"}}
            ),
        )
    out: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}],
        "usageMetadata": usage,
        "modelVersion": last.get("modelVersion"),
    }
    if feedback is not None:
        out["promptFeedback"] = feedback
    return out


def _arguments_object(arguments: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def messages_to_gemini(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """``(system instruction, contents)`` for generateContent (see the module doc)."""
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id → tool name, for the function responses

    def push(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": list(parts)})

    for message in messages:
        if message.role == "system":
            if message.content:
                system.append(message.content)
        elif message.role == "user":
            push("user", [{"text": message.content or ""}])
        elif message.role == "tool":
            call_id = message.tool_call_id or ""
            response: dict[str, Any] = {
                "name": wire_tool_name(message.name or names.get(call_id, "")),
                "response": {"error" if message.is_error else "result": message.content or ""},
            }
            if call_id:
                response = {"id": call_id, **response}
            push("user", [{"functionResponse": response}])
        else:
            for call in message.tool_calls:
                names[call.id] = call.name
            if isinstance(message.raw, list) and message.raw:
                calls = iter(message.tool_calls)
                parts: list[dict[str, Any]] = []
                for raw in message.raw:
                    if not isinstance(raw, dict):
                        continue
                    part = dict(raw)
                    if isinstance(part.get("functionCall"), dict):
                        used = next(calls, None)
                        if used is not None and used.id:
                            part["functionCall"] = {**part["functionCall"], "id": used.id}
                    parts.append(part)
                push("model", parts)
                continue
            parts = [{"text": message.content}] if message.content else []
            for call in message.tool_calls:
                function = {
                    "name": wire_tool_name(call.name),
                    "args": _arguments_object(call.arguments),
                }
                if call.id:
                    function["id"] = call.id
                parts.append({"functionCall": function})
            push("model", parts)
    return "\n\n".join(system), contents


def parse_gemini_response(
    data: Any, *, default_model: str = "", tool_names: dict[str, str] | None = None
) -> ChatResponse:
    """A generateContent reply as a ChatResponse: the first candidate's text parts (thoughts
    left out of the answer) and ``functionCall`` parts (arguments as the object sent; ``id``
    when Gemini gave one), its parts in ``raw`` (thought signatures included; sent back by
    :func:`messages_to_gemini`). ``finish_reason``: ``tool_calls`` when it calls tools,
    ``length`` for ``MAX_TOKENS``, ``content_filter`` for a safety stop or a blocked prompt.
    Raises :class:`ReplyShapeError` for a reply without the expected shape."""
    if not isinstance(data, dict):
        raise ReplyShapeError(f"the reply is {type_name(data)}, not a JSON object")
    usage = gemini_usage(data.get("usageMetadata") or {})
    model = data.get("modelVersion")
    model = model if isinstance(model, str) and model else default_model
    feedback = data.get("promptFeedback")
    candidates = data.get("candidates")
    if candidates is None:
        candidates = []
    if not isinstance(candidates, list):
        raise ReplyShapeError(f"`candidates` should be an array, got {type_name(candidates)}")
    if not candidates:
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            return ChatResponse(
                text=None,
                finish_reason="content_filter",
                usage=usage,
                model=model,
                raw={"blocked": str(feedback["blockReason"])},
            )
        raise ReplyShapeError("the reply has no candidate")
    candidate = candidates[0]
    if not isinstance(candidate, dict):
        raise ReplyShapeError(f"`candidates[0]` should be an object, got {type_name(candidate)}")
    reason = candidate.get("finishReason")
    if reason in SAFETY_REASONS:
        return ChatResponse(
            text=None,
            finish_reason="content_filter",
            usage=usage,
            model=model,
            raw={"blocked": str(reason)},
        )
    content = candidate.get("content") or {}
    if not isinstance(content, dict):
        raise ReplyShapeError(f"`content` should be an object, got {type_name(content)}")
    parts = content.get("parts") or []
    if not isinstance(parts, list):
        raise ReplyShapeError(f"`content.parts` should be an array, got {type_name(parts)}")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            raise ReplyShapeError(f"`parts[{index}]` should be an object, got {type_name(part)}")
        if "text" in part and not part.get("thought"):
            if not isinstance(part["text"], str):
                raise ReplyShapeError(
                    f"`parts[{index}].text` should be a string, got {type_name(part['text'])}"
                )
            texts.append(part["text"])
        function = part.get("functionCall")
        if isinstance(function, dict):
            name = function.get("name")
            name = name if isinstance(name, str) else ""
            args = function.get("args")
            call_id = function.get("id")
            calls.append(
                ToolCall(
                    id=str(call_id) if isinstance(call_id, str) and call_id else "",
                    name=(tool_names or {}).get(name, name),
                    arguments=args if isinstance(args, dict) else {},
                )
            )
    finish = "tool_calls" if calls else _FINISH.get(str(reason), str(reason or "stop").lower())
    if reason == "MAX_TOKENS":
        finish = "length"
    text = "".join(texts)
    chunks = data.get("_chunks")
    return ChatResponse(
        text=text if texts and (text or not calls) else None,
        tool_calls=calls,
        finish_reason=finish,
        usage=usage,
        model=model,
        raw=[p for p in parts if isinstance(p, dict)] or None,
        chunks=chunks if isinstance(chunks, list) else None,
    )


def gemini_usage(usage: Any) -> dict[str, int]:
    """Neutral usage from ``usageMetadata``: ``promptTokenCount`` is the whole prompt
    (``cachedContentTokenCount`` → ``cache_read_tokens``); output is ``candidatesTokenCount``
    plus ``thoughtsTokenCount`` (→ ``reasoning_tokens``), as Gemini bills thoughts."""
    if not isinstance(usage, dict):
        usage = {}
    note_unreported(usage.get("promptTokenCount"), usage.get("candidatesTokenCount"))
    thoughts = token_count(usage.get("thoughtsTokenCount"))
    out = {
        "input_tokens": token_count(usage.get("promptTokenCount")),
        "output_tokens": token_count(usage.get("candidatesTokenCount")) + thoughts,
    }
    cached = token_count(usage.get("cachedContentTokenCount"))
    if cached:
        out["cache_read_tokens"] = cached
    if thoughts:
        out["reasoning_tokens"] = thoughts
    return out
