"""JSON Schema back to `.flow` type text: the type a compiled schema stands for, as the user
would write it (``{ dir: path, depth: int? }``), and `.flow` string literals.  In ``core`` so
the compiler (``flowc tools --extern``), the plan layer and the runtime (messages about a value
that does not fit its type: ``agentflow.ir.mismatch``) all say types the same way."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["IDENT", "UNPRINTABLE", "flow_string", "flow_type_of_schema", "required_fields"]

#: a `.flow` identifier (a field name written bare)
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SCALARS = {
    "string": "text",
    "integer": "int",
    "number": "number",
    "boolean": "bool",
    "null": "null",
}


def flow_type_of_schema(schema: Any, depth: int = 0, *, named: bool = False) -> str:
    """The `.flow` type (docs/spec/LANGUAGE.md §3) closest to a JSON Schema, as source text: scalars
    map to ``text``/``int``/``number``/``bool``/``null``, ``x-flow-type`` is honoured (``path``…),
    string enums become literal unions, arrays ``T[]``, objects with properties inline object
    types (optional fields ``T?``), ``anyOf``/``oneOf``/type lists unions; anything else (or
    deeper than 4 levels) is ``json``.  ``named``: a reference to a named type of a compiled
    `.flow` contract (``{"$ref": "#/$defs/Ticket"}``) is said by that name (``Ticket``: the
    run-time messages about a value, where the user declared it); else ``json`` (``flowc tools
    --extern`` writes source that declares no such type)."""
    if not isinstance(schema, dict) or depth > 4:
        return "json"
    ref = schema.get("$ref")
    if named and isinstance(ref, str) and ref.startswith("#/$defs/") and "/" not in ref[8:]:
        return ref[8:] if IDENT.match(ref[8:]) else "json"
    flow_type = schema.get("x-flow-type")
    if isinstance(flow_type, str) and flow_type in _FLOW_TYPES:  # `prim` writes only these
        return flow_type
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        return " | ".join(flow_string(v) for v in dict.fromkeys(enum))
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _union([flow_type_of_schema(o, depth + 1, named=named) for o in options])
    kind = schema.get("type")
    if not isinstance(kind, str | list):
        return "json"
    if isinstance(kind, list):
        return _union(
            [flow_type_of_schema({**schema, "type": k}, depth + 1, named=named) for k in kind]
        )
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        item = flow_type_of_schema(schema.get("items"), depth + 1, named=named)
        return f"({item})[]" if "|" in item else f"{item}[]"
    if kind == "object":
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if not props and isinstance(extra, dict) and extra:  # `dict[str, int]` → `map<int>`
            value = flow_type_of_schema(extra, depth + 1, named=named)
            return "json" if value == "json" else f"map<{value}>"
        if not isinstance(props, dict) or not props or not all(IDENT.match(k) for k in props):
            return "json"
        required = required_fields(schema)
        fields = []
        for name, sub in props.items():
            t = flow_type_of_schema(sub, depth + 1, named=named)
            fields.append(f"{name}: {_optional(t) if name not in required else t}")
        return "{ " + ", ".join(fields) + " }"
    return "json"


_FLOW_TYPES = {"path", "member", "duration"}
#: characters a `.flow` string cannot hold raw (docs/spec/LANGUAGE.md §1: `\u{…}` escapes them):
#: controls, DEL, C1 controls and the Unicode line/paragraph separators (`str.splitlines` breaks on
#: those)
UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def flow_string(value: str) -> str:
    r"""``value`` as a `.flow` string literal (docs/spec/LANGUAGE.md §1 escapes): ``\\``, ``\"``,
    ``\$`` (no interpolation), ``\n``/``\t`` and ``\u{…}`` for other control characters — one
    line."""
    body = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    body = body.replace("\n", "\\n").replace("\t", "\\t")
    return '"' + UNPRINTABLE.sub(lambda m: f"\\u{{{ord(m.group()):x}}}", body) + '"'


def required_fields(schema: dict[str, Any]) -> set[str]:
    """The names in a schema's ``required`` list (anything malformed there is ignored)."""
    required = schema.get("required")
    return {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()


def _union(members: list[str]) -> str:
    if "json" in members:
        return "json"
    rest = [m for m in dict.fromkeys(members) if m != "null"]
    if not rest:
        return "null"
    body = " | ".join(rest) if len(rest) > 1 else rest[0]
    return _optional(body) if "null" in members else body


def _optional(t: str) -> str:
    if t.endswith("?") or t == "json" or t == "null":
        return t
    return f"({t})?" if "|" in t else f"{t}?"
