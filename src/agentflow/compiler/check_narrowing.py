"""Narrowing (docs/reference/types.md "Narrowing"): inside the branches of an ``if`` whose
condition tests a union's discriminant (``X.kind == "cat"``) or an optional against ``null``
(``X != null``), ``X`` has the narrower type.

``X`` is a name or a field path (``p``, ``input.pet``, ``r.answer``), keyed by its names and
by the symbol its first name resolves to, so a ``let`` that shadows the name inside the branch
is its own, unnarrowed, variable. Values never change once bound, so a narrowing holds for the
whole branch. The runtime evaluates fields dynamically from the same AST; narrowing is only
what the checker lets a program read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from agentflow.compiler.checker_shared import CheckerShared, Narrowing
from agentflow.compiler.types import (
    NULL,
    ErrorType,
    LiteralType,
    ObjectType,
    OptionalType,
    Type,
    UnionType,
    finite_values,
    literal_str,
    make_union,
    strip_optional,
)
from agentflow.grammar import ast


def path_of(e: ast.Expr) -> tuple[ast.Name, tuple[str, ...]] | None:
    """``p`` / ``input.pet`` as (its first name's node, its names); None for anything else."""
    names: list[str] = []
    while isinstance(e, ast.Member):
        names.append(e.name)
        e = e.obj
    if not isinstance(e, ast.Name):
        return None
    return e, (e.name, *reversed(names))


class NarrowingChecks(CheckerShared):
    """The narrowings of conditions and the narrowed types of names and field paths."""

    @contextmanager
    def narrowed(self, narrowing: Narrowing) -> Iterator[None]:
        """Check the ``with`` body under ``narrowing`` (nothing to do when it is empty)."""
        if not narrowing:
            yield
            return
        self.narrows.append(narrowing)
        try:
            yield
        finally:
            self.narrows.pop()

    def narrowed_type(self, e: ast.Expr) -> Type | None:
        """The type a narrowing in force gives the name or field path ``e`` (whose first name
        has been resolved already), or None."""
        if not self.narrows:
            return None
        p = path_of(e)
        if p is None:
            return None
        root, key = p
        for narrowing in reversed(self.narrows):
            hit = narrowing.get(key)
            if hit is not None:
                return hit[1] if self.refs.get(id(root)) is hit[0] else None
        return None

    def narrowings(self, cond: ast.Expr) -> tuple[Narrowing, Narrowing]:
        """What the (already checked) condition ``cond`` tells of its names and paths: the
        narrowing of the branch where it is true, and of the branch where it is false."""
        if isinstance(cond, ast.Unary) and cond.op == "not":
            yes, no = self.narrowings(cond.operand)
            return no, yes
        if not isinstance(cond, ast.Binary):
            return {}, {}
        if cond.op in ("and", "or"):
            lyes, lno = self.narrowings(cond.left)
            ryes, rno = self.narrowings(cond.right)
            if cond.op == "and":  # the right side was checked under the left's narrowing
                return {**lyes, **ryes}, {}
            return {}, {**lno, **rno}
        if cond.op not in ("==", "!="):
            return {}, {}
        yes, no = (
            self._equality(cond.left, cond.right)
            or self._equality(cond.right, cond.left)
            or ({}, {})
        )
        return (yes, no) if cond.op == "==" else (no, yes)

    def _equality(self, side: ast.Expr, lit: ast.Expr) -> tuple[Narrowing, Narrowing] | None:
        """``side == lit`` where ``side`` is ``X.f`` (a discriminant) or ``X`` and ``lit`` is
        ``null``: the (true, false) narrowings; None when it narrows nothing."""
        if isinstance(lit, ast.NullLit):
            p = path_of(side)
            sym = self.refs.get(id(p[0])) if p is not None else None
            if p is None or sym is None:
                return None
            t = self.types.get(id(side))
            if t is None or isinstance(t, ErrorType):
                return None
            inner = strip_optional(t, self.env)
            if inner == t or inner == NULL or isinstance(self.env.resolve(t), ErrorType):
                return None
            return {}, {p[1]: (sym, inner)}
        lt = self.types.get(id(lit))
        if not isinstance(side, ast.Member) or not isinstance(lt, LiteralType):
            return None
        p = path_of(side.obj)
        sym = self.refs.get(id(p[0])) if p is not None else None
        xt = self.types.get(id(side.obj))
        if p is None or sym is None or xt is None:
            return None
        r = self.env.resolve(xt)
        has_null = False
        if isinstance(r, OptionalType):
            r, has_null = self.env.resolve(r.inner), True
        if not isinstance(r, UnionType):
            return None
        members = [m for m in r.members if m != NULL]
        has_null = has_null or len(members) < len(r.members)
        yes: list[Type] = []
        no: list[Type] = []
        for m in members:
            mr = self.env.resolve(m)
            f = mr.fields.get(side.name) if isinstance(mr, ObjectType) else None
            if f is None:
                return None  # not a discriminant of every member (reported as unknown-field)
            values = finite_values(f.type, self.env)
            if values is None or lt.value in values:
                yes.append(m)
            if values is None or values != [lt.value] or f.optional:
                no.append(m)
        then_t = make_union(yes) if yes else None  # none: `no-overlap` says so
        else_t = make_union(no + [NULL] if has_null else no) if no else None
        result: tuple[Narrowing, Narrowing] = ({}, {})
        if then_t is not None and (len(yes) < len(members) or has_null):
            result[0][p[1]] = (sym, then_t)
        if else_t is not None and len(no) < len(members):
            result[1][p[1]] = (sym, else_t)
        return result

    def narrowing_hint(self, e: ast.Expr, union: UnionType, name: str) -> str | None:
        """For ``X.name`` where only some members of ``X``'s union have ``name``: how to
        narrow ``X`` on a discriminant field first (None when the members share no field of
        literal types)."""
        p = path_of(e.obj) if isinstance(e, ast.Member) else None
        if p is None:
            return None
        objs = [(m, self.env.resolve(m)) for m in union.members if m != NULL]
        if not all(isinstance(o, ObjectType) for _, o in objs):
            return None
        first = objs[0][1]
        assert isinstance(first, ObjectType)
        for field in first.fields:
            admits: list[tuple[Type, list[object]]] = []
            for m, o in objs:
                f = o.fields.get(field) if isinstance(o, ObjectType) else None
                vals = finite_values(f.type, self.env) if f is not None else None
                if not vals:
                    break
                admits.append((m, vals))
            else:
                having = [
                    (m, v)
                    for (m, v), (_, o) in zip(admits, objs, strict=True)
                    if isinstance(o, ObjectType) and name in o.fields
                ]
                if not having:
                    return None
                x = ".".join(p[1])
                m, vals = having[0]
                test = f"{x}.{field} == {literal_str(vals[0])}"
                return (
                    f"`{name}` is a field of `{self.said(m)}`: check the discriminant first — "
                    f"inside `if {test} {{ … }}`, `{x}` is narrowed to `{self.said(m)}`"
                )
        return None
