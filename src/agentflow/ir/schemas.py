"""JSON Schemas in plans, made safe to load and to validate with (docs/spec/PLAN_IR.md §3; issue 16).

A schema may only refer to itself: every ``$ref`` / ``$dynamicRef`` / ``$recursiveRef`` must be a
local reference (``#``, ``#/json/pointer`` or ``#anchor``). Nothing is ever fetched — not over the
network, not from a file — while a plan is loaded or a value validated: :func:`ref_problems`
refuses anything else at load time (the plan validator reports it with file:line:col), and
:func:`validator` builds jsonschema validators whose reference registry refuses every retrieval.

:func:`ref_problems` also finds local references that do not resolve, and references that loop
back to the same place without descending into the value (``{"$ref": "#"}``, ``a → allOf → a``):
validating with such a schema would never end, so it is refused with the loop spelled out.
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import fastjsonschema

if TYPE_CHECKING:
    import referencing

# jsonschema (with referencing, attrs and the format validators: ~110 ms to import) is imported
# only where a schema or a value is wrong and its messages are needed, or where fastjsonschema
# cannot serve (docs/decisions.md "Start-up"): valid values and plainly valid schemas never load it.

REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
#: Keywords whose subschemas apply to the *same* instance (a loop through only these never ends).
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas",)

Path = tuple[str | int, ...]


def _pointer(path: Path) -> str:
    return "#" + "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _nodes(schema: Any) -> list[tuple[Path, Any]]:
    """Every dict node of ``schema`` with its path (iterative: any depth)."""
    out: list[tuple[Path, Any]] = []
    stack: list[tuple[Path, Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            out.append((path, node))
            for key, value in node.items():
                if key in ("enum", "const", "examples", "default"):
                    continue  # data, not schemas
                if isinstance(value, dict | list):
                    stack.append(((*path, key), value))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                if isinstance(value, dict | list):
                    stack.append(((*path, i), value))
    return out


def _resolve(schema: Any, ref: str, anchors: dict[str, Path]) -> Path | None:
    """The path of the node local reference ``ref`` names, or None."""
    fragment = unquote(ref[1:])
    if fragment == "":
        return ()
    if not fragment.startswith("/"):
        return anchors.get(fragment)
    node: Any = schema
    path: list[str | int] = []
    for raw in fragment[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
            path.append(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
            path.append(int(part))
        else:
            return None
    return tuple(path) if isinstance(node, dict | bool) else None


def ref_problems(schema: Any) -> list[tuple[Path, str]]:
    """What makes ``schema`` unsafe or unusable, as ``(path of the offending key, message)``:
    a non-local reference (it would be fetched), a local one that does not resolve, a reference
    loop that never descends into the value. ``[]`` for a good schema (or a non-dict)."""
    if not isinstance(schema, dict):
        return []
    nodes = _nodes(schema)
    problems: list[tuple[Path, str]] = []
    anchors: dict[str, Path] = {}
    nested_ids = False
    for path, node in nodes:
        for key in ("$anchor", "$dynamicAnchor"):
            if isinstance(node.get(key), str):
                anchors.setdefault(node[key], path)
        if path and "$id" in node and _is_schema_position(path):
            nested_ids = True
    targets: dict[Path, list[Path]] = {}
    for path, node in nodes:
        if not _is_schema_position(path):
            continue
        for key in REF_KEYS:
            if key not in node:
                continue
            ref = node[key]
            where = (*path, key)
            if not isinstance(ref, str):
                problems.append((where, f"`{key}` must be a string"))
                continue
            if "{{" in ref:
                problems.append(
                    (where, f"`{key}` cannot be a template: references are literal and local")
                )
                continue
            if not ref.startswith("#"):
                problems.append(
                    (
                        where,
                        f"`{key}: {ref}` refers outside the schema; only local references "
                        "(`#`, `#/$defs/Name`) are allowed — nothing is ever fetched",
                    )
                )
                continue
            if nested_ids:
                continue  # `#…` is relative to an embedded resource: resolved at validation
            target = _resolve(schema, ref, anchors)
            if target is None:
                problems.append(
                    (where, f"`{key}: {ref}` does not resolve: nothing at that place in the schema")
                )
                continue
            targets.setdefault(path, []).append(target)
    if not problems and not nested_ids:
        loop = _in_place_loop(dict(nodes), targets)
        if loop is not None:
            chain = " → ".join(_pointer(p) for p in loop)
            problems.append(
                (
                    (*loop[0], "$ref") if "$ref" in dict(nodes).get(loop[0], {}) else loop[0],
                    f"the schema refers to itself without descending into the value ({chain}); "
                    "validating with it would never end",
                )
            )
    return problems


def _is_schema_position(path: Path) -> bool:
    """False for nodes that are property *names* maps' values' keys … i.e. inside
    ``properties``/``$defs`` maps the node at depth +1 is a schema; the map itself is not."""
    if not path:
        return True
    last = path[-1]
    return last not in (
        "properties",
        "patternProperties",
        "$defs",
        "definitions",
        "dependentSchemas",
    )


def _in_place_loop(nodes: dict[Path, Any], targets: dict[Path, list[Path]]) -> list[Path] | None:
    """A cycle of schema nodes linked only by same-instance applicators (``$ref``, ``allOf``,
    ``not``, …), as the list of its nodes (first repeated at the end), or None."""

    def edges(path: Path) -> list[Path]:
        node = nodes.get(path)
        if not isinstance(node, dict):
            return []
        out = list(targets.get(path, ()))
        for key in _IN_PLACE_ONE:
            if isinstance(node.get(key), dict):
                out.append((*path, key))
        for key in _IN_PLACE_LIST:
            if isinstance(node.get(key), list):
                out.extend((*path, key, i) for i, v in enumerate(node[key]) if isinstance(v, dict))
        for key in _IN_PLACE_MAP:
            if isinstance(node.get(key), dict):
                out.extend((*path, key, k) for k, v in node[key].items() if isinstance(v, dict))
        return out

    state: dict[Path, int] = {}  # 1 = on the stack, 2 = done
    for start in nodes:
        if state.get(start):
            continue
        stack: list[tuple[Path, list[Path]]] = [(start, edges(start))]
        trail = [start]
        state[start] = 1
        while stack:
            path, pending = stack[-1]
            if not pending:
                state[path] = 2
                stack.pop()
                trail.pop()
                continue
            nxt = pending.pop()
            mark = state.get(nxt)
            if mark == 1:
                return trail[trail.index(nxt) :] + [nxt]
            if mark is None:
                state[nxt] = 1
                trail.append(nxt)
                stack.append((nxt, edges(nxt)))
    return None


def schema_problem(schema: Any) -> str | None:
    """The first of :func:`ref_problems` as one line (``at #/pointer: message``), or None."""
    if not isinstance(schema, dict):
        return None
    try:
        key = _key(schema)
    except (RecursionError, ValueError):
        return "the schema is nested too deeply (or not JSON)"
    return _cached_problem(key)


def _key(schema: Any) -> str:
    return json.dumps(
        schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )


@lru_cache(maxsize=512)
def _cached_problem(key: str) -> str | None:
    schema = json.loads(key)
    try:
        problems = ref_problems(schema)
    except RecursionError:  # pragma: no cover - the walks are iterative
        return "the schema is nested too deeply"
    if not problems:
        return None
    path, message = problems[0]
    return f"at {_pointer(path)}: {message}"


def _refuse(uri: str) -> referencing.Resource[Any]:
    import referencing.exceptions

    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


@lru_cache(maxsize=1)
def _no_retrieval() -> referencing.Registry[Any]:
    """The registry every validator gets: retrieving anything not in the schema itself is
    refused."""
    import referencing

    return referencing.Registry(retrieve=_refuse)  # type: ignore[call-arg]


#: The largest whole number a float may stand for where a schema says ``integer``: 2**53 - 1
#: (JavaScript's ``Number.MAX_SAFE_INTEGER``).  Beyond it a double is the rounding of several
#: whole numbers (``9007199254740993.0`` is ``…992``; ``1e308`` is a 309-digit number nobody
#: wrote), so a float there is no ``int`` (docs/decisions.md "floats above 2^53 are not ints").
MAX_SAFE_INTEGER = 2**53 - 1


def unsafe_float(value: Any) -> bool:
    """True when ``value`` (JSON-able data) holds a float beyond ±:data:`MAX_SAFE_INTEGER`
    anywhere (infinity included): one iterative walk, no copy."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is float:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def _safe_integer(checker: Any, instance: Any, *, base: Any) -> bool:
    if type(instance) is float and not -MAX_SAFE_INTEGER <= instance <= MAX_SAFE_INTEGER:
        return False
    return bool(base(checker, instance))


@lru_cache(maxsize=16)
def _safe_integers(cls: Any) -> Any:
    """``cls`` (a jsonschema validator class) whose ``integer`` refuses a float beyond
    ±:data:`MAX_SAFE_INTEGER` with the message any other non-integer gets."""
    import functools

    import jsonschema

    base = cls.TYPE_CHECKER._type_checkers["integer"]  # pinned: tests/ir/test_big_floats.py
    checker = cls.TYPE_CHECKER.redefine("integer", functools.partial(_safe_integer, base=base))
    return jsonschema.validators.extend(cls, type_checker=checker)  # type: ignore[no-untyped-call]


def validator(schema: dict[str, Any], *, formats: bool = False) -> Any:
    """A jsonschema validator for ``schema`` (its ``$schema`` draft, else 2020-12) that never
    fetches a reference; ``formats`` checks ``format`` too.  Its ``integer`` takes a whole
    float only within ±:data:`MAX_SAFE_INTEGER`."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls = _safe_integers(cls)
    kwargs: dict[str, Any] = {"registry": _no_retrieval()}
    if formats:
        kwargs["format_checker"] = cls.FORMAT_CHECKER
    return cls(schema, **kwargs)


def validation_errors(schema: dict[str, Any], value: Any) -> list[Any]:
    """jsonschema errors of ``value`` against ``schema`` (sorted by path), with no retrieval.

    Raises ValueError with a readable message when the schema itself cannot be used (an
    unsafe or unresolvable reference, a loop, or a reference jsonschema cannot resolve)."""
    problem = schema_problem(schema)
    if problem is not None:
        raise ValueError(f"the schema cannot be used: {problem}")
    if fast_valid(schema, value):
        return []
    import referencing.exceptions

    try:
        return sorted(validator(schema).iter_errors(value), key=lambda e: list(map(str, e.path)))
    except referencing.exceptions.Unresolvable as exc:
        raise ValueError(f"the schema cannot be used: unresolvable reference {exc}") from None
    except RecursionError:
        raise ValueError("the schema cannot be used: it nests or refers too deeply") from None


def canonical_json(value: Any) -> str:
    """Canonical JSON text (sorted keys, no whitespace, Unicode kept) used as a cache key."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


#: Keywords of JSON Schema 2019-09/2020-12 (the draft plans' schemas are checked against) that
#: fastjsonschema (drafts 4–7) silently ignores: a schema using any of them is validated by
#: jsonschema alone, so the keyword is enforced rather than skipped.
_NEWER_KEYWORDS = frozenset(
    {
        "prefixItems",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedProperties",
        "unevaluatedItems",
        "minContains",
        "maxContains",
        "$dynamicRef",
        "$recursiveRef",
    }
)


def _keywords(node: Any) -> set[str]:
    """Every object key anywhere in ``node`` (iterative; property names included, which only
    ever makes the check more conservative)."""
    keys: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            keys.update(k for k in item if isinstance(k, str))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return keys


def _no_fetch(uri: str) -> Any:
    raise fastjsonschema.JsonSchemaDefinitionException(f"refusing to fetch {uri!r}")


#: fastjsonschema fetches remote references with urllib unless a handler answers the scheme.
_NO_FETCH = {scheme: _no_fetch for scheme in ("http", "https", "file", "ftp", "data", "")}


@lru_cache(maxsize=512)
def fast_validator(schema_key: str) -> Any:
    """fastjsonschema's compiled validator of the schema whose :func:`canonical_json` is
    ``schema_key``, or None where it cannot serve (a 2019-09/2020-12 keyword it would ignore, a
    reference it must not follow, a keyword it does not support): then jsonschema decides."""
    schema = json.loads(schema_key)
    if _keywords(schema) & _NEWER_KEYWORDS or schema_problem(schema) is not None:
        return None
    try:
        return fastjsonschema.compile(schema, handlers=_NO_FETCH)
    except Exception:  # noqa: BLE001 - unsupported keyword, or nested too deeply: jsonschema only
        return None


def fast_valid(schema: Any, value: Any) -> bool:
    """True when fastjsonschema alone shows ``value`` valid against ``schema`` (it checks
    ``format`` too, so it is never laxer than jsonschema); False means "ask jsonschema"."""
    if not isinstance(schema, dict):
        return False
    key = canonical_json(schema)
    try:
        fast = fast_validator(key)
        if fast is None:
            return False
        fast(copy.deepcopy(value))  # its `default` filling must not touch the value
    except fastjsonschema.JsonSchemaValueException:
        return False
    except (RecursionError, TypeError, ValueError):
        return False
    # fastjsonschema's `integer` takes any whole float (1e308): jsonschema's decides those
    return not fast_lax_about(key, value)


def fast_lax_about(schema_key: str, value: Any) -> bool:
    """True when fastjsonschema's pass of ``value`` cannot stand: the schema (its
    :func:`canonical_json` ``schema_key``) has an ``integer`` and ``value`` a float beyond
    ±:data:`MAX_SAFE_INTEGER`, which fastjsonschema takes as an integer and
    :func:`validator` does not."""
    return '"integer"' in schema_key and unsafe_float(value)


#: Keywords :func:`plainly_valid_schema` knows, each with the check of its value.
_SCHEMA_LIST = ("anyOf", "oneOf", "allOf")
_SCHEMA_ONE = ("additionalProperties", "items", "not", "if", "then", "else", "contains")
_SCHEMA_MAP = ("properties", "$defs", "definitions", "patternProperties")
_TEXT = ("description", "title", "$comment", "format")
_NUMBER = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_COUNT = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_TYPES = frozenset({"null", "boolean", "object", "array", "number", "string", "integer"})
_LOCAL_REF = re.compile(r"#(?:/[A-Za-z0-9_.~$-]+)*")
_SCHEMA_URIS = frozenset(
    {"https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#"}
)
_ANY_VALUE = ("const", "default")


def plainly_valid_schema(schema: Any, depth: int = 0) -> bool:
    """True when ``schema`` uses only well-known keywords, each with a value of the shape the
    2020-12 meta-schema requires — so jsonschema's ``check_schema`` would accept it (the
    schemas ``flowc compile`` writes always are); False means "ask jsonschema", which then
    gives the message. Conservative: an unknown keyword or anything unusual answers False."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or depth > 60:
        return False
    for key, value in schema.items():
        if key == "type":
            kinds = value if isinstance(value, list) else [value]
            if not kinds or not all(isinstance(k, str) and k in _TYPES for k in kinds):
                return False
            if len(set(kinds)) != len(kinds):
                return False
        elif key in _SCHEMA_MAP:
            if not isinstance(value, dict) or not all(
                plainly_valid_schema(sub, depth + 1) for sub in value.values()
            ):
                return False
            if key == "patternProperties" and not all(_regex_ok(k) for k in value):
                return False
        elif key in _SCHEMA_ONE:
            if not plainly_valid_schema(value, depth + 1):
                return False
        elif key in _SCHEMA_LIST:
            if not isinstance(value, list) or not value:
                return False
            if not all(plainly_valid_schema(sub, depth + 1) for sub in value):
                return False
        elif key == "required":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                return False
            if len(set(value)) != len(value):
                return False
        elif key in ("enum", "examples"):
            if not isinstance(value, list):
                return False
        elif key in _TEXT:
            if not isinstance(value, str):
                return False
        elif key in _NUMBER:
            if isinstance(value, bool) or not isinstance(value, int | float):
                return False
        elif key in _COUNT:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return False
        elif key == "uniqueItems":
            if not isinstance(value, bool):
                return False
        elif key == "pattern":
            if not isinstance(value, str) or not _regex_ok(value):
                return False
        elif key == "$ref":
            if not isinstance(value, str) or not _LOCAL_REF.fullmatch(value):
                return False
        elif key == "$schema":
            if value not in _SCHEMA_URIS:
                return False
        elif key not in _ANY_VALUE and not key.startswith("x-"):  # x-…: annotations
            return False
    return True


def _regex_ok(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


# --------------------------------------------------------------------------- whole numbers


def whole_numbers(schema: Any, value: Any) -> Any:
    """``value`` (already valid against ``schema``) with every integral float that ``schema``
    types as ``integer`` made an ``int``: ``3.0`` → ``3`` (docs/decisions.md "integral numbers
    and deep values (round 41)"; docs/reference/language.md "Types").

    JSON has one number type and JSON Schema's ``integer`` accepts ``3.0``, so validation alone
    would let a float stand where a `.flow` says ``int``. The walk follows the value through
    ``properties``, ``additionalProperties``, ``patternProperties``, ``items``, ``prefixItems``,
    ``allOf``, ``anyOf``/``oneOf`` (the branch the value matches: a number stays a float when a
    branch takes any ``number``, a container follows the first branch it is valid against) and
    local ``$ref``s. Never modifies ``value`` (changed containers are copies; unchanged ones are
    the same objects); a value or schema nested too deeply for the walk is returned unchanged.
    """
    if not isinstance(schema, dict):
        return value
    try:
        return _Whole(schema).walk(schema, value, frozenset())
    except RecursionError:
        return value


class _Whole:
    def __init__(self, root: dict[str, Any]):
        self.root = root
        self._validator: Any = None

    def deref(self, node: Any, seen: frozenset[str]) -> tuple[Any, frozenset[str]]:
        """``node`` with a local ``$ref`` followed (its sibling keywords kept)."""
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if not ref.startswith("#") or ref in seen:
                return node, seen
            path = _resolve(self.root, ref, {})
            if path is None:
                return node, seen
            target: Any = self.root
            for part in path:
                target = target[part]
            seen = seen | {ref}
            if not isinstance(target, dict):
                return target, seen
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return node, seen

    def fits(self, branch: Any, value: Any) -> bool:
        if self._validator is None:
            self._validator = validator(self.root)
        try:
            return bool(self._validator.evolve(schema=branch).is_valid(value))
        except Exception:  # noqa: BLE001 - a branch jsonschema cannot use: not this one
            return False

    def walk(self, node: Any, value: Any, seen: frozenset[str]) -> Any:
        node, seen = self.deref(node, seen)
        if not isinstance(node, dict):
            return value
        for sub in node.get("allOf") or ():
            value = self.walk(sub, value, seen)
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list) and branches:
                value = self.union(branches, value, seen)
        if type(value) is float:
            kinds = _own_kinds(node)
            if "integer" in kinds and "number" not in kinds and _safe_whole(value):
                return int(value)
            return value
        if isinstance(value, dict):
            return self.members(node, value)
        if isinstance(value, list):
            return self.items(node, value)
        return value

    def union(self, branches: list[Any], value: Any, seen: frozenset[str]) -> Any:
        resolved = [self.deref(b, seen) for b in branches]
        if type(value) is float:
            kinds = [self.scalar_kinds(b, s) for b, s in resolved]
            if any("number" in k for k in kinds) or not _safe_whole(value):
                return value
            return int(value) if any("integer" in k for k in kinds) else value
        if not isinstance(value, dict | list):
            return value
        wanted = "object" if isinstance(value, dict) else "array"
        candidates = [
            (b, s)
            for b, s in resolved
            if isinstance(b, dict)
            and (not self.scalar_kinds(b, s) or wanted in self.scalar_kinds(b, s))
        ]
        for branch, branch_seen in candidates:
            if len(candidates) == 1 or self.fits(branch, value):
                return self.walk(branch, value, branch_seen)
        return value

    def scalar_kinds(self, node: Any, seen: frozenset[str]) -> set[str]:
        """Every ``type`` a (resolved) branch admits, nested unions included."""
        node, seen = self.deref(node, seen)
        if not isinstance(node, dict):
            return set()
        out = _own_kinds(node)
        for key in ("anyOf", "oneOf"):
            for sub in node.get(key) or ():
                out |= self.scalar_kinds(sub, seen)
        return out

    def members(self, node: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
        found = node.get("properties")
        props: dict[str, Any] = found if isinstance(found, dict) else {}
        patterns = node.get("patternProperties")
        extra = node.get("additionalProperties")
        out: dict[str, Any] | None = None
        for key, item in value.items():
            if key in props:
                new = self.walk(props[key], item, frozenset())
            else:
                new = item
                matched = False
                if isinstance(patterns, dict):
                    for pattern, sub in patterns.items():
                        if isinstance(key, str) and _search(pattern, key):
                            new, matched = self.walk(sub, new, frozenset()), True
                if not matched and isinstance(extra, dict):
                    new = self.walk(extra, item, frozenset())
            if new is not item:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out

    def items(self, node: dict[str, Any], value: list[Any]) -> list[Any]:
        given = node.get("prefixItems")
        prefix: list[Any] = given if isinstance(given, list) else []
        rest = node.get("items")
        if isinstance(rest, list):  # draft 4-7 tuple form
            prefix, rest = rest, node.get("additionalItems")
        out: list[Any] | None = None
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else rest
            new = self.walk(sub, item, frozenset()) if isinstance(sub, dict) else item
            if new is not item:
                if out is None:
                    out = list(value)
                out[i] = new
        return value if out is None else out


def _safe_whole(value: float) -> bool:
    """A float that is exactly one whole number: integral, within ±MAX_SAFE_INTEGER."""
    return value.is_integer() and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def _own_kinds(node: dict[str, Any]) -> set[str]:
    """The types ``node`` itself admits: its ``type``, and ``integer``/``number`` for the whole
    and fractional numbers of its ``enum``/``const`` (a literal union ``1 | 2`` is ints)."""
    kinds = node.get("type")
    out = {kinds} if isinstance(kinds, str) else set(kinds) if isinstance(kinds, list) else set()
    literals = list(node["enum"]) if isinstance(node.get("enum"), list) else []
    if "const" in node:
        literals.append(node["const"])
    for literal in literals:
        if type(literal) is int:
            out.add("integer")
        elif type(literal) is float:
            out.add("number")
    return out


def _search(pattern: str, key: str) -> bool:
    try:
        return re.search(pattern, key) is not None
    except re.error:
        return False
