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

import json
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

import jsonschema
import referencing
import referencing.exceptions

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
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


#: The registry every validator gets: retrieving anything not in the schema itself is refused.
_NO_RETRIEVAL: referencing.Registry[Any] = referencing.Registry(retrieve=_refuse)  # type: ignore[call-arg]


def validator(schema: dict[str, Any], *, formats: bool = False) -> Any:
    """A jsonschema validator for ``schema`` (its ``$schema`` draft, else 2020-12) that never
    fetches a reference; ``formats`` checks ``format`` too."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    kwargs: dict[str, Any] = {"registry": _NO_RETRIEVAL}
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
    try:
        return sorted(validator(schema).iter_errors(value), key=lambda e: list(map(str, e.path)))
    except referencing.exceptions.Unresolvable as exc:
        raise ValueError(f"the schema cannot be used: unresolvable reference {exc}") from None
    except RecursionError:
        raise ValueError("the schema cannot be used: it nests or refers too deeply") from None
