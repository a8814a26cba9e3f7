"""A contract's JSON Schema checked against the JSON Schema 2020-12 metaschema
(:func:`_schema_error`: the first problem and where it is inside the schema), split by keyword
and subschema and cached part by part, for the plan validator (:mod:`agentflow.ir.validate`).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from agentflow.ir.schemas import plainly_valid_schema
from agentflow.ir.templates import Path


def _schema_error(schema: dict[str, Any]) -> tuple[str, Path] | None:
    """The first problem of ``schema`` against the JSON Schema 2020-12 metaschema as
    ``(message, path inside the schema)``, or None.

    Checking a whole contract against the metaschema costs 3-30 ms, and compiled plans repeat
    the same few parts (``{"type": "integer"}``, a record type's definition) in ever new
    combinations. The metaschema constrains each keyword of a schema on its own and checks each
    subschema (``properties``/``$defs`` values, ``items``, ``anyOf`` members, …) against the
    metaschema itself, so the check splits into one check per keyword, each subschema checked
    the same way, and every part is cached by its canonical JSON text. A schema that is not JSON
    text (or nests too deeply to split) is checked whole, uncached."""
    if plainly_valid_schema(schema):  # what `flowc compile` writes: no jsonschema import
        return None
    try:
        return _split_schema_error(schema)
    except (TypeError, ValueError, RecursionError):
        return _check_schema(schema)


#: keywords whose value maps names to subschemas (the names of `patternProperties` are checked
#: too: they must be regular expressions), whose value is a subschema, or a non-empty list of them
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = frozenset(
    (
        "items",
        "additionalProperties",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contentSchema",
    )
)
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")


def _split_schema_error(schema: Any) -> tuple[str, Path] | None:
    if not isinstance(schema, dict) or not schema:
        return _cached_schema_error(json.dumps(schema, sort_keys=True, allow_nan=False))
    for key in sorted(schema):
        value = schema[key]
        subs: list[tuple[Path, Any]] = []
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            # the names matter only as regular expressions
            shell: Any = dict.fromkeys(value, True) if key == "patternProperties" else {}
            subs = [((key, name), sub) for name, sub in value.items()]
        elif key in _SCHEMA_ONE and isinstance(value, dict):
            shell = True
            subs = [((key,), value)]
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            shell = [True if isinstance(v, dict) else v for v in value]
            subs = [((key, i), v) for i, v in enumerate(value) if isinstance(v, dict)]
        else:
            shell = value
        error = _cached_schema_error(json.dumps({key: shell}, sort_keys=True, allow_nan=False))
        if error is not None:
            return error
        for where, sub in subs:
            error = _split_schema_error(sub)
            if error is not None:
                return error[0], (*where, *error[1])
    return None


@functools.lru_cache(maxsize=2048)
def _cached_schema_error(key: str) -> tuple[str, Path] | None:
    return _check_schema(json.loads(key))


def _check_schema(schema: dict[str, Any]) -> tuple[str, Path] | None:
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return exc.message, tuple(exc.path)
    except RecursionError:
        return "it is nested too deeply to check", ()
    return None
