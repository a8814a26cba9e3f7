"""AWS Bedrock Converse API adapter over httpx (``kind = "bedrock"``; docs/models.md "Bedrock").

``POST {base_url}/model/{modelId}/converse`` (``/converse-stream`` when streaming, answered as an
AWS event stream that botocore's parser decodes). Authentication: a Bedrock API key as
``Authorization: Bearer`` when ``api_key_env`` names one, else AWS Signature Version 4 computed by
botocore's signer (``SigV4Auth``) over each attempt's exact request, with the credentials
botocore's own chain finds (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
``AWS_SESSION_TOKEN``, ``AWS_PROFILE``, the shared files, an instance role …). botocore is the
optional ``bedrock`` extra; nothing here signs by hand.

Conversation rules: system text is ``system``; a tool call is a ``toolUse`` block, its result a
``toolResult`` block (``status: error`` for a failed tool) in the next user turn; consecutive
turns of one role are merged; blank text blocks are left out (Bedrock refuses them); an
assistant turn this adapter produced goes back as the blocks it came as (``Message.raw``:
``reasoningContent`` with its signature included), with the agent loop's tool-use ids.
Usage: ``inputTokens`` does not count the cached prompt, so ``input_tokens`` is it plus
``cacheReadInputTokens`` and ``cacheWriteInputTokens`` (reported apart). ``stopReason``
``guardrail_intervened`` / ``content_filtered`` is a ``content_filter`` ModelError.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any
from urllib.parse import quote

from agentflow.core.redaction import register_secret
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
    event_index,
    event_item,
    event_object,
    event_text,
    status_of_error_body,
)

_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}
_FILTERED = ("guardrail_intervened", "content_filtered")
EMPTY_USER_TEXT = "(empty message)"


def region_of(base_url: str) -> str | None:
    """The AWS region in a Bedrock runtime URL (``bedrock-runtime.us-east-1.amazonaws.com``)."""
    match = re.search(r"bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com", base_url)
    return match.group(1) if match else None


class BedrockClient(HTTPModelClient):
    """A :class:`ModelClient` for one Bedrock model (the :class:`HTTPModelClient` options, plus
    ``region`` — for the signature; default the URL's region, else ``AWS_REGION`` /
    ``AWS_DEFAULT_REGION`` —, ``env``, the environment the credentials are read from, and
    ``thinking_budget``, Anthropic extended thinking through ``additionalModelRequestFields``,
    temperature then not sent).
    The output contract always goes as prompt text (``structured_output`` is not used: the
    Converse API has no schema-constrained output for every model it serves)."""

    def __init__(
        self,
        *,
        region: str | None = None,
        env: dict[str, str] | None = None,
        structured_output: bool = False,
        thinking_budget: int | None = None,
        **options: Any,
    ):
        super().__init__(**options)
        self.thinking_budget = thinking_budget
        environment = os.environ if env is None else env
        self.region = (
            region
            or region_of(self.base_url)
            or environment.get("AWS_REGION")
            or environment.get("AWS_DEFAULT_REGION")
        )
        self._env = dict(environment)
        self._credentials: Any = None

    def url(self, stream: bool) -> str:
        """The Converse (or ConverseStream) endpoint of the model (its id percent-encoded)."""
        action = "converse-stream" if stream else "converse"
        return f"{self.base_url}/model/{quote(self.model, safe='')}/{action}"

    def build_payload(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body of the Converse request for ``request``."""
        system, messages = messages_to_bedrock(
            with_contract(request.messages, request.response_schema)
        )
        payload: dict[str, Any] = {"messages": messages}
        if system:
            payload["system"] = [{"text": system}]
        config: dict[str, Any] = {}
        max_tokens = request.max_tokens or self.max_tokens
        if max_tokens:
            config["maxTokens"] = max_tokens
        temperature = request.temperature if request.temperature is not None else self.temperature
        if temperature is not None and not self.thinking_budget:
            config["temperature"] = temperature
        if request.stop:
            config["stopSequences"] = list(request.stop)
        if config:
            payload["inferenceConfig"] = config
        if self.thinking_budget:  # Anthropic models on Bedrock: extended thinking
            payload["additionalModelRequestFields"] = {
                "thinking": {"type": "enabled", "budget_tokens": self.thinking_budget}
            }
        if request.tools:
            tool_config: dict[str, Any] = {"tools": [_tool(t) for t in request.tools]}
            if self.tool_choice in ("auto", "required"):
                tool_config["toolChoice"] = (
                    {"auto": {}} if self.tool_choice == "auto" else {"any": {}}
                )
            payload["toolConfig"] = tool_config
        return payload

    def _sign(self, request: Any) -> None:
        """Add a SigV4 signature over ``request`` (botocore's signer, service ``bedrock``)."""
        try:
            from botocore.auth import SigV4Auth
            from botocore.awsrequest import AWSRequest
        except ImportError:
            raise ModelError(
                f"model provider '{self.provider}': signing Bedrock requests needs botocore "
                "(pip install 'agentflow[bedrock]'), or set api_key_env to a Bedrock API key",
                kind=ModelErrorKind.PERMANENT,
            ) from None
        if self.region is None:
            raise ModelError(
                f"model provider '{self.provider}': no AWS region: set `region` in its "
                "[providers] table, AWS_REGION, or a base_url with the region in it",
                kind=ModelErrorKind.PERMANENT,
            )
        credentials = self._aws_credentials()
        signed = AWSRequest(
            method="POST",
            url=str(request.url),
            data=request.content,
            headers={"Content-Type": request.headers.get("Content-Type", "application/json")},
        )
        SigV4Auth(credentials, "bedrock", self.region).add_auth(signed)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            if name in signed.headers:
                request.headers[name] = signed.headers[name]

    def _aws_credentials(self) -> Any:
        if self._credentials is None:
            from botocore.credentials import Credentials

            key = self._env.get("AWS_ACCESS_KEY_ID")
            secret = self._env.get("AWS_SECRET_ACCESS_KEY")
            if key and secret:
                credentials = Credentials(key, secret, self._env.get("AWS_SESSION_TOKEN"))
            else:
                import botocore.session

                found = botocore.session.Session().get_credentials()
                if found is None:
                    raise ModelError(
                        f"model provider '{self.provider}': no AWS credentials found (set "
                        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)",
                        kind=ModelErrorKind.PERMANENT,
                    )
                credentials = found.get_frozen_credentials()
            for secret_part in (credentials.secret_key, credentials.token):
                register_secret(secret_part)  # never shown in any output
            self._credentials = credentials
        return self._credentials

    def _reply_shape(self, data: Any, request: ChatRequest) -> None:
        """Raises ReplyShapeError when ``data`` is not of this API's reply shape (retried)."""
        parse_bedrock_response(
            data, default_model=self.model, tool_names=tool_name_map(request.tools)
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Run one inference; raises ModelError(kind) after bounded retries (never shows a key
        or a signature)."""
        headers = {"Content-Type": "application/json", **self._headers}
        sign = None
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        else:
            sign = self._sign
        data = await self._post_streamed(
            self.url(self.stream),
            self.build_payload(request),
            headers,
            request,
            read_bedrock_stream,
            sign=sign,
        )
        try:
            response = parse_bedrock_response(
                data, default_model=self.model, tool_names=tool_name_map(request.tools)
            )
        except ReplyShapeError as exc:
            raise self._malformed(exc) from None
        if response.finish_reason == "content_filter":
            raise ModelError(
                f"model provider '{self.provider}': a guardrail or the content filter stopped "
                "the answer",
                kind=ModelErrorKind.CONTENT_FILTER,
            )
        return response


def _tool(tool: ToolSpec) -> dict[str, Any]:
    schema = tool.input_schema or {"type": "object", "properties": {}}
    return {
        "toolSpec": {
            "name": wire_tool_name(tool.name),
            "description": tool.description or tool.name,
            "inputSchema": {"json": schema},
        }
    }


async def read_bedrock_stream(events: Any, on_delta: Any, chunks: list[str]) -> dict[str, Any]:
    """A ConverseStream's events (``messageStart``, ``contentBlockStart``/``Delta``/``Stop``,
    ``messageStop``, ``metadata``) as the reply a Converse request would have had. Text deltas
    go to ``on_delta`` and ``chunks``. Raises StreamFailure on an exception event and on a
    stream that ends without ``messageStop``."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}  # a tool call's input pieces, joined when it stops
    texts: dict[int, list[str]] = {}  # a text block's pieces, joined once at the end
    stop: Any = None
    usage: Any = None
    done = False
    async for event, data in events:
        try:
            item = json.loads(data)
        except (ValueError, RecursionError):
            raise StreamFailure(
                500, json.dumps({"error": {"message": "a stream event is not JSON"}})
            ) from None
        if event == "error":
            raise StreamFailure(status_of_error_body(item), json.dumps({"error": item}))
        # each field's type is checked where it is read (malformed: transient, retried)
        item = event_item(item, f"a {event or 'stream'} event")
        index = event_index(item, "contentBlockIndex", event, 0)
        assert index is not None
        if event == "contentBlockStart":
            start = event_object(event_object(item, "start", event), "toolUse", f"{event}'s start")
            if start:
                blocks[index] = {"toolUse": {**start, "input": {}}}
                partial[index] = []
                texts.pop(index, None)
        elif event == "contentBlockDelta":
            delta = event_object(item, "delta", event)
            if delta.get("text") is not None:
                piece = event_text(delta, "text", f"{event}'s delta")
                blocks.setdefault(index, {"text": ""})
                texts.setdefault(index, []).append(piece)
                if piece:
                    chunks.append(piece)
                    if on_delta is not None:
                        on_delta(piece)
            elif delta.get("toolUse") is not None:
                tool_use = event_object(delta, "toolUse", f"{event}'s delta")
                piece = event_text(tool_use, "input", f"{event}'s toolUse")
                partial.setdefault(index, []).append(piece)
            elif delta.get("reasoningContent") is not None:
                reasoning = event_object(delta, "reasoningContent", f"{event}'s delta")
                block = blocks.setdefault(index, {"reasoningContent": {"reasoningText": {}}})
                content = block.setdefault("reasoningContent", {})
                if "redactedContent" in reasoning:
                    content["redactedContent"] = reasoning["redactedContent"]
                text = content.setdefault("reasoningText", {})
                for key in ("text", "signature"):
                    if reasoning.get(key) is not None:
                        piece = event_text(reasoning, key, f"{event}'s reasoningContent")
                        text[key] = text.get(key, "") + piece
        elif event == "contentBlockStop" and index in partial and index in blocks:
            text = "".join(partial.pop(index))
            try:
                blocks[index]["toolUse"]["input"] = json.loads(text) if text.strip() else {}
            except (ValueError, RecursionError):
                blocks[index]["toolUse"]["input"] = text  # kept raw: the agent loop reports it
        elif event == "messageStop":
            stop = event_text(item, "stopReason", event) or None
            done = True
        elif event == "metadata":
            usage = event_object(item, "usage", event) or None
    if not done:
        raise StreamFailure(
            502, json.dumps({"error": {"message": "the stream ended before messageStop"}})
        )
    for index, parts in partial.items():  # a tool-use block never stopped
        blocks[index]["toolUse"]["input"] = "".join(parts)
    for index, parts in texts.items():
        blocks[index]["text"] = blocks[index].get("text", "") + "".join(parts)
    for block in blocks.values():
        held = block.get("reasoningContent")
        if isinstance(held, dict) and not held.get("reasoningText"):
            held.pop("reasoningText", None)
    return {
        "output": {
            "message": {"role": "assistant", "content": [blocks[i] for i in sorted(blocks)]}
        },
        "stopReason": stop,
        "usage": usage,
    }


def _arguments_object(arguments: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def messages_to_bedrock(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` in Converse form (see the module doc)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": list(blocks)})

    for message in messages:
        if message.role == "system":
            if message.content:
                system.append(message.content)
        elif message.role == "user":
            text = message.content if message.content and message.content.strip() else None
            push("user", [{"text": text or EMPTY_USER_TEXT}])
        elif message.role == "tool":
            result: dict[str, Any] = {
                "toolUseId": message.tool_call_id or "",
                "content": [{"text": message.content or EMPTY_USER_TEXT}],
            }
            if message.is_error:
                result["status"] = "error"
            push("user", [{"toolResult": result}])
        elif isinstance(message.raw, list) and message.raw:
            calls = iter(message.tool_calls)
            blocks = []
            for raw in message.raw:
                if not isinstance(raw, dict):
                    continue
                block = dict(raw)
                if "text" in block and not str(block.get("text") or "").strip():
                    continue
                if isinstance(block.get("toolUse"), dict):
                    used = next(calls, None)
                    if used is not None:
                        block["toolUse"] = {**block["toolUse"], "toolUseId": used.id}
                blocks.append(block)
            push("assistant", blocks)
        else:
            blocks = []
            if message.content and message.content.strip():
                blocks.append({"text": message.content})
            for call in message.tool_calls:
                blocks.append(
                    {
                        "toolUse": {
                            "toolUseId": call.id,
                            "name": wire_tool_name(call.name),
                            "input": _arguments_object(call.arguments),
                        }
                    }
                )
            push("assistant", blocks)
    return "\n\n".join(system), out


def parse_bedrock_response(
    data: Any, *, default_model: str = "", tool_names: dict[str, str] | None = None
) -> ChatResponse:
    """A Converse reply as a ChatResponse: its text blocks, its ``toolUse`` blocks as tool calls
    (``toolUseId`` as the id, the input object as arguments), every block in ``raw``
    (``reasoningContent`` with its signature sent back by :func:`messages_to_bedrock`).
    Raises :class:`ReplyShapeError` for a reply without the expected shape."""
    if not isinstance(data, dict):
        raise ReplyShapeError(f"the reply is {type_name(data)}, not a JSON object")
    message = (
        (data.get("output") or {}).get("message") if isinstance(data.get("output"), dict) else None
    )
    if message is None:
        message = {}
    if not isinstance(message, dict):
        raise ReplyShapeError(f"`output.message` should be an object, got {type_name(message)}")
    blocks = message.get("content") or []
    if not isinstance(blocks, list):
        raise ReplyShapeError(f"`content` should be an array, got {type_name(blocks)}")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            raise ReplyShapeError(f"`content[{index}]` should be an object, got {type_name(block)}")
        if "text" in block:
            if not isinstance(block["text"], str):
                raise ReplyShapeError(
                    f"`content[{index}].text` should be a string, got {type_name(block['text'])}"
                )
            texts.append(block["text"])
        use = block.get("toolUse")
        if isinstance(use, dict):
            name = use.get("name")
            name = name if isinstance(name, str) else ""
            arguments = use.get("input")
            call_id = use.get("toolUseId")
            calls.append(
                ToolCall(
                    id=str(call_id) if isinstance(call_id, str) and call_id else "",
                    name=(tool_names or {}).get(name, name),
                    arguments=arguments if isinstance(arguments, (dict, str)) else {},
                )
            )
    stop = data.get("stopReason")
    stop = stop if isinstance(stop, str) and stop else ("tool_use" if calls else "end_turn")
    finish = "content_filter" if stop in _FILTERED else _STOP.get(stop, stop)
    if calls:
        finish = "tool_calls" if finish == "stop" else finish
    chunks = data.get("_chunks")
    return ChatResponse(
        text="".join(texts) if texts else None,
        tool_calls=calls,
        finish_reason=finish,
        usage=bedrock_usage(data.get("usage")),
        model=default_model,
        raw=[b for b in blocks if isinstance(b, dict)] or None,
        chunks=chunks if isinstance(chunks, list) else None,
    )


def bedrock_usage(usage: Any) -> dict[str, int]:
    """Neutral usage from a Converse ``usage`` block (``input_tokens`` is the whole prompt:
    ``inputTokens`` plus the cache reads and writes, reported apart)."""
    if not isinstance(usage, dict):
        usage = {}
    note_unreported(usage.get("inputTokens"), usage.get("outputTokens"))
    read = token_count(usage.get("cacheReadInputTokens"))
    write = token_count(usage.get("cacheWriteInputTokens"))
    out = {
        "input_tokens": token_count(usage.get("inputTokens")) + read + write,
        "output_tokens": token_count(usage.get("outputTokens")),
    }
    if read:
        out["cache_read_tokens"] = read
    if write:
        out["cache_write_tokens"] = write
    return out


__all__ = ["BedrockClient", "region_of"]
