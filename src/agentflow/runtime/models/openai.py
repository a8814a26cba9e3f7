"""OpenAI-compatible chat-completions adapter over httpx (docs/spec/RUNTIME.md §5, §10).

Works with OpenAI, Ollama, vLLM, llama.cpp server, LM Studio: ``POST {base_url}/chat/completions``.
Tools go out in the OpenAI function format; tool-call arguments come back raw (a JSON string, or an
object from servers that decode it). Transient errors and rate limits are retried inside the client
(see :mod:`agentflow.runtime.models.http`); they never reach the agent loop as rounds.
"""

from __future__ import annotations

import json
import re
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
    event_index,
    event_item,
    event_list,
    event_object,
    event_text,
    malformed_event,
    status_of_error_body,
)
from agentflow.runtime.models.schema_subsets import OPENAI, lossy_keywords, moved_text


class OpenAIClient(HTTPModelClient):
    """A :class:`ModelClient` for one model of an OpenAI-compatible endpoint.

    ``provider``: provider name (for messages); ``base_url``: e.g. ``http://127.0.0.1:11434/v1``;
    ``model``: the provider's model name; ``api_key``: sent as ``Authorization: Bearer`` and never
    logged or put in an error. ``timeout``: seconds per HTTP request. ``structured_output``: send
    the output contract as ``response_format: json_schema`` (strict, see :func:`strict_schema`)
    instead of prompt text, and mark a function tool ``strict: true`` when its schema is strict
    as it is; a 400 that rejects the schema is retried once with the contract as prompt text (a
    warning through ``on_warning``), and the client then stays with prompt text.
    ``tool_choice`` (``auto``/``required``/``none``) and ``parallel_tool_calls`` are sent, when
    set, with requests that offer tools (unset: the server's default, which is ``auto`` and
    parallel for OpenAI; some local servers reject them).

    Reasoning models: ``max_completion_tokens`` (sent instead of ``max_tokens``, which o-series
    and gpt-5 models refuse; used automatically for those model names), ``reasoning_effort``,
    ``system_role="developer"`` (system text sent as a ``developer`` message). A reply's
    reasoning state (DeepSeek ``reasoning_content``, vLLM/Ollama ``reasoning``, Gemini's
    ``thought_signature`` in a tool call's ``extra_content``) is kept in ``ChatResponse.raw`` and
    sent back unchanged with the assistant turn. ``stream``: ask for Server-Sent Events (answer
    text goes to ``ChatRequest.on_delta`` as it arrives); a server that streams unasked is read
    the same way. The other keyword arguments are those of :class:`HTTPModelClient`.
    """

    def __init__(
        self,
        *,
        structured_output: bool = False,
        max_completion_tokens: int | None = None,
        reasoning_effort: str | None = None,
        system_role: str = "system",
        **options: Any,
    ):
        super().__init__(**options)
        self.structured_output = structured_output
        self.max_completion_tokens = max_completion_tokens
        self.reasoning_effort = reasoning_effort
        self.system_role = system_role
        #: set once the endpoint refused a response_format schema (then prompt text is used)
        self.native_refused = False

    def native_schema(self, request: ChatRequest) -> dict[str, Any] | None:
        """The strict schema sent as ``response_format`` for ``request``, or None (prompt text)."""
        if not self.structured_output or self.native_refused or request.response_schema is None:
            return None
        return strict_schema(request.response_schema)

    def build_payload(self, request: ChatRequest, *, native: bool = True) -> dict[str, Any]:
        """The JSON body of the chat-completions request for ``request``.

        ``native=False`` sends the contract as prompt text even when native output is on.
        """
        strict = self.native_schema(request) if native else None
        messages = (
            request.messages
            if strict is not None
            else with_contract(request.messages, request.response_schema)
        )
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [message_to_openai(m, self.system_role) for m in messages],
        }
        if request.tools:
            payload["tools"] = [self._tool(t) for t in request.tools]
            if self.tool_choice is not None:
                payload["tool_choice"] = self.tool_choice
            if self.parallel_tool_calls is not None:
                payload["parallel_tool_calls"] = self.parallel_tool_calls
        max_tokens = request.max_tokens or self.max_completion_tokens or self.max_tokens
        if max_tokens:
            if self.max_completion_tokens or _COMPLETION_TOKENS_MODELS.match(self.model):
                payload["max_completion_tokens"] = max_tokens
            else:
                payload["max_tokens"] = max_tokens
        temperature = request.temperature if request.temperature is not None else self.temperature
        if temperature is not None:
            payload["temperature"] = temperature
        if request.stop:
            payload["stop"] = list(request.stop)
        if self.reasoning_effort is not None:
            payload["reasoning_effort"] = self.reasoning_effort
        if strict is not None:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": strict, "strict": True},
            }
        if self.stream:
            payload["stream"] = True
            payload["stream_options"] = {"include_usage": True}
        return payload

    def _tool(self, tool: ToolSpec) -> dict[str, Any]:
        schema = tool.input_schema or {"type": "object", "properties": {}}
        function: dict[str, Any] = {
            "name": wire_tool_name(tool.name),
            "description": tool.description,
            "parameters": schema,
        }
        if self.structured_output and is_strict_as_is(schema):
            function["parameters"] = strict_schema(schema)
            function["strict"] = True
        return {"type": "function", "function": function}

    @property
    def chat_url(self) -> str:
        """The chat-completions endpoint (Azure's deployment URL overrides it)."""
        return f"{self.base_url}/chat/completions"

    def _request_headers(self) -> dict[str, str]:
        """The headers of every request: JSON, the provider's extra ``headers``, the key as
        ``Authorization: Bearer`` (Azure's ``api-key`` overrides this)."""
        headers = {"Content-Type": "application/json", **self._headers}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _reply_shape(self, data: Any, request: ChatRequest) -> None:
        """Raises ReplyShapeError when ``data`` is not of this API's reply shape (retried)."""
        parse_openai_response(
            data, default_model=self.model, tool_names=tool_name_map(request.tools)
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Run one inference; raises ModelError(kind) after bounded retries (never shows the key)."""
        headers = self._request_headers()
        url = self.chat_url
        data = await self._native_or_prompt(
            self.native_schema(request) is not None,
            lambda native: self._send(
                url, self.build_payload(request, native=native), headers, request
            ),
            "response_format",
        )
        try:
            response = parse_openai_response(
                data, default_model=self.model, tool_names=tool_name_map(request.tools)
            )
        except ReplyShapeError as exc:
            raise self._malformed(exc) from None
        if response.finish_reason == "content_filter":
            raise ModelError(
                f"model provider '{self.provider}': the provider's content filter stopped the "
                "answer (finish_reason content_filter)",
                kind=ModelErrorKind.CONTENT_FILTER,
            )
        return response

    async def _send(
        self, url: str, payload: dict[str, Any], headers: dict[str, str], request: ChatRequest
    ) -> Any:
        return await self._post_streamed(url, payload, headers, request, read_openai_stream)


#: Model names that refuse ``max_tokens`` and want ``max_completion_tokens`` (o-series, gpt-5).
_COMPLETION_TOKENS_MODELS = re.compile(r"^(?:[\w.-]+/)?(?:o\d|gpt-5)")


#: Words of a 400 that refuses the response_format schema (not the request as a whole).
async def read_openai_stream(events: Any, on_delta: Any, chunks: list[str]) -> dict[str, Any]:
    """A chat-completions stream (``data:`` chunks up to ``[DONE]``) accumulated into the body a
    non-streamed reply would have had (so one parser serves both). Answer text deltas go to
    ``on_delta`` and ``chunks``. Raises StreamFailure on an ``error`` chunk, a stream that ends
    without any choice, and a stream that breaks off: one that ends with neither a
    ``finish_reason`` nor ``[DONE]`` (a cut text or a half-sent tool call is not an answer;
    docs/models.md "Streaming")."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    calls: dict[int, dict[str, Any]] = {}
    slots: dict[int, int] = {}  # a tool call's wire index → its key in ``calls``
    texts: list[str] = []  # the answer's text pieces
    finish: str | None = None
    usage: Any = None
    model: Any = None
    reply_id: Any = None
    seen = done = False
    # Azure's content-filter verdicts (a first chunk with only `prompt_filter_results`; each
    # choice's `content_filter_results`): kept, a `filtered` verdict winning, so a filtered
    # stream is told apart as a non-streamed reply is
    prompt_filters: list[Any] = []
    verdicts: dict[str, Any] = {}
    async for _event, data in events:
        if data.strip() == "[DONE]":
            done = True
            break
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):
            raise StreamFailure(
                500, json.dumps({"error": {"message": "a stream chunk is not JSON"}})
            ) from None
        error = error_body(chunk)
        if error is not None:
            raise StreamFailure(status_of_error_body(error), data)
        # each field's type is checked where it is read: a chunk of the wrong shape fails the
        # call as a malformed reply (transient), never becomes an empty answer or a tool call
        chunk = event_item(chunk, "a chunk")
        model = chunk.get("model") or model
        reply_id = chunk.get("id") or reply_id
        if chunk.get("usage") is not None:
            usage = event_object(chunk, "usage", "a chunk")
        if isinstance(chunk.get("prompt_filter_results"), list):
            prompt_filters += chunk["prompt_filter_results"]
        for choice in event_list(chunk, "choices", "a chunk"):
            choice = event_item(choice, "a choice")
            seen = True
            verdict = choice.get("content_filter_results")
            for name, value in verdict.items() if isinstance(verdict, dict) else ():
                if name not in verdicts or (isinstance(value, dict) and value.get("filtered")):
                    verdicts[name] = value
            finish = event_text(choice, "finish_reason", "a choice") or finish
            if "delta" in choice and choice["delta"] is None:  # present, and no object
                raise malformed_event("a choice's delta should be an object")
            delta = event_object(choice, "delta", "a choice")
            for key, value in delta.items():
                if key == "tool_calls":
                    for part in event_list(delta, key, "a delta"):
                        _merge_call(calls, part, slots)
                elif key == "content":
                    piece = event_text(delta, key, "a delta")
                    if value is not None:  # joined once at the end (linear in the pieces)
                        texts.append(piece)
                    if piece:
                        chunks.append(piece)
                        if on_delta is not None:
                            on_delta(piece)
                elif key in ("reasoning_content", "reasoning", "refusal"):
                    if value is not None:
                        message[key] = (message.get(key) or "") + event_text(delta, key, "a delta")
                elif key not in ("role",) and value is not None:
                    message[key] = value
    if not seen:
        raise StreamFailure(
            502, json.dumps({"error": {"message": "the stream ended without an answer"}})
        )
    if finish is None and not done:
        raise StreamFailure(
            502,
            json.dumps(
                {
                    "error": {
                        "message": "the stream broke off before the answer was finished "
                        "(no finish_reason, no [DONE])"
                    }
                }
            ),
        )
    if texts:
        message["content"] = "".join(texts)
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    body: dict[str, Any] = {
        "id": reply_id,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }
    if verdicts:
        body["choices"][0]["content_filter_results"] = verdicts
    if prompt_filters:
        body["prompt_filter_results"] = prompt_filters
    return body


def _merge_call(calls: dict[int, dict[str, Any]], part: Any, slots: dict[int, int]) -> None:
    """Merge one streamed ``tool_calls`` piece into ``calls`` (by order of first appearance).
    A piece continues the call last seen at its wire ``index`` (``slots``: index → key in
    ``calls``) unless it carries an ``id`` other than that call's: then it starts a new call
    (some OpenAI-compatible servers send every call at index 0, each with its own id; merged,
    two calls became one with both names and both argument texts run together). A piece with
    no usable index starts a new call."""
    part = event_item(part, "a tool_calls piece")
    index = event_index(part, "index", "a tool_calls piece", None)
    new_id = event_text(part, "id", "a tool_calls piece")
    slot = slots.get(index) if type(index) is int else None
    if slot is not None and isinstance(new_id, str) and new_id:
        known = calls[slot].get("id")
        if isinstance(known, str) and known and known != new_id:
            slot = None  # the same index, another call
    if slot is None:
        slot = len(calls)
        if type(index) is int:
            slots[index] = slot
    call = calls.setdefault(slot, {"type": "function", "function": {"name": "", "arguments": ""}})
    for key, value in part.items():
        if key == "function":
            function = event_object(part, key, "a tool_calls piece")
            call["function"]["name"] += event_text(function, "name", "a tool call's function")
            arguments = function.get("arguments")
            if isinstance(arguments, dict):  # a server that sends decoded arguments
                call["function"]["arguments"] = arguments
            else:
                piece = event_text(function, "arguments", "a tool call's function")
                if isinstance(call["function"]["arguments"], str):
                    call["function"]["arguments"] += piece
        elif key not in ("index", "type") and value is not None:
            call[key] = value


#: Reasoning fields of an assistant message that go back to the provider as they came.
REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_details")


def message_to_openai(message: Message, system_role: str = "system") -> dict[str, Any]:
    """A neutral Message as an OpenAI chat message dict (arguments always a JSON string, tool
    names as sent, :func:`wire_tool_name`). An assistant turn this adapter produced carries its
    reasoning state back (``raw``: reasoning fields and each tool call's extra fields, e.g.
    Gemini's ``extra_content.google.thought_signature``). ``system_role``: ``system`` or
    ``developer``."""
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content or "",
        }
    role = system_role if message.role == "system" else message.role
    out: dict[str, Any] = {"role": role, "content": message.content}
    raw = message.raw if message.role == "assistant" and isinstance(message.raw, dict) else {}
    for key in REASONING_FIELDS:
        if raw.get(key) is not None:
            out[key] = raw[key]
    if message.role == "assistant" and message.tool_calls:
        extras = raw.get("tool_calls")
        if not isinstance(extras, list):
            extras = []
        out["tool_calls"] = []
        for index, call in enumerate(message.tool_calls):
            item: dict[str, Any] = {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": wire_tool_name(call.name),
                    "arguments": call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            extra = extras[index] if index < len(extras) else None
            if isinstance(extra, dict):
                item.update({k: v for k, v in extra.items() if k not in item})
            out["tool_calls"].append(item)
    elif out["content"] is None:
        out["content"] = ""
    return out


def parse_openai_response(
    data: Any, *, default_model: str = "", tool_names: dict[str, str] | None = None
) -> ChatResponse:
    """A chat-completions reply as a ChatResponse (arguments kept raw, missing ids left empty).

    ``tool_names``: ``{wire name: tool name}`` (:func:`tool_name_map`) to map shortened tool names
    back. Reasoning fields and each tool call's extra fields go to ``raw`` (round-tripped by
    :func:`message_to_openai`); usage counts cached prompt tokens (``cache_read_tokens``) and
    reasoning tokens when reported.

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
    extras: list[dict[str, Any]] = []
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
        name = name if isinstance(name, str) else ""
        call_id = raw.get("id")
        calls.append(
            ToolCall(
                id=str(call_id) if isinstance(call_id, (str, int)) and call_id != "" else "",
                name=(tool_names or {}).get(name, name),
                arguments=arguments,
            )
        )
        extras.append(
            {k: v for k, v in raw.items() if k not in ("id", "type", "function", "index")}
        )
    finish = choice.get("finish_reason")
    if not isinstance(finish, str) or not finish:
        finish = "tool_calls" if calls else "stop"
    usage = data.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    model = data.get("model")
    refusal = message.get("refusal")
    raw_state: dict[str, Any] = {
        key: message[key] for key in REASONING_FIELDS if message.get(key) is not None
    }
    if any(extras):
        raw_state["tool_calls"] = extras
    chunks = data.get("_chunks")
    return ChatResponse(
        text=content,
        refusal=refusal if isinstance(refusal, str) else None,
        tool_calls=calls,
        finish_reason=finish,
        usage=openai_usage(usage),
        model=model if isinstance(model, str) and model else default_model,
        raw=raw_state or None,
        chunks=chunks if isinstance(chunks, list) else None,
        response_id=reply_id(data),
    )


def reply_id(data: dict[str, Any]) -> str | None:
    """The provider's id of a reply (``chatcmpl-…``, ``msg_…``), when it gave one."""
    value = data.get("id")
    return str(value) if isinstance(value, str | int) and value != "" else None


#: the input and output counts of a chat-completions (or Responses API) ``usage`` block
_OPENAI_COUNTS = ("prompt_tokens", "input_tokens", "completion_tokens", "output_tokens")


def openai_usage(usage: dict[str, Any]) -> dict[str, int]:
    """Neutral usage from a chat-completions ``usage`` block (``prompt_tokens`` includes the
    cached ones; ``prompt_tokens_details.cached_tokens`` → ``cache_read_tokens``;
    ``completion_tokens_details.reasoning_tokens`` → ``reasoning_tokens``)."""
    note_unreported(*(usage.get(k) for k in _OPENAI_COUNTS))
    out = {
        "input_tokens": token_count(usage.get("prompt_tokens"))
        or token_count(usage.get("input_tokens")),
        "output_tokens": token_count(usage.get("completion_tokens"))
        or token_count(usage.get("output_tokens")),
    }
    prompt_details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
    if isinstance(prompt_details, dict) and token_count(prompt_details.get("cached_tokens")):
        out["cache_read_tokens"] = token_count(prompt_details.get("cached_tokens"))
    elif token_count(usage.get("prompt_cache_hit_tokens")):  # DeepSeek
        out["cache_read_tokens"] = token_count(usage.get("prompt_cache_hit_tokens"))
    details = usage.get("completion_tokens_details") or usage.get("output_tokens_details")
    if isinstance(details, dict) and token_count(details.get("reasoning_tokens")):
        out["reasoning_tokens"] = token_count(details.get("reasoning_tokens"))
    return out


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
    """``schema`` rewritten for OpenAI strict structured output (docs/spec/RUNTIME.md §10), or None.

    Only the *provider request* uses the result; answers are always validated against the original
    contract. Every object gets ``additionalProperties: false`` and lists all its properties as
    required, the optional ones made nullable (a ``T?`` field, already ``anyOf [T, null]``, is left
    as it is); ``default``/``$schema`` and our ``x-*`` annotations are dropped, as is a ``format``
    strict mode does not know (:data:`STRICT_FORMATS`); ``oneOf`` is sent as ``anyOf``; a keyword
    outside strict mode's documented subset (``minLength``, ``maxLength``, ``uniqueItems`` …,
    :data:`~agentflow.runtime.models.schema_subsets.OPENAI`) is moved into the node's
    ``description`` (:func:`~agentflow.runtime.models.schema_subsets.moved_text`). ``$ref``
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
        moved: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROP or key.startswith("x-"):  # our own annotations (`x-flow-type`)
                continue
            if key in _REFUSED:
                raise _Unsupported(key)
            if key == "format" and value not in STRICT_FORMATS:
                continue
            if key not in OPENAI.keywords and key != "oneOf":
                moved[key] = value  # e.g. maxLength: told in the description, checked locally
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
        if "type" not in out and ("enum" in out or "const" in out):
            # a literal union (`"low" | "high"`) is an enum without a type; strict mode wants one
            kind = _literal_type(out["enum"] if "enum" in out else [out["const"]])
            if kind is not None:
                out = {"type": kind, **out}
        if out.get("type") == "object" or isinstance(out.get("properties"), dict):
            props = out.get("properties") or {}
            required = set(out.get("required") or [])
            out["properties"] = {
                k: (v if k in required else _nullable(v)) for k, v in props.items()
            }
            out["required"] = list(props)
            out["additionalProperties"] = False
        if moved:
            text = moved_text(moved)
            out["description"] = f"{out['description']} {text}" if out.get("description") else text
        return out

    try:
        try:
            strict: dict[str, Any] = conv(schema, frozenset())
            return strict
        except _Recursive:
            out: dict[str, Any] = conv(schema, None)
            if defs:
                out["$defs"] = {name: conv(d, None) for name, d in defs.items()}
            return out
    except (_Unsupported, RecursionError):  # RecursionError: nested too deeply to rewrite
        return None


def _literal_type(values: Any) -> str | list[str] | None:
    """The JSON type(s) of an enum's values (None when they are not all scalars)."""
    if not isinstance(values, list) or not values:
        return None
    kinds: list[str] = []
    for value in values:
        if value is None:
            kind = "null"
        elif isinstance(value, bool):
            kind = "boolean"
        elif isinstance(value, int):
            kind = "integer"
        elif isinstance(value, float):
            kind = "number"
        elif isinstance(value, str):
            kind = "string"
        else:
            return None
        if kind not in kinds:
            kinds.append(kind)
    if "integer" in kinds and "number" in kinds:
        kinds.remove("integer")
    return kinds[0] if len(kinds) == 1 else kinds


def is_strict_as_is(schema: dict[str, Any]) -> bool:
    """True when strict mode would accept ``schema``'s meaning unchanged: :func:`strict_schema`
    can express it, makes no optional property nullable (so ``strict: true`` on a tool never
    makes the model send ``null`` for an argument the tool wants absent) and closes no open
    object (an ``object`` without ``properties``, which takes any keys)."""
    strict = strict_schema(schema)
    if strict is None or lossy_keywords(schema, OPENAI):
        return False

    def loose_somewhere(node: Any) -> bool:
        if isinstance(node, list):
            return any(loose_somewhere(n) for n in node)
        if not isinstance(node, dict):
            return False
        props = node.get("properties")
        if isinstance(props, dict) and set(props) - set(node.get("required") or []):
            return True  # an optional parameter would be sent as null
        if node.get("type") == "object" and not isinstance(props, dict):
            return True  # an open object (any keys) would be closed
        return any(loose_somewhere(v) for v in node.values())

    return not loose_somewhere(schema)
