"""Provider-neutral chat types and the `ModelClient` protocol (RUNTIME.md §5, §10).

Every provider adapter turns a :class:`ChatRequest` into its wire format and its reply into a
:class:`ChatResponse`; the agent loop only sees these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant", "tool"]


class ReplyShapeError(ValueError):
    """A provider reply that does not have the expected shape; ``str(exc)`` says what is wrong in
    plain words (no Python exception text). Adapters turn it into a ModelError."""


def type_name(value: Any) -> str:
    """The JSON name of ``value``'s type (``object``, ``array``, ``string``, ``number``, …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def token_count(value: Any) -> int:
    """A token count from a reply's usage: a non-negative int, or 0 for anything else (a string,
    a bool, a fraction, a negative number — a malformed usage block never fails a call)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else 0


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
    #: the model declined to answer (OpenAI ``message.refusal``, Anthropic ``stop_reason:
    #: refusal``): its explanation, or ``""`` when it gave none; None otherwise
    refusal: str | None = None
    #: not asked of a provider: the answer to an identical request of an earlier
    #: ``plan_and_execute`` attempt (:mod:`agentflow.runtime.models.memo`); costs nothing (usage 0)
    reused: bool = False

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
