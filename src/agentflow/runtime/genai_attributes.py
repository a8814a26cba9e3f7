"""The span attributes LLM observability tools read, built from agentflow's events
(docs/observability.md "What LLM tools see"; :class:`agentflow.runtime.telemetry.OtelSink`
sets them).

Two conventions, both in full, so that Arize Phoenix, Langfuse, Logfire and Jaeger each find
what they look for:

- the OpenTelemetry GenAI semantic conventions (``gen_ai.*``): ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` / ``gen_ai.system_instructions`` as JSON in the conventions'
  message shape (``{role, parts: [{type: text|tool_call|tool_call_response, …}]}``),
  ``gen_ai.tool.definitions`` (``[{type: function, name, description, parameters}]``);
- OpenInference (Phoenix's): ``openinference.span.kind`` (:data:`CHAIN`, :data:`AGENT`,
  :data:`LLM`, :data:`TOOL`), ``input.value`` / ``output.value`` with their mime types, and the
  flattened ``llm.input_messages.N.message.role`` / ``.content`` / ``.tool_calls.M.tool_call.*``,
  ``llm.output_messages.…``, ``llm.tools.N.tool.json_schema``, ``llm.token_count.*``,
  ``llm.cost.total``, ``llm.model_name``, ``llm.provider``.

Messages come from ``model_call`` events in agentflow's neutral form (``{role, content,
tool_calls?, tool_call_id?, name?, is_error?}``, :func:`agentflow.runtime.agent.message_fields`).
Every function here is pure: no OpenTelemetry import, no redaction (the sink redacts the text
it sets).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agentflow.runtime.where import outlined_call, tool_label

__all__ = [
    "AGENT",
    "CHAIN",
    "Conversations",
    "LLM",
    "TOOL",
    "chat_content",
    "chat_metadata",
    "io_value",
    "otel_messages",
    "output_messages",
    "step_span_name",
    "tool_definitions",
]

#: OpenInference span kinds (``openinference.span.kind``)
CHAIN, AGENT, LLM, TOOL = "CHAIN", "AGENT", "LLM", "TOOL"
JSON_MIME = "application/json"
TEXT_MIME = "text/plain"
#: a map item's segment of a step path (``E3/do.1``)
_ITEM = re.compile(r"^do\.(\d+)$")


def otel_messages(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Any]]:
    """``(system instructions, input messages)`` of a request in the GenAI conventions' shape:
    system messages become ``gen_ai.system_instructions`` parts (``[{type: text, content}]``),
    the others ``{role, parts}`` messages (tool calls as ``tool_call`` parts, tool results as
    ``tool_call_response`` parts of a ``tool`` message)."""
    system: list[dict[str, Any]] = []
    out: list[Any] = []
    for m in messages:
        role = str(m.get("role") or "user")
        content = m.get("content")
        if role == "system":
            if content:
                system.append({"type": "text", "content": content})
            continue
        parts: list[dict[str, Any]] = []
        if role == "tool":
            parts.append(
                {"type": "tool_call_response", "id": m.get("tool_call_id"), "response": content}
            )
        elif content:
            parts.append({"type": "text", "content": content})
        for call in m.get("tool_calls") or ():
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": call.get("name"),
                    "arguments": call.get("arguments"),
                }
            )
        message: dict[str, Any] = {"role": role, "parts": parts}
        if m.get("name") and role != "tool":
            message["name"] = m["name"]
        out.append(message)
    return system, out


def output_messages(reply: dict[str, Any], finish_reason: Any) -> list[dict[str, Any]]:
    """The reply of a ``model_call`` event (``{text, tool_calls}``) as ``gen_ai.output.messages``
    (one assistant message with its ``finish_reason``)."""
    parts: list[dict[str, Any]] = []
    if reply.get("text"):
        parts.append({"type": "text", "content": reply["text"]})
    for call in reply.get("tool_calls") or ():
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": call.get("name"),
                "arguments": call.get("arguments"),
            }
        )
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if finish_reason:
        message["finish_reason"] = str(finish_reason)
    return [message]


def _arguments_text(arguments: Any, dumps: Any) -> str:
    return arguments if isinstance(arguments, str) else dumps(arguments)


def _oi_message(prefix: str, m: dict[str, Any], text: Any, dumps: Any) -> dict[str, Any]:
    """One message as OpenInference's flattened attributes under ``prefix``
    (``llm.input_messages.0``)."""
    attrs: dict[str, Any] = {f"{prefix}.message.role": str(m.get("role") or "user")}
    if m.get("content") is not None:
        attrs[f"{prefix}.message.content"] = text(m["content"])
    if m.get("tool_call_id"):
        attrs[f"{prefix}.message.tool_call_id"] = str(m["tool_call_id"])
    if m.get("name"):
        attrs[f"{prefix}.message.name"] = str(m["name"])
    for j, call in enumerate(m.get("tool_calls") or ()):
        at = f"{prefix}.message.tool_calls.{j}.tool_call"
        if call.get("id"):
            attrs[f"{at}.id"] = str(call["id"])
        attrs[f"{at}.function.name"] = str(call.get("name") or "")
        attrs[f"{at}.function.arguments"] = text(_arguments_text(call.get("arguments"), dumps))
    return attrs


def chat_content(
    messages: list[dict[str, Any]],
    reply: dict[str, Any],
    finish_reason: Any,
    *,
    text: Any,
    dumps: Any,
) -> dict[str, Any]:
    """The content attributes of a ``chat`` span (set only with ``capture_content``): the GenAI
    conventions' ``gen_ai.system_instructions`` / ``gen_ai.input.messages`` /
    ``gen_ai.output.messages`` and OpenInference's ``llm.input_messages.*`` /
    ``llm.output_messages.*`` / ``input.value`` / ``output.value``.  ``text(value) -> str``
    redacts and caps a string (or JSON-encodes anything else); ``dumps`` is JSON text."""
    system, inputs = otel_messages(messages)
    outputs = output_messages(reply, finish_reason)
    attrs: dict[str, Any] = {
        "gen_ai.input.messages": text(inputs),
        "gen_ai.output.messages": text(outputs),
        "input.value": text({"messages": messages}),
        "input.mime_type": JSON_MIME,
    }
    if system:
        attrs["gen_ai.system_instructions"] = text(system)
    for i, m in enumerate(messages):
        attrs.update(_oi_message(f"llm.input_messages.{i}", m, text, dumps))
    answer = {
        "role": "assistant",
        "content": reply.get("text"),
        "tool_calls": reply.get("tool_calls"),
    }
    attrs.update(_oi_message("llm.output_messages.0", answer, text, dumps))
    if reply.get("text") and not reply.get("tool_calls"):
        attrs["output.value"] = text(str(reply["text"]))
        attrs["output.mime_type"] = TEXT_MIME
    else:
        attrs["output.value"] = text(reply)
        attrs["output.mime_type"] = JSON_MIME
    return attrs


def chat_metadata(data: dict[str, Any]) -> dict[str, Any]:
    """The attributes of a ``chat`` span that hold no content (always set): OpenInference's
    model, provider, token counts and cost, the reply id and the server (from a ``model_call``
    event's fields)."""
    inp = data.get("input_tokens")
    out = data.get("output_tokens")
    attrs: dict[str, Any] = {
        "llm.model_name": data.get("model") or None,
        "llm.provider": data.get("api") or data.get("provider"),
        "llm.system": data.get("api") or data.get("provider"),
        "llm.token_count.prompt": inp,
        "llm.token_count.completion": out,
        "llm.token_count.total": inp + out
        if isinstance(inp, int) and isinstance(out, int)
        else None,
        "llm.token_count.prompt_details.cache_read": data.get("cache_read_tokens"),
        "llm.token_count.prompt_details.cache_write": data.get("cache_write_tokens"),
        "gen_ai.usage.cache_read.input_tokens": data.get("cache_read_tokens"),
        "gen_ai.usage.cache_creation.input_tokens": data.get("cache_write_tokens"),
        "gen_ai.response.id": data.get("response_id"),
        "server.address": data.get("server_address"),
        "server.port": data.get("server_port"),
    }
    cost = data.get("cost")
    if isinstance(cost, int | float):
        attrs["llm.cost.total"] = float(cost)
        attrs["operation.cost"] = float(cost)  # Pydantic AI's / Logfire's name
    return attrs


def tool_definitions(defs: list[dict[str, Any]], *, dumps: Any) -> dict[str, Any]:
    """The tools offered to the model (``[{name, description, parameters}]`` of a
    ``model_call`` event) as ``gen_ai.tool.definitions`` and ``llm.tools.N.tool.json_schema``."""
    shaped = [
        {
            "type": "function",
            "name": d.get("name"),
            "description": d.get("description") or None,
            "parameters": d.get("parameters"),
        }
        for d in defs
    ]
    shaped = [{k: v for k, v in d.items() if v is not None} for d in shaped]
    attrs: dict[str, Any] = {"gen_ai.tool.definitions": dumps(shaped)}
    for i, d in enumerate(shaped):
        schema = {
            "type": "function",
            "function": {
                "name": d.get("name"),
                "description": d.get("description", ""),
                "parameters": d.get("parameters") or {},
            },
        }
        attrs[f"llm.tools.{i}.tool.json_schema"] = dumps(schema)
    return attrs


def io_value(key: str, value: Any, text: Any) -> dict[str, Any]:
    """OpenInference's ``input.value`` / ``output.value`` (``key``: ``input`` or ``output``) of
    a value: a string as text, anything else as JSON."""
    if isinstance(value, str):
        return {f"{key}.value": text(value), f"{key}.mime_type": TEXT_MIME}
    return {f"{key}.value": text(value), f"{key}.mime_type": JSON_MIME}


class Conversations:
    """What the model calls of one run told, for the spans that follow: each conversation's
    messages (a ``model_call`` event carries only the new ones after ``history`` told before),
    the tools offered in it, and the ids of the tool calls each reply made (the tool spans'
    ``gen_ai.tool.call.id``).  A conversation is ``(step path, conversation number)``."""

    def __init__(self) -> None:
        self.history: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self.offered: dict[tuple[str, int], dict[str, Any]] = {}
        self.pending: dict[str, dict[str, list[str]]] = {}

    def told(
        self, path: str, data: dict[str, Any], dumps: Any
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """``(the whole request's messages, the tool definition attributes)`` of a
        ``model_call`` event at ``path``."""
        key = (path, data["conversation"] if isinstance(data.get("conversation"), int) else 0)
        if isinstance(data.get("tool_definitions"), list):
            self.offered[key] = tool_definitions(data["tool_definitions"], dumps=dumps)
        new = data.get("messages")
        if not isinstance(new, list):
            return [], self.offered.get(key, {})
        history = data.get("history")
        before = self.history.get(key, [])[: history if isinstance(history, int) else 0]
        messages = before + [m for m in new if isinstance(m, dict)]
        self.history[key] = messages
        return messages, self.offered.get(key, {})

    def calls(self, round_path: str, reply: dict[str, Any]) -> None:
        """Keep the ids of the tool calls a reply made in the round at ``round_path``
        (``E0/agent.2``), by tool name, in order."""
        calls: dict[str, list[str]] = {}
        for call in reply.get("tool_calls") or ():
            if isinstance(call, dict) and call.get("id"):
                calls.setdefault(str(call.get("name")), []).append(str(call["id"]))
        self.pending[round_path] = calls

    def call_id(self, round_path: str, tool: str) -> str | None:
        """The id of the next call of ``tool`` the reply of ``round_path`` made (None: none)."""
        ids = self.pending.get(round_path, {}).get(tool)
        return ids.pop(0) if ids else None


def step_span_name(tool: str, path: str, data: Mapping[str, Any], agent: Any = None) -> str:
    """A step span's name, in the `.flow`'s terms and the GenAI conventions' form (operation,
    then what it works on; docs/observability.md "Span names"): ``invoke_agent helper`` for an
    agent step (its agent: the ``.flow`` alias or the profile), ``list_dir files`` for a step
    whose value is bound to ``let files``, the operation alone (``exit``, ``ask``) for one bound
    to no name, `` · item N`` after either inside a map's item (12 items are not 12 alike
    rows).  A hand-written plan's step (no ``label``: its step ids are its own names) is
    ``read_file fetch`` by its path.  The path is always the ``agentflow.step.path``
    attribute, the whole label ``agentflow.step.label``.  A call of a sub-plan the compiler
    outlined (a map's item, a loop's round) is the item or round it runs, ``item 0`` /
    ``round 2`` (:func:`~agentflow.runtime.where.outlined_call`): never the sub-plan's id; a
    branch of a ``parallel`` block ends `` · parallel › style`` (an outlined branch is that
    alone)."""
    whole = outlined_call(tool, data.get("label"))
    if whole is not None:
        return whole
    short = tool_label(tool) if tool else "step"
    if tool == "map" and str(data.get("label") or "").rsplit(" › ", 1)[-1] == "filter":
        short = "filter"  # the map a `filter … where` with steps in it runs: named as written
    if tool == "agent":
        name = f"invoke_agent {agent}" if agent else "invoke_agent"
    elif data.get("name"):
        name = f"{short} {data['name']}"
    elif data.get("label"):
        name = short
    else:
        return f"{short} {path}".strip()
    last = path.rsplit("/", 1)[-1]
    item = _ITEM.match(last)
    if item:
        name += f" · item {item.group(1)}"
    parts = str(data.get("label") or "").split(" › ")
    if len(parts) >= 3 and parts[-3] == "parallel" and parts[-2] == last:
        name += f" · parallel › {last}"  # a branch of a `parallel` block that is one step
    return name
