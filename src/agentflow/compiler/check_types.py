"""The checker's types: type expressions to types, and how a mismatch is reported.

Resolves named types, aliases (and their cycles), object bodies with field constraints and
``extern tool`` signatures (docs/spec/LANGUAGE.md §3, §5), and reports a ``type-mismatch`` as
precisely as it can (into object and list literals, at an ``expect`` clause).  A mixin of
:class:`~agentflow.compiler.checker.Checker`, whose state it reads and writes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from agentflow.compiler import check_errors
from agentflow.compiler.check_expressions import literal_const
from agentflow.compiler.checker_shared import CheckerShared
from agentflow.compiler.contracts import flow_string
from agentflow.compiler.symbols import ToolSig, suggest_name
from agentflow.compiler.types import (
    BOOL,
    DURATION,
    ERROR,
    INT,
    JSON,
    MEMBER,
    NULL,
    NUMBER,
    PATH,
    PRIMS,
    TEXT,
    VERDICT,
    ErrorType,
    Field,
    ListType,
    LiteralType,
    MapType,
    NamedRef,
    NeverType,
    ObjectType,
    OptionalType,
    Prim,
    Type,
    TypeEnv,
    UnionType,
    UseType,
    assignable,
    finite_values,
    is_numeric,
    is_textual,
    literal_str,
    make_optional,
    make_union,
    object_mismatches,
    strip_optional,
    widen,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note, meant_hint
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    ERROR_PLACE_TYPE,
    ERROR_TYPE,
    OUTCOME_TYPE,
    VERDICT_TYPE,
    duration_ms,
)
from agentflow.grammar import ast

#: JSON Schema formats accepted by ``@format`` (draft 2020-12)
FORMATS = (
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
)


def _duration_hint(e: ast.Expr) -> str:
    """The hint for a number or a string where a duration goes: `timeout 2` → `2s`."""
    if isinstance(e, ast.NumberLit):
        return f"a duration needs a unit: `{e.value}s` (or `ms`, `m`, `h`)"
    if isinstance(e, ast.StringLit) and e.is_plain:
        try:
            duration_ms(e.text)
        except ValueError:
            pass
        else:
            return f"a duration is written without quotes: `{e.text.strip()}`"
    return "write a duration such as `90s`, `5m` or `1h30m`"


@dataclass(slots=True)
class _Expect:
    span: Span
    what: str


def _expect_clause(e: ast.Expr) -> _Expect | None:
    """The ``expect`` clause that gives ``e`` its type: of an ``agent`` block (its first, the one
    that counts) or of an ``ask``; None for anything else."""
    if isinstance(e, ast.AgentExpr):
        for c in e.clauses:
            if c.kind == "expect":
                return _Expect(c.span, "agent")
    if isinstance(e, ast.AskExpr) and e.expect is not None:
        return _Expect(e.expect.span, "ask")
    return None


def _has_literal(t: Type, env: TypeEnv) -> bool:
    t = env.resolve(t) if isinstance(t, NamedRef) and t.name in env.aliases else t
    if isinstance(t, LiteralType):
        return True
    if isinstance(t, (UnionType,)):
        return any(_has_literal(m, env) for m in t.members)
    if isinstance(t, OptionalType):
        return _has_literal(t.inner, env)
    if isinstance(t, ListType):
        return _has_literal(t.elem, env)
    return False


class TypeChecks(CheckerShared):
    """Type expressions, aliases, constraints, tool signatures, mismatches."""

    def mismatch(self, expr: ast.Expr, got: Type, want: Type) -> None:
        """Report that ``expr`` (of type ``got``) is not assignable to ``want``, as precisely as
        possible (into object and list literals)."""
        want_r = self.env.resolve(strip_optional(want, self.env))
        if isinstance(expr, ast.ObjectLit) and isinstance(want_r, ObjectType):
            src = self.env.resolve(got)
            if isinstance(src, ObjectType):
                problems = object_mismatches(src, want_r, self.env)
                entries = {e.key: e for e in expr.entries}
                wname = self.said(want)
                reported = False
                missing = [f for k, f in problems if k == "missing"]
                # a misspelt key (`titel` for a missing `title`) is one mistake: one error, on
                # the key, rather than "missing `title`" and "no field `titel`" on the `{`
                typos: dict[str, str] = {}
                for kind, fname in problems:
                    if kind == "unknown":
                        near = suggest_name(fname, [m for m in missing if m not in typos.values()])
                        if near:
                            typos[fname] = near
                for kind, fname in problems:
                    if kind == "missing":
                        if fname in typos.values():
                            continue
                        fdecl = want_r.fields[fname]
                        self.report(
                            D.TYPE_MISMATCH,
                            f"missing field `{fname}` in an object literal of type `{wname}`",
                            expr.span,
                            notes=[Note(f"field `{fname}` is required", fdecl.span)],
                        )
                        reported = True
                    elif kind == "unknown":
                        entry = entries.get(fname)
                        meant = typos.get(fname)
                        if meant is not None:
                            notes = [
                                Note(f"field `{meant}` is required", want_r.fields[meant].span)
                            ]
                        else:
                            names = ", ".join(f"`{f}`" for f in want_r.fields) or "none"
                            notes = [Note(f"the fields of `{wname}` are {names}")]
                            meant = suggest_name(fname, list(want_r.fields))
                        fix = None
                        if entry is not None:  # the key as written: `titel` or `"titel"`
                            quoted = entry.key_span.end - entry.key_span.start != len(fname)
                            q = '"' if quoted else ""
                            fix = D.respelling(entry.key_span, fname, meant, before=q, after=q)
                        self.report(
                            D.TYPE_MISMATCH,
                            f"`{wname}` has no field `{fname}`",
                            entry.key_span if entry else expr.span,
                            notes=notes,
                            hint=meant_hint(meant) if meant else None,
                            fix=fix,
                        )
                        reported = True
                    else:
                        entry = entries.get(fname)
                        if entry is not None:
                            self.mismatch(
                                entry.value,
                                self.types.get(id(entry.value), ERROR),
                                want_r.fields[fname].type,
                            )
                            reported = True
                if reported:
                    return
        if isinstance(expr, ast.ObjectLit) and isinstance(want_r, UnionType):
            if self._union_mismatch(expr, got, want_r):
                return
        if isinstance(expr, ast.ListLit) and isinstance(want_r, ListType):
            done = False
            for item in expr.items:
                it = self.types.get(id(item), ERROR)
                if not assignable(it, want_r.elem, self.env):
                    self.mismatch(item, it, want_r.elem)
                    done = True
            if done:
                return
        if isinstance(expr, ast.CondExpr | ast.MatchExpr) and self._arms_mismatch(expr, want):
            return
        if isinstance(got, ErrorType) or isinstance(want, ErrorType):
            return
        if isinstance(got, UseType):
            self.report(
                D.TYPE_MISMATCH,
                f"`{got.alias}` is a `use {got.kind}` alias, not a value "
                f"(expected `{self.said(want)}`)",
                expr.span,
                hint="a `use` alias can only be the target of `agent(…)`",
            )
            return
        shown = got if _has_literal(want, self.env) else widen(got)
        if want == DURATION and isinstance(expr, (ast.NumberLit, ast.StringLit)):
            self.report(
                D.TYPE_MISMATCH,
                f"expected `duration`, found {self.said_words(shown)}",
                expr.span,
                hint=_duration_hint(expr),
            )
            return
        expect = _expect_clause(expr)
        if expect is not None:
            # the value of `agent(…) { … }` / `ask … expect T` is its `expect` type: that clause
            # is what to change (or the expected type), not the block's first line
            self.report(
                D.TYPE_MISMATCH,
                f"expected `{self.said(want)}`, found {self.said_words(shown)}",
                expect.span,
                notes=[
                    Note(f"the answer of this `{expect.what}` has its `expect` type", expr.span)
                ],
                hint=f"`expect {self.said(want)}` would fit here",
            )
            return
        widened = self._widened_let(expr, want)
        self.report(
            D.TYPE_MISMATCH,
            f"expected `{self.said(want)}`, found {self.said_words(shown)}",
            expr.span,
            notes=([widened[1]] if widened else []) + self.alias_notes(want),
            hint=(widened[0] if widened else None)
            or self._literal_hint(expr, want)
            or self._mismatch_hint(got, want)
            or _int_hint(expr, got, want, self.env)
            or self._conversion_hint(expr, got, want),
        )

    def _arms_mismatch(self, expr: ast.CondExpr | ast.MatchExpr, want: Type) -> bool:
        """Report each arm of ``if … then … else`` / ``match`` whose value does not fit
        ``want``, at that value, naming the arm (False: none is known not to fit — the plain
        mismatch over the whole expression says it)."""
        if isinstance(expr, ast.CondExpr):
            arms = [(expr.then, "in the `then` branch"), (expr.else_, "in the `else` branch")]
            whole, each = "if … then … else", "each branch"
        else:
            arms = [
                (
                    arm.value,
                    "in the arm `"
                    + (
                        " | ".join(self.pattern_text(p) for p in arm.patterns)
                        if arm.patterns
                        else "_"
                    )
                    + " => …`",
                )
                for arm in expr.arms
            ]
            whole, each = "match", "each arm's value"
        reported = False
        for value, where in arms:
            got = self.types.get(id(value))
            if got is None or isinstance(got, ErrorType) or assignable(got, want, self.env):
                continue
            before = len(self.diags)
            self.mismatch(value, got, want)
            for d in self.diags[before:]:
                if d.span == value.span and d.message.startswith("expected `"):
                    d.message += f" {where}"
                    if D.replaceable(d.hint):
                        d.hint = (
                            f"the whole `{whole}` is expected to be `{self.said(want)}`, so is "
                            f"{each}: change this one, or the expected type"
                        )
            reported = True
        return reported

    def _union_mismatch(self, expr: ast.ObjectLit, got: Type, union: UnionType) -> bool:
        """Report why the object literal ``expr`` fits no member of ``union`` (False: it has
        no object member, the plain mismatch says it): the problems of the closest member —
        the one its tags pick (a literal-typed field it writes, ``kind: "b"``; the others are
        not candidates, as TypeScript reads a discriminated union), else the one with the
        fewest problems (then most keys in common) — the first named ``as `A` (…)``, and each
        other candidate's first problem as a note (docs/reference/types.md "Unions")."""
        depth, budget = getattr(self, "_union_reads", (0, _UNION_READS))
        if depth == 0:
            budget = _UNION_READS  # a new literal: its own budget
        if budget <= 0:  # the members of many nested unions read already: the plain message
            return False
        written = {entry.key: entry.value for entry in expr.entries}
        candidates, tagged = [], []
        for member in union.members:
            t = self.env.resolve(member)
            if not isinstance(t, ObjectType):
                continue
            tags, contradicted = object_tags(self.env, written, t)
            if contradicted:
                tagged.append(t)
            else:
                candidates.append((member, t, tags))
        most = max((len(tags) for _, _, tags in candidates), default=0)
        ranked = []
        try:
            for i, (member, t, tags) in enumerate(candidates):
                if len(tags) < most:  # a member its tags pick is the one to read
                    continue
                budget = getattr(self, "_union_reads", (0, budget))[1] - 1
                setattr(self, "_union_reads", (depth + 1, budget))  # noqa: B010 - the mixin's
                mark = len(self.diags)
                self.mismatch(expr, got, member)
                problems = self.diags[mark:]
                del self.diags[mark:]
                shared = sum(key in t.fields for key in written)
                ranked.append(((len(problems), -shared, i), member, tags, problems))
        finally:
            left = getattr(self, "_union_reads", (0, budget))[1]
            setattr(self, "_union_reads", (depth, left))  # noqa: B010
        name = self.said(union)
        if not ranked:
            if not tagged:
                return False
            self._no_member_tagged(expr, written, tagged, name)
            return True
        ranked.sort(key=lambda r: r[0])
        _, member, tags, problems = ranked[0]
        if not problems:  # pragma: no cover - a member that takes it: the union does
            return False
        how = f"the member of `{name}` its `{'`, `'.join(tags)}` picks"
        others = [] if tags else [(m, p) for _, m, _, p in ranked[1:] if p]
        if not tags:
            how = f"the closest member of `{name}`"
        first = problems[0]
        notes = list(first.notes) + [
            Note(f"as `{self.said(m)}`: {p[0].message}", p[0].span) for m, p in others[:4]
        ]
        message = f"as `{self.said(member)}` ({how}), {first.message}"
        if first.message.startswith("as `"):  # an inner union said it, where the problem is
            message = first.message
        self.diags.append(replace(first, message=message, notes=notes))
        self.diags.extend(problems[1:])
        return True

    def _no_member_tagged(
        self,
        expr: ast.ObjectLit,
        written: dict[str, ast.Expr],
        members: list[ObjectType],
        name: str,
    ) -> None:
        """Report an object literal whose tag no member of the union ``name`` has."""
        for key, value in written.items():
            tags = [
                m.fields[key].type
                for m in members
                if key in m.fields and isinstance(self.env.resolve(m.fields[key].type), LiteralType)
            ]
            if tags:
                known = ", ".join(sorted({self.said(t) for t in tags}))
                self.report(
                    D.TYPE_MISMATCH,
                    f"no member of `{name}` has this `{key}`: expected one of {known}",
                    value.span,
                )
                return

    def _unwidened(self, e: ast.Expr) -> Type | None:
        """The type of checked ``e`` before a join widened it: an ``if … then … else`` (or a
        ``match``) is the union of its arms' types (``"high" | "low"``, not ``text``)."""
        if isinstance(e, ast.CondExpr):
            arms = [self._unwidened(e.then), self._unwidened(e.else_)]
            return None if None in arms else make_union([a for a in arms if a is not None])
        if isinstance(e, ast.MatchExpr):
            values = [self._unwidened(arm.value) for arm in e.arms]
            return None if None in values else make_union([a for a in values if a is not None])
        return self.types.get(id(e))

    def _widened_let(self, expr: ast.Expr, want: Type) -> tuple[str, Note] | None:
        """``(hint, note at the let)`` when ``expr`` names a ``let`` with no type whose value
        fits ``want`` before the ``let`` widened it (``let prio = if c then "high" else "low"``
        is a ``text``, its value ``"high" | "low"``): annotate the ``let``."""
        if not isinstance(expr, ast.Name):
            return None
        sym = self.lookup(expr.name)
        if sym is None or sym.kind != "let":
            return None
        decl = sym.decl
        if not isinstance(decl, ast.LetStmt) or decl.annotation is not None:
            return None
        value_t = self._unwidened(decl.value)
        if value_t is None or value_t == sym.type or not assignable(value_t, want, self.env):
            return None
        named = next((n for n, t in self.env.aliases.items() if t == want), None)
        written = named or self.said(want)
        return (
            f"annotate the `let`: `let {decl.name.name}: {written} = …` (a `let` with no type "
            f"widens its value's literal type `{self.said(value_t)}` to `{self.said(sym.type)}`)",
            Note(f"`{decl.name.name}` is declared here, with no type", decl.name.span),
        )

    def _mismatch_hint(self, got: Type, want: Type) -> str | None:
        """The fix of a plain ``type-mismatch``, for the cases with a known one: a computed
        ``text`` where a ``member`` is wanted; an optional value where a value is wanted."""
        want_r = self.env.resolve(strip_optional(want, self.env))
        got_r = self.env.resolve(got)
        if want_r == MEMBER and is_textual(got, self.env):
            return (
                "a `member` is the name of a team member, which a `text` computed at run time "
                "is not known to be: declare this one `text` (`agent(team.member(t))` takes a "
                "`text` too, checked when the step runs), or let an agent whose contract has a "
                "`member` field choose it"
            )
        if want_r == PATH and got_r == TEXT:
            return (
                "a computed `text` is not known to be a `path`: declare where it comes from as "
                "one (`input { file: path }`, an agent's `expect { file: path }`), or write it "
                'as a path string, `"${…}"`'
            )
        if isinstance(got_r, OptionalType) and not isinstance(want_r, OptionalType):
            if assignable(got_r.inner, want, self.env):
                return (
                    f"the value may be `null` (`{self.said(got)}`): give a default with `??` "
                    "(`value ?? default`)"
                )
        return None

    def _literal_hint(self, expr: ast.Expr, want: Type) -> str | None:
        """``did you mean "high"?`` for a string literal where a union of literals is wanted
        and one of its texts is close (``let s: Sev = "hgh"``), with the respelling as its
        quick fix; else None (docs/reference/types.md "Assignability")."""
        if not isinstance(expr, ast.StringLit) or not expr.is_plain or len(expr.parts) != 1:
            return None
        written = expr.parts[0]
        if not isinstance(written, str):
            return None
        values = finite_values(want, self.env)
        texts = [v for v in values or [] if isinstance(v, str)]
        meant = suggest_name(written, texts) if written not in texts else None
        if meant is None:
            return None
        hint = f"did you mean {literal_str(meant)}?"
        fix = D.respelling(expr.span, written, meant, before='"', after='"')
        return D.FixedHint(hint, fix) if fix is not None else hint

    def _conversion_hint(self, expr: ast.Expr, got: Type, want: Type) -> D.WeakHint | None:
        """The fix of a plain ``type-mismatch`` no other hint knows, said from the types alone
        (a :class:`~agentflow.core.diagnostics.WeakHint`: a site that knows more replaces it);
        else None (the code's usual hint, ``FALLBACK_HINTS``, is given last)."""
        text = self._conversion_text(expr, got, want)
        return D.WeakHint(text) if text else None

    def _conversion_text(self, expr: ast.Expr, got: Type, want: Type) -> str | None:
        """A number or `bool` where `text` is wanted (``"${…}"`` or ``to_text``; a literal
        written as text), text where a number is (``parse_int`` / ``parse_number``), one value
        where a list is (``[x]``); else None."""
        want_r = self.env.resolve(strip_optional(want, self.env))
        got_w = widen(self.env.resolve(strip_optional(got, self.env)))
        x = self.source_text(expr)
        text_wanted = assignable(TEXT, want_r, self.env)
        if text_wanted and isinstance(expr, ast.NumberLit | ast.BoolLit):
            value = str(expr.value).lower() if isinstance(expr, ast.BoolLit) else expr.value
            return f'text is written in quotes: `"{value}"`'
        if text_wanted and (is_numeric(got_w, self.env) or got_w == BOOL):
            return f'a value becomes text inside a string: `"${{{x}}}"` (or `to_text({x})`)'
        if want_r in (INT, NUMBER) and is_textual(got_w, self.env):
            if isinstance(expr, ast.StringLit):  # `"4"`: the number without quotes, if one
                plain = expr.text.strip() if expr.is_plain else ""
                numeric = re.fullmatch(r"-?\d+(\.\d+)?", plain)
                return f"write the number without quotes: `{plain}`" if numeric else None
            return f"`parse_int({x})` or `parse_number({x})` reads a number from text"
        if isinstance(want_r, ListType) and assignable(got, want_r.elem, self.env):
            return f"a list of this one value is written `[{x}]`"
        return None

    def _type_hint(self, name: str) -> tuple[str | None, str | None]:
        """The hint of `unknown-type` and the type name it says to write instead (its quick
        fix), or ``(None, None)``: did-you-mean among the declared types when one is close (the
        user's own `Record` beats the foreign-name hint for `record`), else the agentflow
        spelling of a type name from another language (`string` → `text`), else did-you-mean
        among the builtin types, whatever the case (`Txt` → `text`)."""
        declared = set(self.type_decls) | set(self.env.externs)
        meant = suggest_name(name, declared - set(PRIMS))
        if meant:
            return meant_hint(meant), meant
        builtins = set(PRIMS) | {VERDICT_TYPE}
        # (`Txt` → `text`: the builtins are lower case, so the case is not a difference)
        builtin = suggest_name(name, builtins) or suggest_name(
            name.lower(), builtins - {VERDICT_TYPE}
        )
        if builtin and builtin.lower() == name.lower():
            return meant_hint(builtin), builtin  # `Bool`, `Text`: only the case differs
        foreign = D.foreign_type_hint(name)
        if foreign is not None:
            return foreign, D.foreign_type_meant(name)
        return (meant_hint(builtin), builtin) if builtin else (None, None)

    def _not_imported(self, t: ast.NamedType) -> None:
        """A type name of this file that only an imported type brought in."""
        imp = next(i for i in self.imports.declared if i.name == t.name)
        self.report(
            D.UNKNOWN_TYPE,
            f"`{t.name}` is not imported (`{imp.via}` from `{imp.decl.path}` refers to it)",
            t.span,
            hint=f"import it too: `import {{ {_written_import(imp.decl, imp.via)}, {t.name} }} "
            f'from "{imp.decl.path}"`',
        )

    def _bare_words(self, t: ast.UnionType) -> set[int]:
        """``risk: low | high``: the members of a union that are bare lower-case words naming
        no type (and close to none), meant as the literals ``"low" | "high"``.  Reported once,
        as one `unknown-type` at the first of them with the literal union as the hint; their
        ids are returned (each then stands for its literal, so nothing cascades)."""
        words = [
            m
            for m in t.members
            if isinstance(m, ast.NamedType)
            and m.name[:1].islower()
            and not self._type_name_known(m.name)
            and self._type_hint(m.name)[0] is None
        ]
        if not words:
            return set()
        written = " | ".join(f'"{m.name}"' if m in words else _written(m) for m in t.members)
        names = ", ".join(f"`{m.name}`" for m in words)
        plural = "s" if len(words) > 1 else ""
        self.report(
            D.UNKNOWN_TYPE,
            f"unknown type{plural} {names}: a choice among words is a union of string literals",
            words[0].span.to(words[-1].span),
            hint=f"quote the words: `{written}`",
        )
        return {id(m) for m in words}

    def _type_name_known(self, name: str) -> bool:
        return (
            name in PRIMS
            or name == VERDICT_TYPE
            or name in self.env.objects
            or name in self.type_decls
            or name in self.alias_decls
            or name in self.env.externs
            or name in self.error_names
            or name in (ERROR_TYPE, ERROR_PLACE_TYPE, OUTCOME_TYPE)
        )

    def resolve_type(self, t: ast.TypeExpr, alias_stack: tuple[str, ...] = ()) -> Type:
        """Turn a written type into a semantic type, reporting unknown names, duplicate fields
        and invalid constraints."""
        if isinstance(t, ast.NamedType):
            name = t.name
            if self.import_refs:  # a type of an imported declaration, renamed here
                name = self.import_refs.get(id(t), name)
            if name in PRIMS:
                return PRIMS[name]
            if (
                self.hidden
                and name in self.hidden
                and t.span.file == self.module.file
                and name not in self.error_names  # its import failed: reported there
            ):
                self._not_imported(t)
                return ERROR
            if name == VERDICT_TYPE:
                return VERDICT
            if name in self.env.objects or (
                name in self.type_decls
                and isinstance(decl := self.type_decls[name], ast.TypeDecl)
                and decl.body is not None
            ):
                return NamedRef(name)
            if name in self.alias_decls:
                return self.resolve_alias(name, alias_stack)
            if name in self.env.externs:
                return self.env.externs[name]
            if name in self.error_names or (
                name == OUTCOME_TYPE and name in self.redefined_builtins
            ):
                return ERROR  # (`type Outcome { … }` is the one error, not each use of it)
            builtin = check_errors.resolve_builtin_name(name, t.span, self.report)
            if builtin is not None:  # Error, ErrorPlace; `Outcome` without its `<T>`
                return builtin
            hint, meant = self._type_hint(name)
            self.report(
                D.UNKNOWN_TYPE,
                f"unknown type `{name}`",
                t.span,
                hint=hint
                or f"declare it (`type {name} {{ … }}`) or import it from the file that "
                f'declares it (`import {{ {name} }} from "./file.flow"`)',
                fix=D.respelling(t.span, name, meant),
            )
            return ERROR
        if isinstance(t, ast.GenericType):  # Outcome<T>
            arg = self.resolve_type(t.arg, alias_stack)
            return check_errors.resolve_generic(t, arg, self.report)
        if isinstance(t, ast.ArrayType):
            return ListType(self.resolve_type(t.element, alias_stack))
        if isinstance(t, ast.OptionalType):
            inner = self.resolve_type(t.inner, alias_stack)
            return ERROR if isinstance(inner, ErrorType) else make_optional(inner)
        if isinstance(t, ast.UnionType):
            words = self._bare_words(t)
            members = [
                LiteralType(m.name)
                if isinstance(m, ast.NamedType) and id(m) in words
                else self.resolve_type(m, alias_stack)
                for m in t.members
            ]
            if any(isinstance(m, ast.OptionalType) for m in t.members):
                self._optional_member(t)
            if any(m == NULL or isinstance(m, OptionalType) for m in members):
                # a union is a set of values: `A | B?`, `A | B | null` and `(A | B)?` are one
                # type, `(A | B)?` — a field of it may be absent however null got in
                # (docs/reference/types.md "Optional members of a union")
                parts = [m.inner if isinstance(m, OptionalType) else m for m in members]
                rest = make_union([m for m in parts if m != NULL])
                return make_optional(rest) if not isinstance(rest, NeverType) else NULL
            return make_union(members)
        if isinstance(t, ast.LiteralType):
            if t.value is None:
                return NULL
            return LiteralType(t.value)
        if isinstance(t, ast.MapType):
            return MapType(self.resolve_type(t.value, alias_stack))
        if isinstance(t, ast.ObjectType):
            return self.object_type(t, None, None, alias_stack)
        return ERROR

    def admits_null(self, t: Type, written: ast.TypeExpr) -> bool:
        """True when a field (or a tool parameter) of resolved type ``t``, written ``written``,
        may be left out: its type admits null — ``T?``, ``null``, a union with either (resolved
        to ``T?``), through aliases — or it is ``json`` written ``json?`` (``json`` alone
        holds null as a value but is required: docs/reference/types.md "Objects")."""
        if isinstance(t, OptionalType):
            return True
        if type(t) is not Prim:  # (`t == NULL`, `t == JSON`, without their `__eq__` calls)
            return False
        return t.name == "null" or (t.name == "json" and self._written_optional(written, ()))

    def _written_optional(self, t: ast.TypeExpr, seen: tuple[str, ...]) -> bool:
        """True when ``t`` is written with a `?` or `null` at its top (a union's member, an
        alias's type included)."""
        if isinstance(t, ast.OptionalType):
            return True
        if isinstance(t, ast.LiteralType):
            return t.value is None
        if isinstance(t, ast.UnionType):
            return any(self._written_optional(m, seen) for m in t.members)
        if isinstance(t, ast.NamedType) and t.name not in seen:
            decl = self.alias_decls.get(t.name)
            if decl is not None and decl.alias is not None:
                return self._written_optional(decl.alias, (*seen, t.name))
        return False

    def _optional_member(self, t: ast.UnionType) -> None:
        """``optional-union-member``: a `?` written on a member of a union binds to that member
        alone (as `[]` does), which reads as if only it were optional; the union admits null
        all the same. Reported once per written union (an alias is resolved more than once)."""
        if any(d.code == D.OPTIONAL_UNION_MEMBER and d.span == t.span for d in self.diags):
            return
        marked = [m for m in t.members if isinstance(m, ast.OptionalType)]
        plain = [m.inner if isinstance(m, ast.OptionalType) else m for m in t.members]
        whole = " | ".join(written_type(m) for m in plain)
        which = ", ".join(f"`{written_type(m.inner)}`" for m in marked)
        self.report(
            D.OPTIONAL_UNION_MEMBER,
            f"`?` applies to {which} alone, not to the union `{whole}`: the union admits "
            "`null` either way, and a field of it may be left out",
            t.span,
            hint=f"write `({whole})?` to say the whole union is optional",
            # (a union over lines is left to the writer: it may hold comments)
            fix=D.Replacement(t.span, f"({whole})?", f"Write `({whole})?`")
            if t.span.line == t.span.end_line
            else None,
        )

    def object_type(
        self,
        t: ast.ObjectType,
        name: str | None,
        doc: str | None,
        alias_stack: tuple[str, ...] = (),
    ) -> ObjectType:
        fields: dict[str, Field] = {}
        first: dict[str, ast.FieldDecl] = {}
        for fd in t.fields:
            fname = fd.name.name
            ft = self.resolve_type(fd.type, alias_stack)
            constraints = self.constraints(fd, ft)
            if fname in first:
                self.report(
                    D.DUPLICATE_FIELD,
                    f"field `{fname}` is declared twice",
                    fd.name.span,
                    notes=[Note("first declared here", first[fname].name.span)],
                )
                continue
            first[fname] = fd
            optional = self.admits_null(ft, fd.type)
            fields[fname] = Field(ft, optional, constraints, fd.doc, fd.name.span)
        return ObjectType(fields, name, doc)

    def constraints(self, fd: ast.FieldDecl, ft: Type) -> dict[str, tuple[Any, ...]]:
        out: dict[str, tuple[Any, ...]] = {}
        base = self.env.resolve(strip_optional(ft, self.env))
        for c in fd.constraints:
            cname = c.name.name
            if cname not in ("range", "length", "pattern", "format"):
                meant = suggest_name(cname, ["range", "length", "pattern", "format"])
                self.report(
                    D.INVALID_CONSTRAINT,
                    f"unknown constraint `@{cname}`",
                    c.name.span,
                    hint=meant_hint(meant) if meant else None,
                    fix=D.respelling(c.name.span, cname, meant),
                )
                continue
            if cname in out:
                self.report(D.INVALID_CONSTRAINT, f"constraint `@{cname}` is given twice", c.span)
                continue
            values = []
            ok = True
            for a in c.args:
                is_const, v = literal_const(a)
                if not is_const:
                    self.report(
                        D.INVALID_CONSTRAINT,
                        f"the arguments of `@{cname}` must be literals",
                        a.span,
                    )
                    ok = False
                    break
                values.append(v)
            if not ok:
                continue
            if isinstance(base, ErrorType) or base == JSON:
                applies = True
            elif cname == "range":
                applies = is_numeric(base, self.env)
            elif cname == "length":
                applies = is_textual(base, self.env) or isinstance(base, (ListType, MapType))
            else:
                applies = is_textual(base, self.env)
            if not applies:
                what = {
                    "range": "numbers (`int`, `number`)",
                    "length": "text, arrays and maps",
                    "pattern": "text",
                    "format": "text",
                }[cname]
                self.report(
                    D.INVALID_CONSTRAINT,
                    f"`@{cname}` does not apply to `{self.said(ft)}`: it constrains {what}",
                    c.span,
                )
                continue
            if not self.constraint_args(c, cname, values):
                continue
            out[cname] = tuple(values)
        return out

    def constraint_args(self, c: ast.Constraint, cname: str, values: list[Any]) -> bool:
        def num(v: Any) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool)

        if cname in ("range", "length"):
            if len(values) != 2 or not all(v is None or num(v) for v in values):
                self.report(
                    D.INVALID_CONSTRAINT,
                    f"`@{cname}` takes two numbers: `@{cname}(min, max)`",
                    c.span,
                )
                return False
            lo, hi = values
            if cname == "length":
                for v, a in zip(values, c.args, strict=False):
                    if v is not None and (not isinstance(v, int) or v < 0):
                        self.report(
                            D.INVALID_VALUE,
                            "a length bound must be a non-negative integer",
                            a.span,
                        )
                        return False
            if lo is not None and hi is not None and lo > hi:
                self.report(
                    D.INVALID_VALUE,
                    f"`@{cname}` minimum {lo} is greater than its maximum {hi}",
                    c.span,
                )
                return False
            return True
        if len(values) != 1 or not isinstance(values[0], str):
            self.report(
                D.INVALID_CONSTRAINT, f'`@{cname}` takes one string: `@{cname}("…")`', c.span
            )
            return False
        if cname == "pattern":
            try:
                re.compile(values[0])
            except re.error as exc:
                self.report(D.INVALID_VALUE, f"invalid regular expression: {exc}", c.args[0].span)
                return False
        if cname == "format" and values[0] not in FORMATS:
            meant = suggest_name(values[0], list(FORMATS))
            self.report(
                D.INVALID_VALUE,
                f"unknown format `{values[0]}`",
                c.args[0].span,
                hint=meant_hint(meant) if meant else None,
                fix=D.respelling(c.args[0].span, values[0], meant, before='"', after='"'),
            )
            return False
        return True

    def resolve_alias(self, name: str, stack: tuple[str, ...]) -> Type:
        if name in self.alias_done:
            return self.alias_done[name]
        if name in stack:
            cycle = stack[stack.index(name) :]
            decls = [self.alias_decls[n] for n in cycle]
            if not any(n in self.alias_reported for n in cycle):
                first = min(decls, key=lambda d: (d.span.start, d.span.line, d.span.column))
                others = [d for d in decls if d is not first]
                chain = " → ".join([first.name.name] + [d.name.name for d in others])
                self.report(
                    D.CYCLIC_ALIAS,
                    f"type alias `{first.name.name}` refers to itself ({chain} → {first.name.name})",
                    first.name.span,
                    notes=[
                        Note(f"`{d.name.name}` is part of the cycle", d.name.span) for d in others
                    ],
                    hint="declare an object type (`type N { … }`) to make a recursive type",
                )
            for n in cycle:
                self.alias_reported.add(n)
                self.alias_done[n] = ERROR
            return ERROR
        decl = self.alias_decls[name]
        assert decl.alias is not None  # only `type N = T` declarations are noted as aliases
        t = self.resolve_type(decl.alias, stack + (name,))
        if name in self.alias_done:  # marked by a cycle found below
            return self.alias_done[name]
        self.alias_done[name] = t
        self.env.aliases[name] = t
        return t

    def tool_sig(self, item: ast.ExternTool) -> ToolSig:
        params: dict[str, tuple[Type, bool]] = {}
        seen: dict[str, ast.Param] = {}
        for p in item.params:
            pt = self.resolve_type(p.type)
            if p.name.name in seen:
                self.report(
                    D.DUPLICATE_DEFINITION,
                    f"parameter `{p.name.name}` is declared twice",
                    p.name.span,
                    notes=[Note("first declared here", seen[p.name.name].name.span)],
                )
                continue
            seen[p.name.name] = p
            optional = p.omittable or self.admits_null(pt, p.type)
            params[p.name.name] = (pt, optional)
        returns = self.resolve_type(item.returns)
        if item.catalog is not None and "__" not in item.catalog.strip("_"):
            self.report(
                D.INVALID_VALUE,
                f"`{item.catalog}` is not a catalog tool name (SERVER__tool)",
                item.catalog_span or item.span,
                hint='name the tool as the catalog does: `extern tool "server__tool-name" as '
                "server__tool_name(…)` (`flowc tools --extern` prints it)",
            )
        return ToolSig(item.name.name, params, returns, True, False, item, catalog=item.catalog)


#: how many union members a mismatch reads inside one object literal (then: the plain
#: message), so a deep literal of a recursive union type is bounded work, never exponential
_UNION_READS = 32


def object_tags(
    env: TypeEnv, written: dict[str, ast.Expr], t: ObjectType
) -> tuple[list[str], bool]:
    """The tags of the object type ``t`` (its literal-typed fields) that an object literal's
    entries ``written`` hold, and whether it writes another constant in one of them (it cannot
    be a ``t``)."""
    held, contradicted = [], False
    for key, f in t.fields.items():
        tag = env.resolve(f.type)
        is_const, v = literal_const(written.get(key))
        if isinstance(tag, LiteralType) and key in written and is_const:
            if v == tag.value and isinstance(v, bool) == isinstance(tag.value, bool):
                held.append(key)
            else:
                contradicted = True
    return held, contradicted


def _int_hint(expr: ast.Expr, got: Type, want: Type, env: TypeEnv) -> str | None:
    """A ``number`` where an ``int`` is wanted (``return 1 / 2`` into ``-> int``): the standard
    library's ``floor``, ``round`` and ``ceil`` give an ``int`` (docs/reference/functions.md
    "Numbers"); ``/`` always gives a ``number``."""
    if env.resolve(strip_optional(want, env)) != INT or widen(got) != NUMBER:
        return None
    ways = "`floor(…)` (down), `round(…)` (to the nearest) or `ceil(…)` (up)"
    if isinstance(expr, ast.Binary) and expr.op == "/":
        return f"`/` gives a `number` (`1 / 2` is `0.5`): make it an `int` with {ways}"
    return f"make it an `int` with {ways}"


def written_type(t: ast.TypeExpr, refs: Mapping[int, str] | None = None) -> str:
    """A written type as the `.flow` writes it (parentheses only where the grammar needs
    them), for messages and hints: ``"a" | "b"``, ``(A | B)[]``, ``map<int>``. ``refs``
    (``Imports.refs``) names a type of an imported declaration as the importing file knows it
    (``Level`` for the ``Severity`` of ``import { rank, Severity as Level }``)."""
    if isinstance(t, ast.NamedType):
        return refs.get(id(t), t.name) if refs else t.name
    if isinstance(t, ast.LiteralType):
        return "null" if t.value is None else _literal_text(t.value)
    if isinstance(t, ast.ArrayType):
        return _postfix_operand(t.element, refs) + "[]"
    if isinstance(t, ast.OptionalType):
        return _postfix_operand(t.inner, refs) + "?"
    if isinstance(t, ast.UnionType):
        return " | ".join(written_type(m, refs) for m in t.members)
    if isinstance(t, ast.MapType):
        return f"map<{written_type(t.value, refs)}>"
    if isinstance(t, ast.GenericType):
        return f"{t.name}<{written_type(t.arg, refs)}>"
    if isinstance(t, ast.ObjectType):
        return (
            "{ "
            + ", ".join(f"{f.name.name}: {written_type(f.type, refs)}" for f in t.fields)
            + " }"
        )
    return "…"


def _postfix_operand(t: ast.TypeExpr, refs: Mapping[int, str] | None = None) -> str:
    text = written_type(t, refs)
    return f"({text})" if isinstance(t, ast.UnionType) else text


def _literal_text(v: str | int | float | bool) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return flow_string(v)
    return str(v)


def _written(t: ast.TypeExpr) -> str:
    """A member of a union as written, for a hint (``…`` for anything but a name or literal)."""
    if isinstance(t, ast.NamedType):
        return t.name
    if isinstance(t, ast.LiteralType):
        return json.dumps(t.value) if isinstance(t.value, str) else str(t.value).lower()
    return "…"


def _written_import(decl: ast.ImportDecl, local: str) -> str:
    """How ``decl`` imports the type this file calls ``local`` (``Ticket as Case``)."""
    for name, alias in decl.pairs():
        if alias.name == local and name.name != local:
            return f"{name.name} as {local}"
    return local
