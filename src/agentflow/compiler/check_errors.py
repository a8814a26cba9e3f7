"""Errors as values in the checker (docs/reference/errors-as-values.md): the ``Outcome<T>`` of a
map that tolerates failed items (``map … tolerate 3 { … }``), its ``Error``, and the list helpers
``.values`` / ``.errors``.

``Outcome<T>`` is a closed object type ``{ ok: bool, value?: T, error?: Error }`` named for hovers
and messages; ``Error`` is ``{ code, message: text, step: text, source?: text }`` whose ``code`` is
the literal union of the run-time error codes (``core.vocabulary.ERROR_CODES``), so comparing it
with a code that does not exist is a type error.  The checker calls in here from ``e_MapExpr``
and ``member_type``; nothing here keeps state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentflow.compiler.types import (
    BOOL,
    TEXT,
    Field,
    ListType,
    LiteralType,
    ObjectType,
    OptionalType,
    Type,
    make_optional,
    make_union,
    type_str,
)
from agentflow.core import diagnostics as D
from agentflow.core.vocabulary import ERROR_CODES

if TYPE_CHECKING:
    from agentflow.grammar import ast

__all__ = [
    "ERROR_OBJECT",
    "OUTCOME_LIST_MEMBERS",
    "check_tolerance",
    "is_outcome",
    "outcome_list_member",
    "outcome_type",
    "outcome_value_type",
]

#: The name prefix of outcome types (``Outcome<T>``).
_OUTCOME = "Outcome"

#: ``Error``: what a failed step reports (docs/spec/PLAN_IR.md §8).
ERROR_OBJECT = ObjectType(
    {
        "code": Field(make_union([LiteralType(c) for c in ERROR_CODES])),
        "message": Field(TEXT),
        "step": Field(TEXT),
        "source": Field(make_optional(TEXT), optional=True),
    },
    name="Error",
)

#: The helpers of a list of outcomes: ``.values`` (the successes' values, input order) and
#: ``.errors`` (the failures' errors, input order).
OUTCOME_LIST_MEMBERS: tuple[str, ...] = ("values", "errors")


def outcome_type(value: Type) -> ObjectType:
    """``Outcome<value>``: ``{ ok: bool, value?: value, error?: Error }``."""
    return ObjectType(
        {
            "ok": Field(BOOL),
            "value": Field(make_optional(value), optional=True),
            "error": Field(make_optional(ERROR_OBJECT), optional=True),
        },
        name=f"{_OUTCOME}<{type_str(value)}>",
    )


def is_outcome(t: Type) -> bool:
    """True for an ``Outcome<T>`` type."""
    return (
        isinstance(t, ObjectType)
        and t.name is not None
        and t.name.startswith(_OUTCOME + "<")
        and set(t.fields) == {"ok", "value", "error"}
    )


def outcome_value_type(t: Type) -> Type | None:
    """``T`` of ``Outcome<T>`` (None for another type)."""
    if not is_outcome(t):
        return None
    assert isinstance(t, ObjectType)
    v = t.fields["value"].type
    return v.inner if isinstance(v, OptionalType) else v


def outcome_list_member(t: Type, name: str) -> Type | None:
    """The type of ``xs.values`` (``T[]``) or ``xs.errors`` (``Error[]``) when ``t`` is
    ``Outcome<T>[]``; None otherwise (the caller reports the unknown field)."""
    if not isinstance(t, ListType) or name not in OUTCOME_LIST_MEMBERS:
        return None
    value = outcome_value_type(t.elem)
    if value is None:
        return None
    return ListType(value) if name == "values" else ListType(ERROR_OBJECT)


def check_tolerance(e: ast.MapExpr, report) -> None:
    """``tolerate N`` must count whole items (0 or more); ``tolerate P%`` must be 0–100%.
    ``report(code, message, span, hint=…)`` is the checker's."""
    n, span = e.tolerate, e.tolerate_span or e.span
    if n is None:
        return
    if e.tolerate_percent:
        if not 0 <= n <= 100:
            report(
                D.INVALID_VALUE,
                f"`tolerate` must be a percentage from 0% to 100%, found {n}%",
                span,
                hint="`tolerate 100%` keeps going whatever fails",
            )
    elif not isinstance(n, int):
        report(
            D.INVALID_VALUE,
            f"`tolerate` counts failed items and must be a whole number, found {n}",
            span,
            hint=f"write a percentage instead: `tolerate {n}%`",
        )
