"""The values of `test` blocks (docs/reference/testing.md): constants, error codes, and whether
a stub's answer fits the contract it stands in for.

A test's ``input``, cases and stub values are constants (no names but the test's ``case``:
:func:`_constant`); the codes of ``fails`` and ``expect fail`` are run-time error codes
(:func:`_code`). :func:`_fits` holds a stub's value to the type of the step it answers and to
the field constraints of that type (``@range``, ``@length``, ``@pattern``): one
``stub-mismatch`` per answer, at the stub, with a note at the contract it breaks.
:func:`_values` and :func:`_failures` split a stub's answers into values and ``fails "code"``.

Used by :mod:`~agentflow.compiler.check_tests` (test-case structure),
:mod:`~agentflow.compiler.check_stubs` (agent, stage and tool stubs) and
:mod:`~agentflow.compiler.check_stub_steps` (``stub step`` / ``stub ask``); it only reports.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from typing import Any

from agentflow.compiler.check_expressions import literal_const
from agentflow.compiler.check_types import object_tags
from agentflow.compiler.checker_shared import CheckerShared
from agentflow.compiler.types import (
    JSON,
    VERDICT_OBJECT,
    ErrorType,
    ListType,
    LiteralType,
    MapType,
    ObjectType,
    Type,
    UnionType,
    VerdictType,
    assignable,
    strip_optional,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note, meant_among
from agentflow.core.spans import Span
from agentflow.core.vocabulary import ERROR_CODES
from agentflow.grammar import ast


def _constant(checker: CheckerShared, value: ast.Expr, what: str, case: str | None = None) -> bool:
    """True when ``value`` reads no name (but the test's ``case``); else reported."""
    for node in ast.walk(value):
        if isinstance(node, ast.Name) and node.name != case:
            checker.report(
                D.INVALID_VALUE,
                f"{what} must be a constant; `{node.name}` is a name",
                node.span,
                hint="write the value out: a literal, list or object",
            )
            return False
    return True


def _code(checker: CheckerShared, code: str, span: Span | None) -> None:
    if code not in ERROR_CODES and span is not None:
        checker.report(
            D.UNKNOWN_ERROR_CODE,
            f'"{code}" is not a run-time error code',
            span,
            hint=meant_among(span, code, ERROR_CODES) or "codes: " + ", ".join(ERROR_CODES),
        )


#: at most this many of an answer's problems are listed as notes of its one ``stub-mismatch``
_MAX_PROBLEMS = 4


def _fits(
    checker: CheckerShared,
    value: ast.Expr,
    want: Type,
    stub: ast.TestStub,
    what: str,
    where: Span | None,
    hint: str | None = None,
) -> None:
    """Report one ``stub-mismatch`` when ``value`` does not fit ``want`` (a ``Verdict`` is
    stubbed by its structure, ``{ passed: bool, failures: text[] }``): at the answer, with its
    first problem in the message and the others (up to :data:`_MAX_PROBLEMS`) as notes — one
    error per answer, not one per field. ``hint`` replaces the default hint."""
    if isinstance(want, VerdictType):
        want = VERDICT_OBJECT
    got = checker.infer(value, want)
    if isinstance(got, ErrorType) or isinstance(want, ErrorType):
        return
    if assignable(got, want, checker.env):
        _constraints_hold(checker, value, want, stub, what, where)
        return
    mark = len(checker.diags)
    checker.mismatch(value, got, want)
    found = checker.diags[mark:]
    del checker.diags[mark:]
    contract = [Note(f"{what} expects `{checker.said(want)}`", where)] if where is not None else []
    if not found:
        found = [
            D.Diagnostic(
                D.TYPE_MISMATCH,
                f"expected `{checker.said(want)}`, found {checker.said_words(got)}",
                value.span,
            )
        ]
    first, rest = found[0], found[1:]
    message = f"this stub does not fit {what}: {first.message}"
    notes = list(first.notes)
    if rest:
        message += f" (and {len(rest)} more problem{'s' if len(rest) > 1 else ''})"
        notes += [Note(d.message, d.span) for d in rest[:_MAX_PROBLEMS]]
        if len(rest) > _MAX_PROBLEMS:
            notes.append(Note(f"… {len(rest) - _MAX_PROBLEMS} more"))
    checker.diags.append(
        dataclasses.replace(
            first,
            code=D.STUB_MISMATCH,
            span=value.span if rest else first.span,
            message=message,
            notes=notes + contract,
            hint=hint
            or (None if D.replaceable(first.hint) else first.hint)
            or "update the stub to the contract, or the contract to the stub",
        )
    )


def _constraints_hold(
    checker: CheckerShared,
    value: ast.Expr,
    want: Type,
    stub: ast.TestStub,
    what: str,
    where: Span | None,
) -> None:
    """Report one ``stub-mismatch`` when a constant of the stub breaks a field constraint of
    ``want`` (``@range``, ``@length``, ``@pattern``): the contract a real answer is validated
    against, so a stub breaking it stands in for no answer the step could give. At the first
    such value, with the constraint's field as a note (``@format`` is checked at run time)."""
    problems = list(_broken_constraints(checker, value, want))
    if not problems:
        return
    (span, message, field_span), rest = problems[0], problems[1:]
    notes = [Note("the constraint is declared here", field_span)] if field_span else []
    notes += [Note(m, s) for s, m, _ in rest[:_MAX_PROBLEMS]]
    if where is not None:
        notes.append(Note(f"{what} expects `{checker.said(want)}`", where))
    more = f" (and {len(rest)} more problem{'s' if len(rest) > 1 else ''})" if rest else ""
    default = "write a value the contract accepts: a stub stands in for an answer, and is held to "
    default += "the same contract"
    if stub.kind in ("agent", "stage"):
        default += (
            '; to test an answer the agent cannot make conform, stub `fails "output_validation"`'
        )
    checker.report(
        D.STUB_MISMATCH,
        f"this stub does not fit {what}: {message}{more}",
        span,
        notes=notes,
        hint=default,
    )


def _broken_constraints(
    checker: CheckerShared, value: ast.Expr, want: Type
) -> Iterator[tuple[Span, str, Span | None]]:
    """``(span, message, the field's span)`` for each constant in ``value`` that breaks a
    constraint of the field of ``want`` it fills (objects and lists are walked; a union is
    walked into the members the value could be: :func:`_union_broken`)."""
    t = checker.env.resolve(strip_optional(want, checker.env))
    if isinstance(t, UnionType):
        yield from _union_broken(checker, value, t)
        return
    if isinstance(value, ast.ObjectLit) and isinstance(t, ObjectType):
        for entry in value.entries:
            f = t.fields.get(entry.key)
            if f is None:
                continue
            for name, args in f.constraints.items():
                broken = _breaks(entry.value, name, args)
                if broken is not None:
                    yield entry.value.span, f"`{entry.key}` {broken}", f.span
            yield from _broken_constraints(checker, entry.value, f.type)
    elif isinstance(value, ast.ListLit) and isinstance(t, ListType):
        for item in value.items:
            yield from _broken_constraints(checker, item, t.elem)


def _union_broken(
    checker: CheckerShared, value: ast.Expr, union: UnionType
) -> Iterator[tuple[Span, str, Span | None]]:
    """The broken constraints of ``value`` held to the union ``union``: the members it could be
    are those its tags (literal-typed fields: ``kind: "b"``) and its fields allow; when one of
    them takes it with every constraint holding, none; else the problems of the first (a
    tagged union has one such member, picked by its tag: the value fits no member)."""
    candidates = [m for m in union.members if _could_be(checker, value, m)]
    ranked = []
    for i, member in enumerate(candidates):
        problems = list(_broken_constraints(checker, value, member))
        if not problems:
            return
        t = checker.env.resolve(strip_optional(member, checker.env))
        written = (
            {e.key: e.value for e in value.entries} if isinstance(value, ast.ObjectLit) else {}
        )
        tags = object_tags(checker.env, written, t)[0] if isinstance(t, ObjectType) else []
        ranked.append(((-len(tags), len(problems), i), member, problems))
    if len(ranked) < 2:
        yield from ranked[0][2] if ranked else []
        return
    ranked.sort(key=lambda r: r[0])  # the closest first: by its tags, then fewest problems
    (_, member, first), others = ranked[0], ranked[1:]
    name = checker.said(union)
    span, message, field_span = first[0]
    yield (
        span,
        f"as `{checker.said(member)}` (the closest member of `{name}`), {message}",
        field_span,
    )
    yield from first[1:]
    for _, other, problems in others:  # the value fits no other member either: why, briefly
        span, message, field_span = problems[0]
        yield span, f"as `{checker.said(other)}`: {message}", field_span


def _could_be(checker: CheckerShared, value: ast.Expr, member: Type) -> bool:
    """Whether the stub constant ``value`` could be a value of the union member ``member``: an
    object literal by its keys and tags (a closed object has no other keys; every literal-typed
    field it writes holds that literal); any other value by its checked type."""
    t = checker.env.resolve(strip_optional(member, checker.env))
    if t == JSON:  # a `json` member takes any value (its constraints: none)
        return True
    if isinstance(value, ast.ObjectLit):
        if isinstance(t, MapType):  # any keys; its values as checked (constraints not walked)
            return True
        if not isinstance(t, ObjectType):
            return False
        written = {entry.key: entry.value for entry in value.entries}
        if any(key not in t.fields for key in written):
            return False
        for key, f in t.fields.items():
            if key not in written:
                if not f.optional:
                    return False
                continue
            tag = checker.env.resolve(f.type)
            if isinstance(tag, LiteralType):
                is_const, v = literal_const(written[key])
                if is_const and (
                    v != tag.value or isinstance(v, bool) != isinstance(tag.value, bool)
                ):
                    return False
        return True
    got = checker.types.get(id(value))
    return got is None or isinstance(got, ErrorType) or assignable(got, member, checker.env)


def _breaks(value: ast.Expr, name: str, args: tuple[Any, ...]) -> str | None:
    """How the constant ``value`` breaks the constraint ``@name(args)``, or None (it holds, or
    ``value`` is not a constant the constraint reads)."""
    shown = ", ".join("null" if a is None else json.dumps(a, ensure_ascii=False) for a in args)
    written = f"`@{name}({shown})`"
    if isinstance(value, ast.ListLit):
        if name != "length":
            return None
        v: Any = len(value.items)
        size = f"has {v} item{'' if v == 1 else 's'}"
    else:
        is_const, v = literal_const(value)
        if not is_const or v is None or isinstance(v, bool):
            return None
        size = f"has {len(v)} character{'' if len(v) == 1 else 's'}" if isinstance(v, str) else ""
    if name in ("range", "length"):
        lo, hi = (list(args) + [None, None])[:2]
        if name == "range":
            if isinstance(v, str):
                return None
            size = f"is {json.dumps(v)}"
        else:
            if not isinstance(value, ast.ListLit) and not isinstance(v, str):
                return None
            v = v if isinstance(v, int) else len(v)
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            return f"{size}, outside {written}"
        return None
    if name == "pattern" and isinstance(v, str) and args:
        try:
            if re.search(str(args[0]), v) is None:
                return f"is {json.dumps(v, ensure_ascii=False)}, which {written} does not match"
        except re.error:
            return None
    return None


def _values(stub: ast.TestStub) -> list[ast.Expr]:
    """Every answer of ``stub`` that is a value (not a ``fails "code"``), in call order."""
    if stub.values:
        return [v for v in stub.values if not isinstance(v, ast.StubFails)]
    return [stub.value] if stub.value is not None else []


def _failures(stub: ast.TestStub) -> list[ast.StubFails]:
    """Every ``fails "code"`` among the answers of ``stub``, in call order."""
    return [v for v in stub.values if isinstance(v, ast.StubFails)]
