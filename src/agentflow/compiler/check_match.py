"""``match subject { pattern => value, … }`` in the checker (docs/reference/expressions.md
"match", docs/decisions.md "match"): each pattern against the subject's type as ``==`` checks a
literal (``no-overlap``, ``type-mismatch``), patterns already covered (``unreachable-arm``),
exhaustiveness over a finite subject type (``non-exhaustive-match``), the narrowing each arm
sees, and the arms' common type (as ``if … then … else``'s).
"""

from __future__ import annotations

from typing import Any

from agentflow.compiler.check_functions import arms_type
from agentflow.compiler.check_narrowing import path_of
from agentflow.compiler.checker_shared import CheckerShared, Narrowing
from agentflow.compiler.symbols import Symbol
from agentflow.compiler.types import (
    DURATION,
    INT,
    NULL,
    ErrorType,
    LiteralType,
    ObjectType,
    OptionalType,
    Type,
    UnionType,
    assignable,
    finite_values,
    is_numeric,
    is_textual,
    literal_str,
    make_union,
    overlaps,
    strip_optional,
    widen,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note, closest
from agentflow.grammar import ast

#: a pattern's value as ``==`` compares it: numbers by value (``1`` is ``1.0``), ``true`` never
#: a number, durations by length
_Key = tuple[str, Any]


def value_key(v: Any) -> _Key:
    """The key of a literal value under ``==`` (``1`` and ``1.0`` share one, ``true`` does
    not)."""
    if v is None:
        return ("null", None)
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int | float):
        return ("number", v)  # `1 == 1.0` and their hashes agree; big ints stay exact
    return ("text", v)


def _pattern_key(p: ast.Expr) -> _Key | None:
    """The key of a pattern's literal, None for anything else."""
    if isinstance(p, ast.DurationLit):
        return ("duration", p.ms)
    if isinstance(p, ast.Unary) and isinstance(p.operand, ast.NumberLit):
        return value_key(-p.operand.value)
    if isinstance(p, ast.NumberLit | ast.BoolLit):
        return value_key(p.value)
    if isinstance(p, ast.NullLit):
        return value_key(None)
    if isinstance(p, ast.StringLit) and p.is_plain:
        return value_key(p.text)
    return None


def _value_type(v: Any) -> Type:
    return NULL if v is None else LiteralType(v)


def _listed(values: list[str]) -> str:
    return ", ".join(values[:-1]) + f" and {values[-1]}" if len(values) > 1 else values[0]


class MatchChecks(CheckerShared):
    """The typing rule of ``match``."""

    def visit_MatchExpr(self, e: ast.MatchExpr, hint: Type | None) -> Type:
        st = self.infer(e.subject)
        ok = not isinstance(st, ErrorType)
        values = finite_values(st, self.env) if ok else None
        shown = self.source_text(e.subject)
        subject = f"`{shown}`" if shown != "…" else "the subject"
        path = path_of(e.subject)
        sym = self.refs.get(id(path[0])) if path is not None else None
        members = self._discriminated(e.subject) if ok else None
        covered: dict[_Key, ast.Expr] = {}
        wildcard: ast.MatchArm | None = None
        types: list[Type] = []
        for arm in e.arms:
            keys: list[_Key] = []
            written: list[ast.Expr] = []
            for p in arm.patterns:
                key = self._pattern(p, st, subject) if ok else None
                if key is None:
                    continue
                before = covered.get(key)
                if wildcard is None and before is not None:
                    self.report(
                        D.UNREACHABLE_ARM,
                        f"`{self.pattern_text(p)}` is matched by an arm before this one: "
                        "this pattern is never reached",
                        p.span,
                        notes=[Note("matched here", before.span)],
                        hint="remove the pattern (or the arm, when nothing else is left in it)",
                    )
                    continue
                if key in keys:  # `1 | 1`, `1 | 1.0`: the first of the arm matches it already
                    first = written[keys.index(key)]
                    self.report(
                        D.UNREACHABLE_ARM,
                        f"`{self.pattern_text(p)}` is repeated in this arm: the "
                        f"`{self.pattern_text(first)}` before it matches the same value, so this "
                        "pattern is never reached",
                        p.span,
                        notes=[Note("matched here", first.span)],
                        hint="remove the repeated pattern",
                    )
                    continue
                keys.append(key)
                written.append(p)
            if (
                arm.wildcard_span is not None
                and wildcard is None
                and values
                and covered
                and all(value_key(v) in covered for v in values)
            ):  # `true => …, false => …, _ => …`: the arms before cover every value already
                self.report(
                    D.UNREACHABLE_ARM,
                    f"this `_` arm is never reached: the arms before it cover every value of "
                    f"{subject} (`{self.said(st)}`)",
                    arm.span,
                    hint="remove it: without `_`, the `match` stays checked to cover every "
                    "value, so a value added to the type later is an error until an arm covers it",
                )
            if wildcard is not None:
                self.report(
                    D.UNREACHABLE_ARM,
                    "this arm is never reached: the `_` arm before it matches every value",
                    arm.span,
                    notes=[Note("`_` matches everything", wildcard.span)],
                    hint="move `_ => …` to the end of the `match`",
                )
            narrowing = self._arm_narrowing(
                path, sym, st, values, members, covered, keys, arm.wildcard_span is not None, ok
            )
            with self.narrowed(narrowing):
                types.append(self.infer(arm.value, hint))
            for key, p in zip(keys, written, strict=True):
                covered.setdefault(key, p)
            if arm.wildcard_span is not None and wildcard is None:
                wildcard = arm
        if wildcard is None and ok:
            self._exhaustive(e, st, values, covered, subject)
        return arms_type(self, types, hint)

    def pattern_text(self, p: ast.Expr) -> str:
        """A pattern as written (``"low"``, ``-1``, ``5m``, ``null``)."""
        if isinstance(p, ast.Unary) and isinstance(p.operand, ast.NumberLit):
            return f"-{p.operand.value}"
        if isinstance(p, ast.DurationLit):
            return p.text
        if isinstance(p, ast.NullLit):
            return "null"
        if isinstance(p, ast.BoolLit):
            return "true" if p.value else "false"
        if isinstance(p, ast.NumberLit):
            return repr(p.value)
        if isinstance(p, ast.StringLit):
            return literal_str(p.text)
        return "…"

    def _pattern(self, p: ast.Expr, st: Type, subject: str) -> _Key | None:
        """Type the pattern ``p`` against the subject's type ``st`` as ``subject == p`` is
        checked: a literal no value of ``st`` equals is ``no-overlap``, one of another kind
        ``type-mismatch``; its key, or None when it was reported."""
        was, self.constant_strings = self.constant_strings, True
        try:
            pt = self.infer(p)
        finally:
            self.constant_strings = was
        if isinstance(pt, ErrorType):
            return None
        ls, ps = strip_optional(st, self.env), strip_optional(pt, self.env)
        comparable = (
            assignable(pt, st, self.env)
            or assignable(st, pt, self.env)
            or (is_numeric(ls, self.env) and is_numeric(ps, self.env))
            or (is_textual(ls, self.env) and is_textual(ps, self.env))
            or assignable(widen(pt), widen(st), self.env)
            or assignable(widen(st), widen(pt), self.env)
            or pt == NULL
        )
        if pt == DURATION and self.env.resolve(ls) == DURATION:
            comparable = True
        elif not comparable:
            self.report(
                D.TYPE_MISMATCH,
                f"this pattern can never match: {subject} is `{self.said(st)}`, and "
                f"`{self.pattern_text(p)}` is `{self.said(widen(pt))}`",
                p.span,
                hint=f"a pattern is a value {subject} can have",
            )
            return None
        elif not overlaps(pt, st, self.env):
            values = finite_values(st, self.env)
            hint = None
            fix: D.Replacement | None = None
            if values:
                listed = [literal_str(v) for v in values]
                hint = f"{subject} can be {_listed(listed).replace(' and ', ' or ')}"
                if isinstance(p, ast.StringLit):
                    close = closest(p.text, [v for v in values if isinstance(v, str)])
                    if close:  # the literal as written, pasteable (as `==`'s hint gives it)
                        hint = f"did you mean {literal_str(close)}? ({hint})"
                        if p.is_plain:
                            fix = D.respelling(p.span, p.text, close, before='"', after='"')
            elif pt == NULL:
                hint = f"{subject} is never null: its type is `{self.said(st)}`, not optional"
            elif self.env.resolve(ls) == INT:
                hint = (
                    "an `int` is a whole number: remove this pattern, or declare "
                    f"{subject} a `number` if it can have a fraction"
                )
            else:
                hint = f"remove this pattern: no value of {subject} equals it"
            self.report(
                D.NO_OVERLAP,
                f"this pattern can never match: {subject} is `{self.said(st)}`, which has no "
                f"value `{self.pattern_text(p)}`",
                p.span,
                hint=hint,
                fix=fix,
            )
            return None
        return _pattern_key(p)

    def _exhaustive(
        self,
        e: ast.MatchExpr,
        st: Type,
        values: list[Any] | None,
        covered: dict[_Key, ast.Expr],
        subject: str,
    ) -> None:
        """``non-exhaustive-match`` when the arms leave a value of ``st`` without an arm."""
        if values is None:
            self.report(
                D.NON_EXHAUSTIVE_MATCH,
                f"this `match` has no `_` arm, and {subject} is `{self.said(st)}`: the arms cannot "
                "list all its values",
                e.keyword_span or e.span,
                hint="add a last arm `_ => …` for every other value",
            )
            return
        missing = [v for v in values if value_key(v) not in covered]
        if not missing:
            return
        shown = [literal_str(v) for v in missing]
        arm = " | ".join(shown)
        self.report(
            D.NON_EXHAUSTIVE_MATCH,
            f"this `match` does not cover {_listed(shown)}: {subject} is `{self.said(st)}`",
            e.keyword_span or e.span,
            hint=f"add the arm `{arm} => …`, or `_ => …` for every other value",
        )

    def _discriminated(self, subject: ast.Expr) -> list[tuple[Type, list[_Key] | None]] | None:
        """For ``X.f`` where ``X`` (a name or a field path) is a union of object types, or an
        optional one: each member with the keys of the values its field ``f`` can have (None:
        any value), ``null`` a member whose ``f`` is ``null`` (``X.f`` of a null ``X``, as the
        run reads it); None when ``subject`` is not such a discriminant."""
        if not isinstance(subject, ast.Member) or path_of(subject.obj) is None:
            return None
        xt = self.types.get(id(subject.obj))
        r = self.env.resolve(xt) if xt is not None else None
        out: list[tuple[Type, list[_Key] | None]] = []
        if isinstance(r, OptionalType):
            r = self.env.resolve(r.inner)
            out.append((NULL, [value_key(None)]))
        if not isinstance(r, UnionType):
            return None
        for m in r.members:
            if m == NULL:
                if not out:
                    out.append((NULL, [value_key(None)]))
                continue
            mr = self.env.resolve(m)
            f = mr.fields.get(subject.name) if isinstance(mr, ObjectType) else None
            if f is None:
                return None
            vals = None if f.optional else finite_values(f.type, self.env)
            out.append((m, None if vals is None else [value_key(v) for v in vals]))
        return out

    def _arm_narrowing(
        self,
        path: tuple[ast.Name, tuple[str, ...]] | None,
        sym: Symbol | None,
        st: Type,
        values: list[Any] | None,
        members: list[tuple[Type, list[_Key] | None]] | None,
        covered: dict[_Key, ast.Expr],
        keys: list[_Key],
        wildcard: bool,
        ok: bool,
    ) -> Narrowing:
        """What an arm knows of the subject: its patterns' values (``_``: the values no arm
        before took), and for a discriminant ``X.kind`` the members of ``X``'s union that can
        reach the arm."""
        out: Narrowing = {}
        if not ok or (not keys and not wildcard):
            return out
        if path is not None and sym is not None:
            if values is not None:
                left = [v for v in values if value_key(v) not in covered]
                taken = left if wildcard else [v for v in left if value_key(v) in keys]
                if taken and len(taken) < len(values):
                    out[path[1]] = (sym, make_union([_value_type(v) for v in taken]))
            elif (wildcard and value_key(None) in covered) or (
                not wildcard and value_key(None) not in keys
            ):
                inner = strip_optional(st, self.env)
                if inner != st:
                    out[path[1]] = (sym, inner)
        if members is not None and sym is not None and path is not None and len(path[1]) > 1:
            left_members = [
                (m, ks) for m, ks in members if ks is None or any(k not in covered for k in ks)
            ]
            reach = (
                left_members
                if wildcard
                else [(m, ks) for m, ks in left_members if ks is None or set(ks) & set(keys)]
            )
            if reach and len(reach) < len(members):
                out[path[1][:-1]] = (sym, make_union([m for m, _ in reach]))
        return out
