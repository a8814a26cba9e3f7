"""The built-in test model: answers every request from its output contract, with no network.

``flowc run FILE --model test`` (or a provider ``kind = "test"`` in flow.toml) answers every agent
with a JSON value generated from the request's ``response_schema`` (the contract compiled from the
agent's ``expect`` type), deterministically from a seed and the request: the same request and
seed give the same answer, run after run. With ``call_tools``, the first request of an agent's
conversation first calls each offered tool once, with arguments generated from the tool's input
schema; the answer follows once the tool results are in. A request without a contract is answered
with a short text. Usage is counted as zero tokens: nothing was inferred (docs/models.md
"The test model").

What it generates: ``const``, the first or a seeded member of ``enum``, a branch of
``anyOf``/``oneOf``, objects with every required property (optional ones on a coin toss), arrays
within ``minItems``/``maxItems``, integers and numbers within their bounds, strings within their
length bounds that match ``pattern`` (generated from the regular expression itself) and common
``format``s (date, date-time, email, uri, uuid). Local ``$ref``s are followed; recursion stops at
a depth limit by taking the shortest branch.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from re import _parser  # the stdlib regular-expression parser (Python ≥ 3.11)
from typing import Any

from agentflow.errors import ModelError
from agentflow.runtime.models.base import JUDGE_SYSTEM_PROMPT, ChatRequest, ChatResponse, ToolCall

__all__ = ["TestModel", "generate_value"]

#: nesting depth after which arrays are kept at their minimum length and optional properties left out
_MAX_DEPTH = 6
_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")
_FORMATS = {
    "date": "2026-01-02",
    "date-time": "2026-01-02T03:04:05Z",
    "time": "03:04:05Z",
    "email": "test@example.com",
    "uri": "https://example.com/test",
    "url": "https://example.com/test",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
}


class GenerationError(ValueError):
    """The schema asks for something the generator cannot produce (e.g. ``{"not": {}}``)."""


def generate_value(schema: Any, rng: random.Random, root: Any = None, depth: int = 0) -> Any:
    """A JSON value valid against ``schema`` (a JSON Schema as compiled by agentflow), drawn with
    ``rng``; ``root`` is the document local ``$ref``s resolve against (default: ``schema``).

    Raises :class:`GenerationError` for a schema that admits no value it can produce.
    """
    root = schema if root is None else root
    if schema is True or schema == {}:
        return rng.choice(_WORDS)
    if not isinstance(schema, dict):
        raise GenerationError(f"cannot generate a value for the schema {schema!r}")
    if "$ref" in schema:
        return generate_value(_resolve(schema["$ref"], root), rng, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(list(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            branches = list(schema[key])
            if depth >= _MAX_DEPTH:  # stop recursion: a branch that needs no further nesting
                branches.sort(key=lambda b: 0 if _is_leaf(b) else 1)
                return generate_value(branches[0], rng, root, depth + 1)
            return generate_value(rng.choice(branches), rng, root, depth + 1)
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part["$ref"], root) if "$ref" in part else part)
        return generate_value(merged, rng, root, depth)
    if "not" in schema and len(schema) == 1:
        raise GenerationError("the contract admits no value ({'not': {}})")
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if depth >= _MAX_DEPTH else rng.choice(kind)
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "null":
        return None
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "integer":
        return _integer(schema, rng)
    if kind == "number":
        return _number(schema, rng)
    if kind == "string":
        return _string(schema, rng)
    if kind == "array":
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", low + 3))
        count = low if depth >= _MAX_DEPTH else rng.randint(low, max(low, min(high, low + 3)))
        items = schema.get("items", {})
        return [generate_value(items, rng, root, depth + 1) for _ in range(count)]
    if kind == "object":
        out: dict[str, Any] = {}
        required = set(schema.get("required", ()))
        for name, sub in (schema.get("properties") or {}).items():
            if name in required or (depth < _MAX_DEPTH and rng.random() < 0.5):
                out[name] = generate_value(sub, rng, root, depth + 1)
        return out
    raise GenerationError(f"cannot generate a value of type {kind!r}")


def _is_leaf(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") in (
        "null",
        "string",
        "integer",
        "number",
        "boolean",
    )


def _resolve(ref: str, root: Any) -> Any:
    if not ref.startswith("#"):
        raise GenerationError(f"cannot follow the non-local reference {ref!r}")
    node = root
    for part in ref.lstrip("#").split("/"):
        if part:
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _integer(schema: dict[str, Any], rng: random.Random) -> int:
    low = schema.get(
        "minimum", schema.get("exclusiveMinimum", -1) + 1 if "exclusiveMinimum" in schema else 0
    )
    high = schema.get(
        "maximum",
        schema.get("exclusiveMaximum", 0) - 1 if "exclusiveMaximum" in schema else low + 100,
    )
    low, high = int(low), int(high)
    return rng.randint(low, max(low, high))


def _number(schema: dict[str, Any], rng: random.Random) -> float:
    low = float(schema.get("minimum", schema.get("exclusiveMinimum", 0.0)))
    high = float(schema.get("maximum", schema.get("exclusiveMaximum", low + 100.0)))
    value = round(rng.uniform(low, high), 2)
    if (
        "exclusiveMinimum" in schema
        and value <= low
        or "exclusiveMaximum" in schema
        and value >= high
    ):
        value = (low + high) / 2
    return value


def _string(schema: dict[str, Any], rng: random.Random) -> str:
    low = int(schema.get("minLength", 0))
    high = int(schema.get("maxLength", max(low, 24)))
    fmt = schema.get("format")
    if "pattern" in schema:
        pattern = schema["pattern"]
        compiled = re.compile(pattern)
        for _ in range(20):
            text = _from_regex(pattern, rng)
            if compiled.search(text) and low <= len(text) <= high:
                return text
        raise GenerationError(f"cannot generate a string matching the pattern {pattern!r}")
    if isinstance(fmt, str) and fmt in _FORMATS and low <= len(_FORMATS[fmt]) <= high:
        return _FORMATS[fmt]
    text = rng.choice(_WORDS)
    while len(text) < low:
        text += " " + rng.choice(_WORDS)
    return text[:high] if len(text) > high else text


def _from_regex(pattern: str, rng: random.Random) -> str:
    """A string matching ``pattern``, drawn by walking its parsed form (Python's own regex parser)."""

    return _emit(_parser.parse(pattern), rng, _parser)


def _emit(parsed: Any, rng: random.Random, sre: Any) -> str:
    c = sre  # the constants live on the parser module (imported from re._constants)
    out: list[str] = []
    for op, arg in parsed:
        if op is c.LITERAL:
            out.append(chr(arg))
        elif op is c.NOT_LITERAL:
            out.append("x" if chr(arg) != "x" else "y")
        elif op is c.ANY:
            out.append("a")
        elif op is c.IN:
            out.append(_from_set(arg, rng, c))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            low, high, sub = arg
            high = low + 3 if high is c.MAXREPEAT else high
            out.extend(_emit(sub, rng, c) for _ in range(rng.randint(low, min(high, low + 3))))
        elif op is c.SUBPATTERN:
            out.append(_emit(arg[-1], rng, c))
        elif op is c.BRANCH:
            out.append(_emit(rng.choice(arg[1]), rng, c))
        elif op is c.CATEGORY:
            out.append(_from_category(arg))
        elif op in (c.AT, c.ASSERT, c.ASSERT_NOT, c.GROUPREF):
            continue
        else:
            raise GenerationError(f"unsupported regular expression construct {op}")
    return "".join(out)


def _from_set(items: list[Any], rng: random.Random, c: Any) -> str:
    if items and items[0][0] is c.NEGATE:
        return "x"
    choices: list[str] = []
    for op, arg in items:
        if op is c.LITERAL:
            choices.append(chr(arg))
        elif op is c.RANGE:
            choices.append(chr(rng.randint(arg[0], arg[1])))
        elif op is c.CATEGORY:
            choices.append(_from_category(arg))
    return rng.choice(choices) if choices else "x"


def _from_category(category: Any) -> str:
    name = str(category)
    if "NOT" in name:
        return "-"
    if "DIGIT" in name:
        return "7"
    if "SPACE" in name:
        return " "
    return "w"


class TestModel:
    """A :class:`~agentflow.runtime.models.base.ModelClient` that answers from the contract.

    ``seed``: mixed with each request's identity so answers are deterministic per request.
    ``call_tools``: call each offered tool once before answering. ``label``: the model label
    reported in events (``test``).
    """

    __test__ = False  # not a pytest test class

    def __init__(self, seed: int = 0, *, call_tools: bool = False, label: str = "test"):
        self.seed = seed
        self.call_tools = call_tools
        self.label = label

    def _rng(self, request: ChatRequest) -> random.Random:
        first = next((m.content or "" for m in request.messages if m.role == "user"), "")
        identity = json.dumps(
            [self.seed, first, request.response_schema], sort_keys=True, default=str
        )
        return random.Random(
            int.from_bytes(
                hashlib.sha256(identity.encode("utf-8", "surrogatepass")).digest()[:8], "big"
            )
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Answer ``request``: tool calls first (``call_tools``, once per conversation), then a
        JSON value generated from ``response_schema`` (text when there is none; ``yes`` or ``no``,
        from the seed, to a judge). Raises
        :class:`agentflow.errors.ModelError` (code ``model_error``) when the contract admits no
        value the generator can produce."""

        rng = self._rng(request)
        usage = {"input_tokens": 0, "output_tokens": 0}
        called = any(m.role == "tool" for m in request.messages)
        if self.call_tools and request.tools and not called:
            calls = []
            for index, tool in enumerate(request.tools):
                try:
                    arguments = generate_value(tool.input_schema or {"type": "object"}, rng)
                except GenerationError:
                    continue
                calls.append(
                    ToolCall(id=f"test_{index}", name=tool.name, arguments=json.dumps(arguments))
                )
            if calls:
                return ChatResponse(
                    text=None,
                    tool_calls=calls,
                    finish_reason="tool_calls",
                    usage=usage,
                    model=self.label,
                )
        if request.response_schema is None:
            judged = any(
                m.role == "system" and m.content == JUDGE_SYSTEM_PROMPT for m in request.messages
            )
            if judged:  # a judge: yes or no, from the seed (exploration sees both verdicts)
                return ChatResponse(text=rng.choice(("yes", "no")), usage=usage, model=self.label)
            return ChatResponse(text="test answer", usage=usage, model=self.label)
        try:
            value = generate_value(request.response_schema, rng)
        except GenerationError as e:
            raise ModelError(f"the test model cannot answer this contract: {e}") from None
        return ChatResponse(
            text=json.dumps(value, ensure_ascii=False), usage=usage, model=self.label
        )

    async def aclose(self) -> None:
        """Nothing to close (the test model holds no connection)."""


def parse_model_option(value: str, option: str = "--model") -> tuple[int, bool]:
    """``--model`` values naming the test model: ``test``, ``test:SEED``, ``test+tools``,
    ``test+tools:SEED`` → (seed, call_tools). Raises ValueError for anything else: a test
    model whose SEED is no integer (``test:abc``) says so; another value says how a real model
    is configured (:func:`_real_model_hint`).  ``option``: the option as its caller spells it,
    named in the message — ``--model`` (``--model 'gpt'``, the CLI's) or a Python keyword
    (``model``: ``model="gpt"``, the API's)."""
    match = re.fullmatch(r"test(\+tools)?(?::(-?[0-9]+))?", value.strip())
    if match is not None:
        return int(match.group(2) or 0), bool(match.group(1))
    given = model_option_text(option, value)
    seeded = re.fullmatch(r"(test(?:\+tools)?):(.*)", value.strip(), re.DOTALL)
    if seeded is not None:
        name, seed = seeded.groups()
        raise ValueError(
            f"{given}: the test model's SEED must be an integer ({name}:SEED, e.g. {name}:7), "
            f"got {seed.strip()!r}"
        )
    raise ValueError(
        f"{given}: the only model that can be named here is the built-in test model "
        "('test', 'test:SEED', 'test+tools' or 'test+tools:SEED'); " + _real_model_hint(value)
    )


def model_option_text(option: str, value: str) -> str:
    """``option`` given ``value`` as its caller wrote it: ``--model 'gpt'`` for a command-line
    option (``--…``), ``model="gpt"`` for a Python keyword."""
    if option.startswith("-"):
        return f"{option} {value!r}"
    return f"{option}={json.dumps(value, ensure_ascii=False)}"


#: A bare model name of a family the implicit ``openai`` / ``anthropic`` providers serve.
_FAMILIES = re.compile(
    r"(gpt|chatgpt|claude)[-.][A-Za-z0-9._-]+|(o[1-9])(?:-[A-Za-z0-9._-]+)?", re.IGNORECASE
)


def _real_model_hint(value: str) -> str:
    """How to run with a real model instead (docs/decisions.md "--model names only the test
    model"): a ``provider:model`` reference in flow.toml, or the environment with no flow.toml.
    The reference is the one typed (``openai:gpt-4o``); a bare model name of a family the
    implicit providers serve (``gpt-4o``, ``claude-x``) under its provider; else
    ``openai:gpt-4o-mini``."""
    provider, colon, name = value.strip().partition(":")
    if colon and provider and name and provider.isidentifier():
        ref = f"{provider}:{name}"
    elif not colon and (family := _FAMILIES.match(value.strip())) is not None:
        provider = "anthropic" if (family.group(1) or "").lower() == "claude" else "openai"
        ref = f"{provider}:{value.strip()}"
    else:
        ref = "openai:gpt-4o-mini"
    provider, model = ref.split(":", 1)
    key = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}.get(provider)
    where = f" (its key from {key})" if key else f" (and a [providers.{provider}] table)"
    if key is None:
        provider, model, key = "openai", "gpt-4o-mini", "OPENAI_API_KEY"
    env = f"{key} and {provider.upper()}_MODEL={model}"
    return (
        f'a real model is configured: [models] default = "{ref}" in flow.toml{where}, or, '
        f"with no [models] default, {env} in the environment (docs/reference/configuration.md "
        '"[models]: roles")'
    )
