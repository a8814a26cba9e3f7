"""A value that does not fit a `.flow` type, said in the `.flow`'s terms: the one front door
for every "this value does not match that type" a user meets at run time (``flowc run``/``test``/
``serve``, the api, a ``plan__*`` call, an ``extern tool``'s declared result) and in an eval
dataset (``flowc eval``'s located diagnostics).

Each problem names the place in the value (``input.dir``, ``result.items[2]``), the expected type
in `.flow` syntax (:func:`~agentflow.compiler.contracts.flow_type_of_schema`), and — for a field
the type does not have — a "did you mean" towards a declared field: a close spelling, or the one
required field the value lacks (``directory`` → ``dir``).  An unknown field and the missing
required field it was meant to be are one problem, not two.  JSON Schema's own wording
(``'dir' is a required property``) never reaches a user here (docs/reference/cli.md "Input").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import did_you_mean
from agentflow.core.schema_types import flow_type_of_schema
from agentflow.core.vocabulary import (
    MAX_DURATION_MS,
    MAX_DURATION_TEXT,
    MAX_EXPR_DEPTH,
    duration_ms,
)
from agentflow.ir.schemas import validation_errors

__all__ = [
    "Mismatch",
    "mismatch_lines",
    "mismatches",
    "shown_path",
    "too_long_durations",
    "type_names",
]

Path_ = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One way a value does not fit its type.

    - ``path``: where, from the value's root (``("input", "dir")``, ``("input", "items", 2)``).
    - ``code``: the diagnostic code a dataset reports it with (``type-mismatch``,
      ``unknown-field``, ``invalid-value``).
    - ``message``: one line in the `.flow`'s terms; ``hint``: a "did you mean `dir`?" or what to
      add, or None.
    - ``field``: the unknown field's name (a dataset points at its key) or the first missing
      one's, else None; ``missing``: every required field the object lacks (one problem says
      them all), else ``()``."""

    path: Path_
    code: str
    message: str
    hint: str | None = None
    field: str | None = None
    missing: tuple[str, ...] = ()

    def line(self) -> str:
        """``message`` with its hint as one line (``…: did you mean `dir`?``)."""
        return f"{self.message}; {self.hint}" if self.hint else self.message


def shown_path(path: Path_) -> str:
    """``input.items[2].name`` for ``("input", "items", 2, "name")``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def type_names(schema: dict[str, Any], root: str | None) -> dict[int, str]:
    """``id(sub-schema)`` → the `.flow` name of its type, for :func:`mismatches`' ``names``:
    ``schema`` itself is ``root`` (``Ticket``; none when None), each ``$defs`` entry its key."""
    names = {id(schema): root} if root else {}
    defs = schema.get("$defs")
    if isinstance(defs, dict):
        names.update({id(v): k for k, v in defs.items() if isinstance(v, dict)})
    return names


def mismatches(
    schema: dict[str, Any],
    value: Any,
    *,
    root: str = "input",
    what: str = "the flow's input type",
    names: dict[int, str] | None = None,
) -> list[Mismatch]:
    """Every way ``value`` does not fit ``schema`` (a compiled `.flow` type), in path order; ``[]``
    when it fits.  ``root`` names the value (``input``, ``result``, ``expected``); ``what`` the type
    (``the flow's input type``, ``its declared type``); ``names`` (:func:`type_names`) the types
    the user named (``Ticket``), said by that name rather than written out.  Raises ValueError
    when the schema itself cannot be used (:func:`~agentflow.ir.schemas.validation_errors`)."""
    shown_type = _typer(names or {})
    errors = [e for error in validation_errors(schema, value) for e in _by_tag(error)]
    missing: dict[Path_, list[str]] = {}  # per object, its missing required fields
    unknown: dict[Path_, list[str]] = {}  # … and the fields its type does not have
    for error in errors:
        where = tuple(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            lacking = missing.setdefault(where, [])
            lacking.extend(k for k in _absent(error) if k not in lacking)
        elif _is_unknown(error):
            unknown.setdefault(where, []).extend(_extra(error))
    # an unknown field beside a missing required one is usually that field misspelt: one problem
    hints: dict[tuple[Path_, str], str] = {}
    meant: dict[Path_, set[str]] = {}
    for where, extra in unknown.items():
        lacking = missing.get(where, [])
        for name in extra:
            close = did_you_mean(str(name), lacking)
            if close is None and len(lacking) == 1 and len(extra) == 1:
                close = f"did you mean `{lacking[0]}`?"
            if close is not None:
                hints[where, name] = close
                meant.setdefault(where, set()).add(close.split("`")[1])
    out: list[Mismatch] = []
    for error in errors:
        where = tuple(error.absolute_path)
        full = (root, *where)
        if error.validator == "required" and isinstance(error.instance, dict):
            said = meant.setdefault(where, set())
            lacking = [n for n in _absent(error) if n not in said]  # not misspelt, not said yet
            said.update(lacking)
            if lacking:  # one problem per object, however many fields it lacks
                out.append(_missing(full, lacking, what, shown_type(error.schema)))
        elif _is_unknown(error):
            allowed = sorted((error.schema.get("properties") or {}).keys())
            for name in _extra(error):
                hint = hints.get((where, name)) or did_you_mean(str(name), allowed)
                out.append(
                    Mismatch(
                        full,
                        D.UNKNOWN_FIELD,
                        f"`{shown_path(full)}` has no field `{name}` in {what} "
                        f"`{shown_type(error.schema)}`",
                        hint or f"its fields: {', '.join(allowed)}",
                        field=str(name),
                    )
                )
        else:
            out.append(_other(full, what, error, shown_type(error.schema)))
    if not errors:
        out.extend(_too_long(schema, schema, value, (root,), 0))
    return out


def too_long_durations(schema: dict[str, Any], value: Any) -> list[tuple[Path_, str]]:
    """``(path, problem)`` of each duration in ``value`` — which fits ``schema``, a compiled
    `.flow` type — longer than :data:`~agentflow.core.vocabulary.MAX_DURATION_MS`, the path
    from the value's root (``("wait",)``), the problem without it (``"877000h" is longer than
    the longest duration, 876000h (100 years)``): an agent's answer and a tool's result are
    refused at their contract as an input is (docs/reference/lexical.md "Durations")."""
    return [
        (m.path[1:], m.message.split("` is ", 1)[1].replace(", longer than", " is longer than", 1))
        for m in _too_long(schema, schema, value, ("$",), 0)
    ]


def _too_long(root: dict[str, Any], node: Any, value: Any, at: Path_, depth: int) -> list[Mismatch]:
    """Each duration of ``value`` (which fits ``node``, a part of schema ``root``) longer than
    :data:`~agentflow.core.vocabulary.MAX_DURATION_MS`: its pattern cannot bound the length
    (docs/reference/lexical.md "Durations")."""
    if depth > MAX_EXPR_DEPTH or not isinstance(node, dict):
        return []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        return _too_long(root, target, value, at, depth + 1)
    out: list[Mismatch] = []
    for branch in node.get("allOf") or []:
        out.extend(_too_long(root, branch, value, at, depth + 1))
    for key in ("anyOf", "oneOf"):
        # a union: too long only when no member the value fits takes it (`duration | text`
        # takes any text)
        found: list[Mismatch] = []
        for branch in node.get(key) or []:
            if not _fits(root, branch, value):
                continue
            problems = _too_long(root, branch, value, at, depth + 1)
            if not problems:
                found = []
                break
            found = found or problems
        out.extend(found)
    if node.get("x-flow-type") == "duration" and isinstance(value, str):
        try:
            long = duration_ms(value) > MAX_DURATION_MS
        except ValueError:
            long = False
        if long:
            shown = value if len(value) <= 40 else value[:37] + "…"
            out.append(
                Mismatch(
                    at,
                    D.INVALID_VALUE,
                    f"`{shown_path(at)}` is {json.dumps(shown)}, longer than the longest "
                    f"duration, {MAX_DURATION_TEXT}",
                )
            )
    elif isinstance(value, dict):
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        for k, v in value.items():
            sub = props.get(k, extra if isinstance(extra, dict) else None)
            out.extend(_too_long(root, sub, v, (*at, k), depth + 1))
    elif isinstance(value, list):
        items = node.get("items")
        for i, v in enumerate(value):
            out.extend(_too_long(root, items, v, (*at, i), depth + 1))
    return out


def _fits(root: dict[str, Any], branch: Any, value: Any) -> bool:
    """Whether ``value`` is a value of ``branch`` (a member of a union in schema ``root``, its
    references read in ``root``)."""
    if not isinstance(branch, dict):
        return False
    schema = {**branch, **{k: root[k] for k in ("$defs", "definitions") if k in root}}
    try:
        return not validation_errors(schema, value)
    except ValueError:
        return False


def _by_tag(error: Any) -> list[Any]:
    """A union's error (``anyOf``) as the errors of the one member the value could be: the
    member whose tags (``enum``/``const`` fields: ``kind: "b"``) and kind hold, so
    ``{kind: "b", x: 1}`` is said as `Hi`'s ``x`` out of range rather than "wants `Lo | Hi`";
    the error itself when no member, or several, are left."""
    if error.validator not in ("anyOf", "oneOf") or not error.context:
        return [error]
    groups: dict[Any, list[Any]] = {}
    for sub in error.context:
        groups.setdefault(sub.relative_schema_path[0], []).append(sub)

    def other_kind(sub: Any) -> bool:
        depth = len(sub.relative_path)
        tag = sub.validator in ("enum", "const") and depth <= 1
        return tag or (sub.validator in ("type", "additionalProperties") and depth == 0)

    left = [g for g in groups.values() if not any(other_kind(sub) for sub in g)]
    if len(left) != 1:
        return [error]
    return [e for sub in left[0] for e in _by_tag(sub)]


def _is_unknown(error: Any) -> bool:
    return error.validator in ("additionalProperties", "unevaluatedProperties") and isinstance(
        error.instance, dict
    )


def _absent(error: Any) -> list[str]:
    """The required fields ``error``'s object lacks."""
    return [k for k in error.validator_value if k not in error.instance]


def _extra(error: Any) -> list[str]:
    """The fields of ``error``'s object its schema does not declare."""
    allowed = (error.schema.get("properties") or {}).keys()
    return [k for k in error.instance if k not in allowed]


def _typer(names: dict[int, str]) -> Any:
    """A schema's type as said in a message: its name when the user named it, else written out."""
    return lambda schema: names.get(id(schema)) or flow_type_of_schema(schema, named=True)


def _missing(full: Path_, lacking: list[str], what: str, typ: str) -> Mismatch:
    said = ", ".join(f"`{n}`" for n in lacking[:-1])
    said = f"s {said} and `{lacking[-1]}`" if said else f" `{lacking[0]}`"
    return Mismatch(
        full,
        D.TYPE_MISMATCH,
        f"`{shown_path(full)}` lacks the required field{said} of {what} `{typ}`",
        field=lacking[0],
        missing=tuple(lacking),
    )


def _other(full: Path_, what: str, error: Any, typ: str) -> Mismatch:
    if error.validator in ("type", "enum", "const", "anyOf", "oneOf", "$ref"):
        found = json.dumps(error.instance, ensure_ascii=False)
        if len(found) > 60:
            found = found[:57] + "…"
        return Mismatch(
            full,
            D.TYPE_MISMATCH,
            f"`{shown_path(full)}` is {found}, but {what} wants `{typ}` here",
        )
    if error.validator == "pattern" and error.schema.get("x-flow-type") == "duration":
        found = json.dumps(error.instance, ensure_ascii=False)
        found = found if len(found) <= 60 else found[:57] + "…"
        return Mismatch(
            full,
            D.TYPE_MISMATCH,
            f"`{shown_path(full)}` is {found}, but {what} wants `duration` here",
            "write a duration such as `90s` or `1h30m` (units ms, s, m, h)",
        )
    return Mismatch(full, D.INVALID_VALUE, f"`{shown_path(full)}`: {error.message}")


def mismatch_lines(
    schema: dict[str, Any],
    value: Any,
    *,
    root: str = "input",
    what: str = "the flow's input type",
    limit: int = 5,
    names: dict[int, str] | None = None,
) -> list[str]:
    """:func:`mismatches` as at most ``limit`` lines (each with its hint), then ``… and N more``
    when there are more; ``[]`` when ``value`` fits.  ``names``: the types the user named, as
    :func:`mismatches` takes them (default: the schema's ``$defs``, by their names).  Raises
    ValueError as :func:`mismatches`."""
    names = type_names(schema, None) if names is None else names
    found = mismatches(schema, value, root=root, what=what, names=names)
    lines = [m.line() for m in found[:limit]]
    if len(found) > limit:
        lines.append(f"… and {len(found) - limit} more")
    return lines
