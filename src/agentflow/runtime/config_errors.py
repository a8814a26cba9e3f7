"""The errors of a `flow.toml` in its own terms (docs/reference/configuration.md): where a key
is (:func:`key_location`, ``file:line:col``) and what pydantic's validation errors of the
configuration's model mean (:func:`format_validation`: unknown keys with their did-you-mean,
missing keys, wrong values), one line per problem, each naming the key at its place.
Used by :func:`agentflow.runtime.config.load_config`; the model itself is passed in (``root``),
so this module knows nothing of :mod:`agentflow.runtime.config`.
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from agentflow.core.diagnostics import did_you_mean, suggested
from agentflow.errors import ConfigError

__all__ = ["describe", "format_validation", "key_location", "strip_file"]


def strip_file(exc: ConfigError, file: str) -> str:
    """The message of ``exc`` without its leading ``file: `` (to put it after another place)."""
    msg = str(exc)
    prefix = f"{file}: "
    return msg[len(prefix) :] if msg.startswith(prefix) else msg


def format_validation(
    exc: ValidationError, file: Path | None, text: str, root: type[BaseModel]
) -> str:
    """The problems of ``exc`` (validating the parsed ``file``, whose text is ``text``, into the
    model ``root``), one line each: ``file:line:col: message`` in the file's terms — an unknown
    key with its did-you-mean (else the keys its table takes), a missing key, and a wrong value
    as ``[table] key: expected WHAT, e.g. `key = VALUE`; got the TYPE VALUE`` (a value of a fixed
    set spelt nearly so: ``; did you mean 'openai'?``). None of pydantic's wording reaches the
    message (docs/reference/configuration.md "Errors")."""
    grouped: dict[tuple[str | int, ...], list[ErrorDetails]] = {}
    for err in exc.errors():
        # drop pydantic's union-member tags ("str", "list[str]") so one key gives one message
        raw = tuple(p for p in err["loc"] if not _UNION_TAG.fullmatch(str(p)))
        grouped.setdefault(raw, []).append(err)
    # a union's member that does not fit (`default = ["a", 1]`: not a string) says less than the
    # member that does, about its item: the deeper error alone is reported
    for raw in [r for r in grouped if any(o[: len(r)] == r and len(o) > len(r) for o in grouped)]:
        if all(e["type"] not in _OWN_MESSAGES for e in grouped[raw]):
            del grouped[raw]
    lines = []
    for raw, errs in grouped.items():
        loc = tuple(str(p) for p in raw)
        where = key_location(file, text, loc)
        dotted = ".".join(loc) or "(top level)"
        first = errs[0]
        if first["type"] == "extra_forbidden":
            message = f"unknown key '{dotted}'"
            keys = _keys_at(root, loc[:-1]) if loc else []
            hint = did_you_mean(loc[-1], keys) if loc else None
            if hint is not None:
                message += f"; did you mean '{suggested(hint)}'?"
            elif keys:  # no close match: the keys the table takes
                table = f"[{'.'.join(loc[:-1])}]" if loc[:-1] else "the top level"
                message += f"; {table} takes: {', '.join(sorted(keys))}"
        elif first["type"] == "missing":
            # said at the table it belongs in (the key itself is not in the file)
            parent = loc[:-1]
            where = _table_location(file, text, parent)
            table = f"[{'.'.join(_bare(n) for n in parent)}] " if parent else ""
            message = f"{table}{loc[-1] if loc else dotted}: required, but missing"
        elif all(e["type"] in _OWN_MESSAGES for e in errs):  # a validator's own words
            key = f"{loc[-1]} " if loc else ""
            message = f"{_written(text, raw)}: " + " or ".join(
                dict.fromkeys(
                    e["msg"].removeprefix("Value error, ").removeprefix(key) for e in errs
                )
            )
        else:
            message = _wrong_value(root, text, raw, first["input"])
            if any(e["type"] == "finite_number" for e in errs):
                message = message.replace("expected a number", "expected a finite number", 1)
        lines.append(f"{where}: {message}")
    return "\n".join(lines)


#: error types whose message is agentflow's own (a validator's ValueError), kept as they are
_OWN_MESSAGES = frozenset({"value_error", "assertion_error"})


def _wrong_value(root: type[BaseModel], text: str, raw: tuple[str | int, ...], given: Any) -> str:
    """``[table] key: expected WHAT, e.g. `key = VALUE`; got GIVEN`` for a value of the wrong
    type or out of its range at ``raw`` (a did-you-mean when it is a string close to one of a
    fixed set of values)."""
    owner, field, name, expected = _field_at(root, raw)
    own = bool(raw) and isinstance(raw[-1], str) and raw[-1] == name  # the field, not an item
    table = _is_table(expected)  # `[chat]`, not the role `chat`
    meaning = f"{owner}.{name}" if f"{owner}.{name}" in _MEANINGS else name
    what = describe(
        expected, meaning if own and not table else "", field.metadata if own and field else []
    )
    if not own and raw and isinstance(raw[-1], int) and name in _ITEM_MEANINGS:
        what = _ITEM_MEANINGS[name]  # an item of a failover list is a model reference
    choices = _choices(expected)
    meant = None
    if choices and isinstance(given, str):
        hint = did_you_mean(given, choices)
        meant = suggested(hint) if hint else None
        if hint is None:
            hint = did_you_mean(given.lower(), choices)
            meant = suggested(hint) if hint else None
    compatible = _compatible(given) if name == "kind" and own and meant is None else None
    if name in _NOUNS and own:  # "a provider kind": the suggestion, else the list, says which
        said = meant is not None or compatible is not None
        what = _NOUNS[name] if said else f"{_NOUNS[name]} ({what})"
    key = next((str(p) for p in reversed(raw) if isinstance(p, str)), "")
    example = _example(expected, f"{owner}.{key}", field) if own and not table else None
    if example is not None and not choices:
        what += f", e.g. `{key} = {example}`"
    elif table:
        names = ".".join(_bare(str(p)) for p in raw)
        if not _is_model(_without_none(expected)):
            names += ".NAME"
        what += f", e.g. `[{names}]` with its keys on the lines below it"
    secret = any(isinstance(p, str) and _SECRET.search(p) for p in raw)
    message = f"{_written(text, raw)}: expected {what}; got {_given(given, show=not secret)}"
    if meant is not None:
        message += f"; did you mean '{meant}'?"
    elif compatible is not None:
        message += f"; {compatible}"
    return message


#: servers a `kind` may name that speak OpenAI's chat-completions API (lower case, without
#: spaces, dots and dashes), with the base_url of a local one's default port
_OPENAI_COMPATIBLE: dict[str, str] = {
    "ollama": "http://127.0.0.1:11434/v1",
    "lmstudio": "http://127.0.0.1:1234/v1",
    "vllm": "http://127.0.0.1:8000/v1",
    "llamacpp": "http://127.0.0.1:8080/v1",
    "localai": "http://127.0.0.1:8080/v1",
    "litellm": "http://127.0.0.1:4000/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "groq": "https://api.groq.com/openai/v1",
    "together": "https://api.together.xyz/v1",
    "deepseek": "https://api.deepseek.com/v1",
    "mistral": "https://api.mistral.ai/v1",
    "fireworks": "https://api.fireworks.ai/inference/v1",
    "xai": "https://api.x.ai/v1",
}


def _compatible(given: Any) -> str | None:
    """What to write instead of a ``kind`` that names a server speaking OpenAI's API
    (``"ollama"``): ``kind = "openai"`` with that server's ``base_url``; None for any other
    value."""
    if not isinstance(given, str):
        return None
    url = _OPENAI_COMPATIBLE.get(re.sub(r"[\s._-]", "", given.lower()))
    if url is None:
        return None
    return (
        f'{given} serves OpenAI\'s chat-completions API: write kind = "openai" with '
        f'base_url = "{url}"'
    )


#: keys whose values a message never shows (credentials may be written there)
_SECRET = re.compile(r"(?i)^(headers|env|client_secret|idp_client_secret|private_key|id_token)$")

#: what a key's value is, by key (where the type alone says too little)
_MEANINGS: dict[str, str] = {
    "timeout": "a number of seconds",
    "connect_timeout": "a number of seconds",
    "backoff_base": "a number of seconds",
    "backoff_max": "a number of seconds",
    "max_retry_after": "a number of seconds",
    "cost": "a number of US dollars",
    "input": "a number of US dollars per million tokens",
    "output": "a number of US dollars per million tokens",
    "cache_read": "a number of US dollars per million tokens",
    "cache_write": "a number of US dollars per million tokens",
    "rate_limit": "a number of requests per second",
    "temperature": "a number",
    "ask_timeout": 'a duration such as "30m" or "24h"',
    "base_url": "an http(s) URL",
    "endpoint": "an http(s) URL",
    "url": "an http(s) URL",
    "region": 'an AWS region such as "us-east-1"',
    "api_version": 'an API version such as "2024-10-21"',
    "api_key_env": "the name of an environment variable",
    "entra_token_env": "the name of an environment variable",
    "headers": "a table of strings",
    "env": "a table of strings",
    "sampling": "a role or named model, or false to refuse",
    "default": 'a model reference (a role, a named model or "provider:model") or a list of them',
    "provider": "a provider name",
    "NamedModel.model": "the provider's name of the model",
    "entra_token_file": "a path (relative to flow.toml)",
    "cwd": "a path (relative to flow.toml)",
    "token_dir": "a path (relative to flow.toml)",
    "dir": "a path (relative to flow.toml)",
    "claim_check_dir": "a path (relative to flow.toml)",
    "AgentProfile.model": 'a model reference (a role, a named model or "provider:model")',
    "TeamMember.model": 'a model reference (a role, a named model or "provider:model")',
}
for _role in ("chat", "planner", "solver", "repair", "judge"):
    _MEANINGS[_role] = _MEANINGS["default"]

#: what an item of an array is, by the array's key (where "a string" says too little)
_ITEM_MEANINGS: dict[str, str] = {
    role: 'a model reference (a role, a named model or "provider:model")'
    for role in ("default", "chat", "planner", "solver", "repair", "judge")
}

#: what one of a fixed set of values is, by key, when a did-you-mean names the one meant
_NOUNS = {"kind": "a provider kind"}

#: an example value of a key whose default is none (TOML text)
_EXAMPLES: dict[str, str] = {
    "max_tokens": "2000",
    "max_completion_tokens": "2000",
    "temperature": "0.2",
    "thinking_budget": "2048",
    "rate_limit": "5",
    "concurrency": "2",
    "inferences": "100",
    "tokens": "100000",
    "cost": "1.5",
    "input": "0.15",
    "output": "0.6",
    "cache_read": "0.075",
    "cache_write": "0.3",
    "worker_concurrency": "8",
    "parallel_tool_calls": "true",
    "base_url": '"http://127.0.0.1:11434/v1"',
    "endpoint": '"http://127.0.0.1:4318"',
    "url": '"https://mcp.example.com/mcp"',
    "api_key_env": '"OPENAI_API_KEY"',
    "entra_token_env": '"AZURE_OPENAI_TOKEN"',
    "region": '"us-east-1"',
    "api_version": '"2024-10-21"',
    "ask_timeout": '"24h"',
    "modules": '["tools.py"]',
    "allowed_tools": '["builtin__*"]',
    "python": '["clients/flow.py"]',
    "args": '["-y", "some-mcp-server"]',
    "headers": '{ X-Title = "my-app" }',
    "env": '{ API_KEY = "${API_KEY}" }',
    "command": '"npx"',
    "default": '"openai:gpt-4o-mini"',
    "provider": '"openai"',
    "model": '"gpt-4o-mini"',
    "main": '"lead"',
    "dir": '"plans"',
    "sampling": '"chat"',
    "AgentProfile.model": '"fast"',
    "TeamMember.model": '"fast"',
}
for _role in ("chat", "planner", "solver", "repair", "judge"):
    _EXAMPLES[_role] = _EXAMPLES["default"]


def describe(expected: Any, key: str = "", metadata: list[Any] | None = None) -> str:
    """What a value of type ``expected`` (a field's annotation, or an item's) is, in TOML's
    terms — ``"a number of seconds greater than 0"``, ``'"thread" or "process"'``, ``"a
    table"`` —; ``key`` (the field's name) gives its meaning where the type says too little,
    ``metadata`` (the field's constraints) its range."""
    tp = _without_none(expected)
    bounds = _bounds(metadata or [])
    if key in _MEANINGS:
        return _MEANINGS[key] + bounds
    choices = _choices(tp)
    if choices:
        shown = [f'"{c}"' for c in choices]
        return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
    if tp is bool:
        return "true or false"
    if tp is int:
        return "an integer" + bounds
    if tp is float:
        return "a number" + bounds
    if tp is str:
        return "a string"
    if tp is Path:
        return "a path"
    origin = get_origin(tp)
    if origin is list:
        return f"an array of {_plural(get_args(tp)[0])}"
    if origin is dict:
        return f"a table of {_plural(get_args(tp)[1])}"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "a table"
    members = [describe(a) for a in get_args(tp)]
    return " or ".join(dict.fromkeys(members)) if members else "another value"


def _plural(tp: Any) -> str:
    """``strings``, ``tables``… for the items of an array or table of ``tp``."""
    word = describe(tp)
    if word.startswith("a table"):
        return "tables"
    for article in ("an ", "a "):
        if word.startswith(article):
            return word[len(article) :] + "s"
    return "values"


def _bounds(metadata: list[Any]) -> str:
    """`` from 0 to 20``, `` (more than 0)``, `` (1 or more)`` … of a field's constraints."""
    ge = next((m.ge for m in metadata if getattr(m, "ge", None) is not None), None)
    gt = next((m.gt for m in metadata if getattr(m, "gt", None) is not None), None)
    le = next((m.le for m in metadata if getattr(m, "le", None) is not None), None)
    if ge is not None and le is not None:
        return f" from {_number(ge)} to {_number(le)}"
    parts = [f"{_number(ge)} or more"] if ge is not None else []
    parts += [f"more than {_number(gt)}"] if gt is not None else []
    parts += [f"at most {_number(le)}"] if le is not None else []
    return f" ({', '.join(parts)})" if parts else ""


def _number(value: Any) -> str:
    """``1_000_000`` as ``1000000``, ``0.5`` as is, ``120.0`` as ``120``."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _choices(expected: Any) -> list[str]:
    """The strings of a ``Literal`` of strings (``X | None`` unwrapped), else empty."""
    tp = _without_none(expected)
    if get_origin(tp) is Literal:
        return [a for a in get_args(tp) if isinstance(a, str)]
    return []


def _without_none(tp: Any) -> Any:
    """``X`` of ``X | None``; ``tp`` itself otherwise."""
    if get_origin(tp) in (Union, UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _example(expected: Any, key: str, field: FieldInfo | None) -> str | None:
    """An example value of ``key`` (``Owner.field``: the class of its table, then its name) in
    TOML (its default when it has a plain one), or None."""
    for name in (key, key.partition(".")[2]):
        if name in _EXAMPLES:
            return _EXAMPLES[name]
    default = field.default if field is not None else None
    if isinstance(default, bool | int | float | str) and default is not None:
        return _toml(default)
    return "true" if _without_none(expected) is bool else None


def _given(value: Any, *, show: bool = True) -> str:
    """The value a key was given, in TOML's terms: ``the string "30s"``, ``the integer -1``, ``a
    table { a = 1 }`` (trimmed to a few dozen characters; only its type when ``show`` is false)."""
    if isinstance(value, bool):
        kind = "the boolean"
    elif isinstance(value, int):
        kind = "the integer"
    elif isinstance(value, float):
        kind = "the number"
    elif isinstance(value, str):
        kind = "the string"
    elif isinstance(value, list):
        kind = "the array"
    elif isinstance(value, dict):
        kind = "a table"
    elif isinstance(value, datetime.datetime):
        kind = "the date-time"
    elif isinstance(value, datetime.date):
        kind = "the date"
    elif isinstance(value, datetime.time):
        kind = "the time"
    else:
        kind = "the value"
    if not show:
        return (
            kind.replace("the ", "a ")
            .replace("a array", "an array")
            .replace("a integer", "an integer")
        )
    shown = _toml(value)
    if len(shown) > _SHOWN:
        shown = shown[: _SHOWN - 1] + "…"
    return f"{kind} {shown}"


#: the most characters of a value a message shows
_SHOWN = 40


def _toml(value: Any) -> str:
    """``value`` written as TOML writes it (``"30s"``, ``-1``, ``true``, ``[1, 2]``, ``{ a = 1 }``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _number(value) if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_bare(str(k))} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return str(value)


def _bare(key: str) -> str:
    """A TOML key as written: bare when it can be, else quoted."""
    return key if _BARE.fullmatch(key) else json.dumps(key, ensure_ascii=False)


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _written(text: str, raw: tuple[str | int, ...]) -> str:
    """The key at ``raw`` in the table form, whichever of TOML's spellings the file uses (a
    header, a dotted key, an inline table): ``[providers.x] timeout`` (its table, then the key)
    also for ``providers = { x = { timeout = … } }``, ``[mcp.s]`` for a table under its own
    header, ``models`` for a key of the top level, ``[tools] modules (item 2)`` for an item of
    an array (docs/decisions.md "A flow.toml key has one name")."""
    names = tuple(str(p) for p in raw if isinstance(p, str))
    items = "".join(f" (item {p + 1})" for p in raw if isinstance(p, int))
    line, _, table = _place(text, names)
    if table is None and line and names:  # a table under its own header
        return f"[{'.'.join(_bare(n) for n in names)}]{items}"
    if len(names) < 2:
        return f"{'.'.join(_bare(n) for n in names)}{items}"
    return f"[{'.'.join(_bare(n) for n in names[:-1])}] {_bare(names[-1])}{items}"


def _field_at(
    root: type[BaseModel], raw: tuple[str | int, ...]
) -> tuple[str, FieldInfo | None, str, Any]:
    """The field the key at ``raw`` belongs to — the name of the class of its table, its info,
    its name: the last field on the way — and the type expected at ``raw`` itself (an item's,
    under an array or a table of values)."""
    owner = ""
    field: FieldInfo | None = None
    name = ""
    kind: Any = root
    for part in raw:
        kind = _without_none(kind)
        if get_origin(kind) in (Union, UnionType):  # str | list[str]: the member ``part`` enters
            want = list if isinstance(part, int) else dict
            kind = next(
                (
                    a
                    for a in get_args(kind)
                    if get_origin(a) is want or (want is dict and _is_model(a))
                ),
                kind,
            )
        if _is_model(kind):
            field = kind.model_fields.get(str(part))
            if field is None:
                return "", None, "", Any
            owner, name, kind = kind.__name__, str(part), field.annotation
        elif get_origin(kind) is dict:
            kind = get_args(kind)[1]
        elif get_origin(kind) is list:
            kind = get_args(kind)[0]
        else:
            break
    return owner, field, name, kind


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _is_table(tp: Any) -> bool:
    """A table of keys, or a table of such tables (``[providers.NAME]``)."""
    tp = _without_none(tp)
    return _is_model(tp) or (get_origin(tp) is dict and _is_model(get_args(tp)[1]))


def _keys_at(root: type[BaseModel], loc: tuple[str, ...]) -> list[str]:
    """The keys the table at ``loc`` takes (``()``: the top level; a key of a ``[providers]``-like
    table of tables is skipped over), for "did you mean"; empty when ``loc`` is no table."""
    kind: Any = root
    for part in (*loc, None):
        kind = next(
            (
                k
                for k in (kind, *get_args(kind))
                if (isinstance(k, type) and issubclass(k, BaseModel)) or get_origin(k) is dict
            ),
            None,
        )
        if kind is None:
            return []
        if part is None:
            break
        if get_origin(kind) is dict:
            kind = get_args(kind)[1]
        else:
            field = kind.model_fields.get(part)
            if field is None:
                return []
            kind = field.annotation
    if get_origin(kind) is dict:
        return []
    return [f.alias or name for name, f in kind.model_fields.items() if name != "path"]


_UNION_TAG = re.compile(r"(str|int|float|bool|(literal|list|dict|union|function-\w+)\[.*\])")


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"'.]+)\s*=")


def _table_location(file: Any, text: str, table: tuple[str, ...]) -> str:
    """``file:line:col`` of the table ``table`` (its header, or the first header inside it:
    ``[teams.t.members.lead]`` for ``teams.t``; ``file:1:1`` for the top level or when the file
    has none of it), so a missing key is said where it belongs."""
    if not table:
        return f"{file}:1:1"
    found = key_location(file, text, table)
    if found != f"{file}":
        return found
    dotted = ".".join(table)
    for index, raw in enumerate(text.splitlines(), start=1):
        header = raw.strip()
        if header.startswith("[") and not header.startswith("[["):
            name = header.strip("[]").strip().replace('"', "").replace(" ", "")
            if name == dotted or name.startswith(dotted + "."):
                return f"{file}:{index}:{raw.index('[') + 2}"
    return f"{file}:1:1"


def key_location(file: Any, text: str, loc: tuple[str, ...]) -> str:
    """``file:line:col`` of the key at ``loc`` (``file:line`` / ``file`` when less is known)."""
    line, col = _pos_of(text, loc)
    if not line:
        return f"{file}"
    return f"{file}:{line}:{col}" if col else f"{file}:{line}"


def _pos_of(text: str, loc: tuple[str, ...]) -> tuple[int, int]:
    """Best-effort 1-based ``(line, column)`` of the TOML key at ``loc`` (``(0, 0)`` when not
    found); see :func:`_place`."""
    line, col, _ = _place(text, loc)
    return line, col


def _place(text: str, loc: tuple[str, ...]) -> tuple[int, int, tuple[str, ...] | None]:
    """Best-effort 1-based ``(line, column, table)`` of the TOML key at ``loc`` (``(0, 0,
    None)`` when not found): ``table`` is the header the key's line is under (``()``: the top
    level), None when the place is a table header.

    Finds the longest table header that is a prefix of ``loc`` and then the first remaining key
    after it (handles dotted keys and inline tables approximately). The column is where the key
    starts on its line; for a table header, where the header's name starts (after ``[``).
    """
    if not text:
        return 0, 0, None
    lines = text.splitlines()
    best_line, best_col, best_len = 0, 0, -1
    current: tuple[str, ...] = ()
    candidates: list[tuple[int, int, int, tuple[str, ...]]] = []
    for index, raw in enumerate(lines, start=1):
        header = _HEADER.match(raw)
        if header:
            current = _parts(header.group(1))
            # the table itself, one around it, or (``[providrs.x]`` for ``providrs``) one in it
            depth = min(len(current), len(loc))
            if loc[:depth] == current[:depth] and depth > best_len:
                best_line, best_col, best_len = index, header.start(1) + 1, depth
            continue
        key = _KEY.match(raw)
        if key and loc[: len(current)] == current:
            keypath = current + _parts(key.group(1))
            common = 0
            for a, b in zip(keypath, loc, strict=False):
                if a != b:
                    break
                common += 1
            if common > len(current):
                candidates.append((common, index, key.start(1) + 1, current))
    if candidates:
        common, index, col, table = max(candidates, key=lambda c: (c[0], -c[1]))
        if common > best_len:
            return index, _inline_column(lines[index - 1], col, loc[common:]), table
    return (best_line, best_col, None) if best_line else (0, 0, None)


def _inline_column(line: str, col: int, inner: tuple[str, ...]) -> int:
    """The column of the key ``inner`` (the keys left after the one starting at ``col``) inside
    the inline table of ``line`` — ``timeout`` of ``p = { kind = "openai", timeout = "x" }`` —,
    each found after the one before, as deep as they are found (an item's position is no key:
    the array's key is the place); ``col`` when none is (best effort)."""
    at = col - 1
    for key in inner:
        found = re.compile(rf"(?<![\w\"'-])(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
        match = found.search(line, at)
        if match is None:
            break
        at = match.start()
    return at + 1


def _parts(dotted: str) -> tuple[str, ...]:
    """The keys of a dotted TOML key (``prices."gpt-4.1"`` → ``prices``, ``gpt-4.1``)."""
    return tuple(_unquote(p) for p in _DOTTED.findall(dotted))


_DOTTED = re.compile(r"""\s*(?:"(?:[^"\\]|\\.)*"|'[^']*'|[^."']+)\s*""")


def _unquote(part: str) -> str:
    part = part.strip()
    if len(part) >= 2 and part[0] == part[-1] and part[0] in "\"'":
        return part[1:-1]
    return part
