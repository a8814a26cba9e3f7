"""Provider-neutral chat types and the `ModelClient` protocol (RUNTIME.md §5, §10).

Every provider adapter turns a :class:`ChatRequest` into its wire format and its reply into a
:class:`ChatResponse`; the agent loop only sees these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant", "tool"]


@dataclass
class ToolCall:
    """A tool call requested by the model.

    ``arguments`` is kept raw, as received: a JSON *string* (OpenAI) or an already-decoded object
    (Anthropic, Ollama). ``id`` may be empty when the provider sent none (the agent loop then
    assigns a stable generated id).
    """

    id: str
    name: str
    arguments: str | dict[str, Any]


@dataclass
class Message:
    """One conversation message.

    ``role``: system | user | assistant | tool. ``content``: text (may be None for an assistant turn
    that only calls tools). ``tool_calls``: on assistant turns. ``tool_call_id``: on tool results.
    ``is_error``: a tool result reporting a failure (Anthropic ``is_error``). ``raw``: the
    provider's original content blocks of an assistant turn (e.g. Anthropic thinking blocks),
    round-tripped unchanged by the adapter that produced them.
    """

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    raw: Any = None


@dataclass
class ToolSpec:
    """A tool offered to the model: name, description and JSON Schema of its input object."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass
class ChatRequest:
    """One inference request.

    ``response_schema``: optional JSON Schema for providers' native structured output (used only
    when the model option enables it); ``max_tokens``: output token cap (None: provider default).
    """

    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    response_schema: dict[str, Any] | None = None
    max_tokens: int | None = None


@dataclass
class ChatResponse:
    """One inference result.

    ``finish_reason``: "stop" | "tool_calls" | "length" | a provider's other value.
    ``usage``: ``{"input_tokens": int, "output_tokens": int}``. ``model``: the model that answered
    (label used in events). ``raw``: provider content blocks to round-trip (see Message.raw).
    """

    text: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = "stop"
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    model: str = ""
    raw: Any = None

    def to_message(self) -> Message:
        """The assistant message recording this response in a conversation."""
        return Message(
            role="assistant", content=self.text, tool_calls=list(self.tool_calls), raw=self.raw
        )


@runtime_checkable
class ModelClient(Protocol):
    """Anything that answers chat requests. Raises :class:`agentflow.errors.ModelError`."""

    async def chat(self, request: ChatRequest) -> ChatResponse:  # pragma: no cover - protocol
        """Run one inference."""
        ...
