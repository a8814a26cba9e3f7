"""The errors of a `flow.toml` in its own terms (docs/reference/configuration.md): where a key
is (:func:`key_location`, ``file:line:col``) and what pydantic's validation errors of the
configuration's model mean (:func:`format_validation`: unknown keys with their did-you-mean,
missing keys, wrong values), one line per problem, each naming the key at its place.
Used by :func:`agentflow.runtime.config.load_config`; the model itself is passed in (``root``),
so this module knows nothing of :mod:`agentflow.runtime.config`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from agentflow.core.diagnostics import did_you_mean, suggested
from agentflow.errors import ConfigError

__all__ = ["format_validation", "key_location", "strip_file"]


def strip_file(exc: ConfigError, file: str) -> str:
    """The message of ``exc`` without its leading ``file: `` (to put it after another place)."""
    msg = str(exc)
    prefix = f"{file}: "
    return msg[len(prefix) :] if msg.startswith(prefix) else msg


def format_validation(
    exc: ValidationError, file: Path | None, text: str, root: type[BaseModel]
) -> str:
    """The problems of ``exc`` (validating the parsed ``file``, whose text is ``text``, into the
    model ``root``), one line each: ``file:line:col: message`` in the file's terms."""
    grouped: dict[tuple[str, ...], list[ErrorDetails]] = {}
    for err in exc.errors():
        # drop pydantic's union-member tags ("str", "list[str]") so one key gives one message
        loc = tuple(str(p) for p in err["loc"] if not _UNION_TAG.fullmatch(str(p)))
        grouped.setdefault(loc, []).append(err)
    lines = []
    for loc, errs in grouped.items():
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
            message = f"missing required key '{dotted}'"
        else:
            message = f"{dotted}: " + " or ".join(
                dict.fromkeys(e["msg"].removeprefix("Value error, ") for e in errs)
            )
        lines.append(f"{where}: {message}")
    return "\n".join(lines)


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


_UNION_TAG = re.compile(r"(str|int|float|bool|list\[.*\]|dict\[.*\])")


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"'.]+)\s*=")


def key_location(file: Any, text: str, loc: tuple[str, ...]) -> str:
    """``file:line:col`` of the key at ``loc`` (``file:line`` / ``file`` when less is known)."""
    line, col = _pos_of(text, loc)
    if not line:
        return f"{file}"
    return f"{file}:{line}:{col}" if col else f"{file}:{line}"


def _pos_of(text: str, loc: tuple[str, ...]) -> tuple[int, int]:
    """Best-effort 1-based ``(line, column)`` of the TOML key at ``loc`` (``(0, 0)`` when not found).

    Finds the longest table header that is a prefix of ``loc`` and then the first remaining key
    after it (handles dotted keys and inline tables approximately). The column is where the key
    starts on its line; for a table header, where the header's name starts (after ``[``).
    """
    if not text:
        return 0, 0
    lines = text.splitlines()
    best_line, best_col, best_len = 0, 0, -1
    current: tuple[str, ...] = ()
    candidates: list[tuple[int, int, int]] = []
    for index, raw in enumerate(lines, start=1):
        header = _HEADER.match(raw)
        if header:
            current = tuple(_unquote(p) for p in header.group(1).split("."))
            # the table itself, one around it, or (``[providrs.x]`` for ``providrs``) one in it
            depth = min(len(current), len(loc))
            if loc[:depth] == current[:depth] and depth > best_len:
                best_line, best_col, best_len = index, header.start(1) + 1, depth
            continue
        key = _KEY.match(raw)
        if key and loc[: len(current)] == current:
            keypath = current + tuple(_unquote(p) for p in key.group(1).split("."))
            common = 0
            for a, b in zip(keypath, loc, strict=False):
                if a != b:
                    break
                common += 1
            if common > len(current):
                candidates.append((common, index, key.start(1) + 1))
    if candidates:
        common, index, col = max(candidates, key=lambda c: (c[0], -c[1]))
        if common > best_len:
            return index, col
    return (best_line, best_col) if best_line else (0, 0)


def _unquote(part: str) -> str:
    part = part.strip()
    if len(part) >= 2 and part[0] == part[-1] and part[0] in "\"'":
        return part[1:-1]
    return part
