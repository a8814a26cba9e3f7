"""The JSON Schema subset each provider's native structured output accepts, as data, and the
transform that fits a contract into it (docs/models.md "Structured output per provider").

A provider's constrained decoding compiles only part of JSON Schema: Anthropic refuses
``maxLength``, ``minimum``, ``maxItems`` … with a 400; Gemini's ``responseJsonSchema`` takes
another part; OpenAI's strict mode a third. :data:`SUBSETS` writes each documented subset down
as a :class:`Subset`; :func:`fit_schema` rewrites a contract into it — closing objects where the
provider wants them closed, inlining ``$ref``, and *moving* every keyword the provider does not
accept into the node's ``description`` (``"(maxLength: 40, minimum: 1)"``), so the model still
reads the constraint. The answer is always validated against the FULL contract locally (the
agent loop's contract check), so nothing a constraint says is lost. :func:`subset_problems`
checks a schema against a subset: the loopback test servers refuse requests with it, as the
real endpoints do.

Sources of the subsets (read 2026-12): Anthropic "Structured outputs — JSON Schema
limitations" (platform.claude.com/docs/en/build-with-claude/structured-outputs); Gemini
``GenerationConfig.responseJsonSchema`` (ai.google.dev/api/generate-content); OpenAI
"Structured Outputs — Supported schemas" (platform.openai.com/docs/guides/structured-outputs).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["SUBSETS", "Subset", "fit_schema", "lossy_keywords", "moved_text", "subset_problems"]


@dataclass(frozen=True)
class Subset:
    """One provider's documented JSON Schema subset for native structured output.

    ``keywords``: the keywords accepted at a schema node (others are refused); ``formats``:
    accepted ``format`` values (None: any); ``max_min_items``: the largest ``minItems`` accepted
    (None: any); ``closed_objects``: every object must say ``additionalProperties: false``;
    ``map_objects``: ``additionalProperties`` may be a schema; ``all_required``: every property
    must be listed in ``required`` (optional ones made nullable); ``enum_kinds``: JSON kinds an
    ``enum`` may hold; ``pattern_refused``: a regular expression finding the ``pattern``
    features the provider's regex engine refuses (None: every pattern is accepted);
    ``ref_siblings``: a node with ``$ref`` may hold other keywords; ``recursion``: a ``$ref``
    cycle is accepted; ``typed_enums``: an ``enum`` needs a ``type`` beside it.
    """

    name: str
    keywords: frozenset[str]
    formats: frozenset[str] | None = None
    max_min_items: int | None = None
    closed_objects: bool = False
    map_objects: bool = True
    all_required: bool = False
    enum_kinds: frozenset[str] = frozenset({"string", "number", "integer", "boolean", "null"})
    pattern_refused: str | None = None
    ref_siblings: bool = True
    recursion: bool = False
    typed_enums: bool = False


_SHARED = frozenset({"type", "description", "properties", "required", "items", "anyOf", "enum"})

ANTHROPIC = Subset(
    name="anthropic",
    keywords=_SHARED
    | {
        "title",
        "const",
        "additionalProperties",
        "minItems",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
        "format",
        "pattern",
        "default",
    },
    formats=frozenset(
        {
            "date-time",
            "time",
            "date",
            "duration",
            "email",
            "hostname",
            "uri",
            "ipv4",
            "ipv6",
            "uuid",
        }
    ),
    max_min_items=1,
    closed_objects=True,
    map_objects=False,
    typed_enums=True,
    # no backreferences, lookahead/lookbehind or word boundaries
    pattern_refused=r"\(\?[=!<]|\\[1-9]|\\[bB]",
)

GEMINI = Subset(
    name="gemini",
    keywords=_SHARED
    | {
        "$id",
        "$defs",
        "$ref",
        "$anchor",
        "title",
        "format",
        "prefixItems",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "oneOf",
        "additionalProperties",
        "propertyOrdering",
    },
    enum_kinds=frozenset({"string", "number", "integer"}),
    ref_siblings=False,
    typed_enums=True,
)

OPENAI = Subset(
    name="openai",
    keywords=_SHARED
    | {
        "title",
        "const",
        "additionalProperties",
        "$ref",
        "$defs",
        "definitions",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    },
    formats=frozenset(
        {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
    ),
    closed_objects=True,
    map_objects=False,
    all_required=True,
    recursion=True,
    typed_enums=True,
)

#: The subsets by provider kind (``openai-responses`` shares OpenAI's strict mode).
SUBSETS: dict[str, Subset] = {
    "openai": OPENAI,
    "openai-responses": OPENAI,
    "azure-openai": OPENAI,  # Azure serves OpenAI's models, strict mode included
    "azure-openai-responses": OPENAI,
    "anthropic": ANTHROPIC,
    "gemini": GEMINI,
}

#: Keywords that only agentflow reads, dropped rather than moved.
_DROPPED = ("$schema", "$id", "default")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _enum_type(values: list[Any]) -> str | list[str] | None:
    kinds: list[str] = []
    for value in values:
        kind = _kind(value)
        if kind in ("array", "object"):
            return None
        if kind not in kinds:
            kinds.append(kind)
    if "integer" in kinds and "number" in kinds:
        kinds.remove("integer")
    if not kinds:
        return None
    return kinds[0] if len(kinds) == 1 else kinds


def moved_text(moved: dict[str, Any]) -> str:
    """The text appended to a description for keywords the provider does not take:
    ``(maxLength: 40, minimum: 1)`` (values as compact JSON, in the contract's order)."""
    parts = [
        f"{key}: {json.dumps(value, ensure_ascii=False, separators=(',', ':'))}"
        for key, value in moved.items()
    ]
    return "(" + ", ".join(parts) + ")"


class _Unfit(Exception):
    """The schema's meaning cannot be expressed in the subset at all (prompt text instead)."""


def fit_schema(schema: dict[str, Any], subset: Subset | str) -> dict[str, Any] | None:
    """``schema`` rewritten into ``subset`` (a :class:`Subset` or a key of :data:`SUBSETS`), or
    None when the subset cannot express it (the caller then sends the contract as prompt text).

    ``$ref`` into ``$defs`` is inlined (a recursive schema, which cannot be, gives None unless
    the subset accepts recursion — then ``$defs`` is kept, rewritten the same way); ``oneOf``
    becomes ``anyOf`` where only ``anyOf`` is accepted; an ``enum`` gets its ``type`` where the
    subset wants one; objects are closed (``additionalProperties: false``) where the subset
    wants them closed — a map type (``additionalProperties`` with a schema), an open object
    (``{"type": "object"}`` without properties), an empty "any" schema and ``not`` give None
    there; optional properties become required and nullable where all must be required; every
    other keyword the subset does not accept (``maxLength``, ``minimum``, a ``minItems`` over its
    limit, an unknown ``format``, a ``pattern`` its regex engine refuses …) is moved into the
    node's ``description`` (:func:`moved_text`). ``$schema``, ``$id``, ``default`` and our
    ``x-*`` annotations are dropped.
    """
    return _fit(schema, subset)[0]


def lossy_keywords(schema: dict[str, Any], subset: Subset | str) -> set[str]:
    """The keywords :func:`fit_schema` moves into descriptions for ``subset`` (empty: the
    provider would enforce ``schema`` as it is, e.g. a tool that may be marked strict)."""
    return _fit(schema, subset)[1]


def _fit(schema: dict[str, Any], subset: Subset | str) -> tuple[dict[str, Any] | None, set[str]]:
    if isinstance(subset, str):
        subset = SUBSETS[subset]
    defs = schema.get("$defs") or schema.get("definitions") or {}
    fitter = _Fitter(subset, defs, inline=True)
    try:
        try:
            return fitter.node(schema, frozenset(), root=True), fitter.moved
        except _Recursive:
            if not subset.recursion:
                return None, fitter.moved
            fitter = _Fitter(subset, defs, inline=False)
            out = fitter.node(schema, frozenset(), root=True)
            if defs:
                out["$defs"] = {name: fitter.node(d, frozenset()) for name, d in defs.items()}
            return out, fitter.moved
    except (_Unfit, RecursionError):
        return None, fitter.moved


class _Recursive(Exception):
    pass


class _Fitter:
    def __init__(self, subset: Subset, defs: dict[str, Any], *, inline: bool):
        self.subset = subset
        self.defs = defs
        self.inline = inline
        self.moved: set[str] = set()

    def node(self, node: Any, stack: frozenset[str], *, root: bool = False) -> Any:
        subset = self.subset
        if not isinstance(node, dict):
            return node
        if not node:
            raise _Unfit("an empty schema (any value)")
        if "$ref" in node:
            ref = str(node["$ref"])
            name = ref.rsplit("/", 1)[-1]
            if not self.inline:
                return {"$ref": ref}
            if ref == "#" or name in stack:
                raise _Recursive(ref)
            if name not in self.defs:
                raise _Unfit(ref)
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return self.node({**self.defs[name], **rest}, stack | {name})
        out: dict[str, Any] = {}
        moved: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED or key.startswith("x-") or key in ("$defs", "definitions"):
                continue
            if key == "not":
                raise _Unfit("not")
            if key == "oneOf" and "oneOf" not in subset.keywords:
                key = "anyOf"
            if key == "properties" and isinstance(value, dict):
                out[key] = {k: self.node(v, stack) for k, v in value.items()}
            elif key in ("items", "anyOf", "allOf", "prefixItems", "oneOf"):
                if key not in subset.keywords:
                    moved[key] = value
                elif isinstance(value, list):
                    out[key] = [self.node(v, stack) for v in value]
                else:
                    out[key] = self.node(value, stack)
            elif key == "additionalProperties":
                if isinstance(value, dict):
                    if not subset.map_objects:
                        raise _Unfit("additionalProperties with a schema (a map)")
                    out[key] = self.node(value, stack)
                else:
                    out[key] = value
            elif key not in subset.keywords:
                moved[key] = value
            elif key == "format" and subset.formats is not None and value not in subset.formats:
                moved[key] = value
            elif key == "minItems" and (
                subset.max_min_items is not None
                and isinstance(value, int)
                and value > subset.max_min_items
            ):
                out[key] = subset.max_min_items
                moved[key] = value
            elif key == "pattern" and (
                subset.pattern_refused is not None
                and isinstance(value, str)
                and re.search(subset.pattern_refused, value)
            ):
                moved[key] = value
            elif key == "enum" and isinstance(value, list):
                if any(_kind(v) not in subset.enum_kinds for v in value):
                    moved[key] = value
                else:
                    out[key] = value
            else:
                out[key] = value
        if (
            "const" in moved
            and "enum" in subset.keywords
            and _kind(moved["const"]) in (subset.enum_kinds)
        ):
            out["enum"] = [moved.pop("const")]
        if "type" not in out and subset.typed_enums:
            values = out.get("enum") or moved.get("enum")
            if values is None and "const" in out:
                values = [out["const"]]
            kind = _enum_type(values) if isinstance(values, list) and values else None
            if kind is not None:
                out = {"type": kind, **out}
        is_object = out.get("type") == "object" or isinstance(out.get("properties"), dict)
        if is_object:
            props = out.get("properties")
            if subset.closed_objects:
                if not isinstance(props, dict) and out.get("additionalProperties") is not False:
                    raise _Unfit("an open object (any keys)")
                out["additionalProperties"] = False
            if subset.all_required and isinstance(props, dict):
                required = set(out.get("required") or [])
                out["properties"] = {
                    k: (v if k in required else _nullable(v)) for k, v in props.items()
                }
                out["required"] = list(props)
        if moved:
            self.moved.update(moved)
            text = moved_text(moved)
            description = out.get("description")
            out["description"] = f"{description} {text}" if description else text
        return out


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


def subset_problems(schema: Any, subset: Subset | str) -> list[str]:
    """What in ``schema`` the provider of ``subset`` refuses, each as the provider's 400 would
    put it (``"properties.name: property 'maxLength' is not supported"``); empty when it is
    accepted. Used by the loopback servers that stand for the providers in tests."""
    if isinstance(subset, str):
        subset = SUBSETS[subset]
    problems: list[str] = []
    defs = schema.get("$defs", {}) if isinstance(schema, dict) else {}

    def walk(node: Any, where: str, refs: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        at = where or "schema"
        for key, value in node.items():
            if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
                continue
            if key not in subset.keywords:
                problems.append(f"{at}: property '{key}' is not supported")
        if "$ref" in node:
            ref = str(node["$ref"])
            if not subset.ref_siblings and any(not k.startswith("$") for k in node):
                problems.append(f"{at}: no other keyword may stand beside '$ref'")
            name = ref.rsplit("/", 1)[-1]
            if ref == "#" or name in refs:
                if not subset.recursion:
                    problems.append(f"{at}: recursive schemas are not supported")
            elif name in defs:
                walk(defs[name], f"$defs.{name}", (*refs, name))
        fmt = node.get("format")
        if fmt is not None and subset.formats is not None and fmt not in subset.formats:
            problems.append(f"{at}: format '{fmt}' is not supported")
        low = node.get("minItems")
        if isinstance(low, int) and subset.max_min_items is not None and low > subset.max_min_items:
            problems.append(f"{at}: minItems values other than 0 or 1 are not supported")
        pattern = node.get("pattern")
        if (
            isinstance(pattern, str)
            and subset.pattern_refused
            and re.search(subset.pattern_refused, pattern)
        ):
            problems.append(f"{at}: the pattern's regular expression is not supported")
        enum = node.get("enum")
        if isinstance(enum, list) and any(_kind(v) not in subset.enum_kinds for v in enum):
            problems.append(f"{at}: enum values of this kind are not supported")
        if isinstance(enum, list) and subset.typed_enums and "type" not in node:
            problems.append(f"{at}: an enum needs a type")
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and not subset.map_objects:
            problems.append(f"{at}: additionalProperties must be false")
        props = node.get("properties")
        if node.get("type") == "object" or isinstance(props, dict):
            if subset.closed_objects and extra is not False:
                problems.append(f"{at}: additionalProperties must be set to false for objects")
            if subset.all_required and isinstance(props, dict):
                missing = set(props) - set(node.get("required") or [])
                if missing:
                    problems.append(f"{at}: every property must be required ({sorted(missing)})")
        if isinstance(props, dict):
            for name, sub in props.items():
                walk(sub, f"{where}.properties.{name}".lstrip("."), refs)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                walk(node[key], f"{where}.{key}".lstrip("."), refs)
        for key in ("anyOf", "allOf", "oneOf", "prefixItems"):
            if isinstance(node.get(key), list):
                for index, sub in enumerate(node[key]):
                    walk(sub, f"{where}.{key}[{index}]".lstrip("."), refs)

    walk(schema, "", ())
    return problems
