"""Provider-neutral chat types and the `ModelClient` protocol (docs/spec/RUNTIME.md §5, §10).

Every provider adapter turns a :class:`ChatRequest` into its wire format and its reply into a
:class:`ChatResponse`; the agent loop only sees these types.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from agentflow.core.text import clean_json, clean_text

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


#: The largest token count one reply may report (a billion: far above any model's context
#: window and output together); a larger one is not a count (docs/models.md "Usage").
MAX_TOKEN_COUNT = 1_000_000_000

#: While a provider's reply is read (:func:`collect_bad_counts`): the values its usage block
#: gave as token counts that were not counts; None elsewhere.
_bad_counts: ContextVar[list[Any] | None] = ContextVar("agentflow_bad_token_counts", default=None)


def is_token_count(value: Any) -> bool:
    """True when ``value`` is a token count :func:`token_count` takes as it is: a non-negative
    whole number up to :data:`MAX_TOKEN_COUNT` (an int, or a float with no fraction)."""
    if isinstance(value, float):
        return value.is_integer() and 0 <= value <= MAX_TOKEN_COUNT
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKEN_COUNT


def token_count(value: Any) -> int:
    """A token count from a reply's usage: a non-negative whole number up to
    :data:`MAX_TOKEN_COUNT` (an int, or a float with no fraction), else 0 — a malformed usage
    block never fails a call.  ``None`` (absent) is 0; anything else that is not a count (a
    string, a bool, a fraction, a negative number, ``1e300``, Infinity, NaN) is 0 too and, while
    :func:`collect_bad_counts` collects, noted there: the reply's usage is then *unknown*."""
    if value is None:
        return 0
    if is_token_count(value):
        return int(value)
    bad = _bad_counts.get()
    if bad is not None:
        bad.append(value)
    return 0


#: While a provider's reply is read (:func:`collect_bad_counts`): ``[True]`` once its usage
#: gave neither an input nor an output count (:func:`note_unreported`); None elsewhere.
_unreported: ContextVar[list[bool] | None] = ContextVar("agentflow_unreported", default=None)


def note_unreported(*counts: Any) -> None:
    """Called by a reply's usage reader with the values its usage block gave for the input and
    output token counts (each under any of its names): when every one is absent (no usage
    block, or one without those counts — an OpenAI-compatible stream without ``include_usage``)
    the reply's usage was *not reported*: noted while :func:`collect_bad_counts` collects (the
    router marks the reply's usage unknown and says so; docs/models.md "Usage")."""
    if all(value is None for value in counts):
        noted = _unreported.get()
        if noted is not None and not noted:
            noted.append(True)


def unreported_now() -> bool:
    """True when the reply being read (inside :func:`collect_bad_counts`) reported no usage."""
    return bool(_unreported.get())


class collect_bad_counts:  # noqa: N801 - used as a context manager, like contextlib's
    """``with collect_bad_counts() as bad:`` — around reading one reply: ``bad`` lists the
    values :func:`token_count` met that were not token counts (the router marks that reply's
    usage unknown and warns); :attr:`unreported`: the reply gave no usage at all
    (:func:`note_unreported`)."""

    def __init__(self) -> None:
        self.bad: list[Any] = []
        self._noted: list[bool] = []
        self._token: Any = None
        self._unreported_token: Any = None

    @property
    def unreported(self) -> bool:
        """The reply read inside reported no input and no output token count."""
        return bool(self._noted)

    def __enter__(self) -> list[Any]:
        self._token = _bad_counts.set(self.bad)
        self._unreported_token = _unreported.set(self._noted)
        return self.bad

    def __exit__(self, *exc: object) -> None:
        _unreported.reset(self._unreported_token)
        _bad_counts.reset(self._token)


def describe_bad_counts(values: list[Any]) -> str:
    """The values of :func:`collect_bad_counts` as message text (each shortened)."""
    shown = []
    for value in values[:3]:
        text = repr(value)
        shown.append(text if len(text) <= 24 else text[:21] + "...")
    return ", ".join(shown) + (f" and {len(values) - 3} more" if len(values) > 3 else "")


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


#: a JSON ``\uXXXX`` escape of a surrogate (in tool-call arguments kept as JSON text)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _clean_call(call: ToolCall) -> ToolCall:
    """``call`` with lone surrogates in its name and arguments replaced (``clean_json``); JSON
    text arguments are re-encoded only when they escape a lone surrogate."""
    arguments = call.arguments
    if isinstance(arguments, str):
        arguments = clean_text(arguments)
        if _SURROGATE_ESCAPE.search(arguments):
            try:
                decoded = json.loads(arguments)
            except (ValueError, RecursionError):
                decoded = None
            else:
                cleaned = clean_json(decoded)
                if cleaned is not decoded:
                    arguments = json.dumps(cleaned, ensure_ascii=False)
    else:
        arguments = clean_json(arguments)
    name = clean_text(call.name)
    if arguments is call.arguments and name is call.name:
        return call
    return ToolCall(id=clean_text(call.id), name=name, arguments=arguments)


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


#: The system prompt of a judge-role call (``where judge``, ``verify { judge … }``): the reply
#: must be one word, yes or no. The test model recognises judge calls by it.
JUDGE_SYSTEM_PROMPT = "You are a strict judge. Answer with exactly one word: yes or no."


@dataclass
class ChatRequest:
    """One inference request.

    ``response_schema``: the output contract of the answer, or None. It is sent ONCE: through
    the provider's native structured output when the model option enables it, else as compact
    text appended to the system prompt (:func:`with_contract`); the caller never puts it in the
    messages itself. ``max_tokens``: output token cap (None: provider default).
    ``on_delta``: for streaming models, called with each piece of answer text as it arrives, and
    with None when a retried request starts over (not part of the request's identity: cassettes
    and the memo ignore it). ``temperature`` / ``stop``: sampling preferences of this request
    (an MCP server's sampling request), over the model's configured ``temperature``; None: the
    model's own.
    """

    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    response_schema: dict[str, Any] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    stop: list[str] | None = None
    on_delta: Callable[[str | None], Any] | None = field(default=None, compare=False, repr=False)


@dataclass
class ChatResponse:
    """One inference result.

    ``finish_reason``: "stop" | "tool_calls" | "length" | "content_filter" | a provider's other
    value. ``usage``: ``{"input_tokens": int, "output_tokens": int}`` plus, when the provider
    reported them, ``cache_read_tokens`` / ``cache_write_tokens`` (prompt tokens read from / written
    to the provider's prompt cache; ``input_tokens`` is always the WHOLE prompt, cached part
    included) and ``reasoning_tokens`` (part of ``output_tokens``). ``model``: the model that
    answered (label used in events). ``raw``: provider state to round-trip (see Message.raw).
    ``chunks``: the answer text as it was streamed, piece by piece (None: not streamed); cassettes
    keep it so a replay streams the same pieces. ``cost``: the call's price in US dollars when
    known (set by the router from the price table; None: unknown).
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
    chunks: list[str] | None = None
    cost: float | None = None
    #: the configured provider that answered (its ``[providers]`` name, e.g. ``openai``,
    #: ``local``, ``replay``) and that provider's wire API (``openai`` | ``anthropic``); set by
    #: the router, None for a client used without one
    provider: str | None = None
    api: str | None = None
    #: the provider's id of this reply (OpenAI ``chatcmpl-…``, Anthropic ``msg_…``), when given
    response_id: str | None = None
    #: the base URL of the provider that answered (set by the router; None without one)
    base_url: str | None = None
    #: the provider's usage block gave a token count that is not a count (a string, a
    #: negative or fractional number, Infinity, NaN, more than a billion): taken as 0, and
    #: this reply's usage is unknown (set by the router, which warns)
    usage_unknown: bool = False
    #: the reply gave no token counts at all (no usage block): its usage is unknown too
    #: (``usage_unknown``) and said "not reported" (set by the router, which warns)
    usage_reported: bool = True

    def __post_init__(self) -> None:
        # text from outside is made whole where it enters a run (agentflow.core.text): a lone
        # surrogate (JSON "\udcd9", half a pair per stream piece) would break every output
        if self.text is not None:
            self.text = clean_text(self.text)
        if self.refusal is not None:
            self.refusal = clean_text(self.refusal)
        if self.chunks is not None:
            self.chunks = [clean_text(c) for c in self.chunks]
        self.raw = clean_json(self.raw)
        self.tool_calls = [_clean_call(c) for c in self.tool_calls]

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


# ---------------------------------------------------------------------------------------------
# The output contract as prompt text, and tool names the providers accept

#: Keys of a contract that only agentflow reads (JSON Schema dialect, our type annotations):
#: left out of what a model is shown.
_UNSHOWN = ("$schema", "$id", "title")


def compact_schema(schema: Any) -> Any:
    """``schema`` without what the model does not need: ``$schema``, ``$id``, ``title`` and our
    ``x-*`` annotations (``x-flow-type``) are dropped at every level (property NAMES are kept,
    whatever they are called)."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _UNSHOWN or key.startswith("x-"):
            continue
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(
            value, dict
        ):
            out[key] = {name: compact_schema(sub) for name, sub in value.items()}
        else:
            out[key] = compact_schema(value)
    return out


def contract_text(schema: dict[str, Any]) -> str:
    """The output contract as the short prompt text sent when the provider does not enforce it
    natively: one sentence saying to answer with it, then the schema as one line of compact JSON
    (no indentation, no annotations), deterministic (so the prompt prefix is byte-identical
    across rounds and map items)."""
    compact = json.dumps(compact_schema(schema), ensure_ascii=False, separators=(",", ":"))
    return f"Reply with only a JSON object that conforms to this JSON Schema: {compact}"


def with_contract(messages: list[Message], schema: dict[str, Any] | None) -> list[Message]:
    """``messages`` with :func:`contract_text` appended to the first system message (a system
    message is put first when there is none); ``messages`` itself when ``schema`` is None."""
    if schema is None:
        return messages
    text = contract_text(schema)
    out = list(messages)
    for index, message in enumerate(out):
        if message.role == "system":
            joined = f"{message.content}\n\n{text}" if message.content else text
            out[index] = Message(role="system", content=joined)
            return out
    return [Message(role="system", content=text), *out]


#: What OpenAI and Anthropic accept as a tool name.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def wire_tool_name(name: str) -> str:
    """``name`` as a provider accepts it: unchanged when it is 1–64 letters, digits, ``_`` or
    ``-``; else its other characters become ``_`` and a long one is cut to 55 characters plus
    ``_`` and 8 hex digits of its SHA-1 (deterministic, so requests stay byte-identical and
    distinct names stay distinct)."""
    if _TOOL_NAME.match(name):
        return name
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", name) or "tool"
    if len(clean) <= 64 and clean == name:  # pragma: no cover - matched above
        return clean
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    return f"{clean[:55]}_{digest}"


def tool_name_map(tools: list[ToolSpec]) -> dict[str, str]:
    """``{wire name: tool name}`` for the tools whose name :func:`wire_tool_name` changes (the
    adapters map a reply's tool calls back with it)."""
    return {wire_tool_name(t.name): t.name for t in tools if wire_tool_name(t.name) != t.name}


#: Usage counters always present in a usage record; the cache counters and ``cost`` appear once
#: a call reported / was priced with them.
_ALWAYS = ("inferences", "input_tokens", "output_tokens")
_EXTRA_TOKENS = ("cache_read_tokens", "cache_write_tokens")


def add_usage(
    target: dict[str, Any], usage: dict[str, Any], cost: float | None, *, unknown: bool = False
) -> None:
    """Add one call to a usage record (``inferences`` +1, its tokens, its cost when known; the
    cache counters and ``cost`` are created on first use; ``unknown``: the reply's token
    counts were not counts, ``usage_unknown`` +1, created on first use)."""
    target["inferences"] = target.get("inferences", 0) + 1
    if unknown:
        target["usage_unknown"] = target.get("usage_unknown", 0) + 1
    for key in ("input_tokens", "output_tokens", *_EXTRA_TOKENS):
        value = token_count(usage.get(key))
        if value or key in _ALWAYS:
            target[key] = target.get(key, 0) + value
    if cost is not None:
        target["cost"] = round(target.get("cost", 0.0) + cost, 10)
