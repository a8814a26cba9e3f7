"""The checker's expressions: one ``visit_<Node>`` typing rule per expression class.

:meth:`ExpressionChecks.expr` types an expression with the expected type flowing into it
(bidirectional checking); :meth:`ExpressionChecks.infer` dispatches on the node class through a
table filled once per class.  Literals, operators, comparisons (``no-overlap``), members,
indexing and projections are typed here (docs/spec/LANGUAGE.md §4).  A mixin of
:class:`~agentflow.compiler.checker.Checker`, whose state it reads and writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from agentflow.compiler import check_errors
from agentflow.compiler.checker_shared import CheckerShared
from agentflow.compiler.constants import constant_number, fold_step, overflow, overflow_text
from agentflow.compiler.symbols import suggest_name
from agentflow.compiler.types import (
    BOOL,
    DURATION,
    ERROR,
    INT,
    JSON,
    MEMBER,
    NEVER,
    NULL,
    NUMBER,
    PATH,
    TEXT,
    VERDICT_OBJECT,
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
    RangeType,
    Type,
    UnionType,
    UseType,
    VerdictType,
    assignable,
    finite_values,
    is_numeric,
    is_textual,
    join,
    literal_str,
    make_optional,
    make_union,
    mentions_never,
    overlaps,
    strip_optional,
    type_str,
    widen,
)
from agentflow.core import diagnostics as D
from agentflow.core.diagnostics import Note, Replacement, meant_hint
from agentflow.core.functions import FOREIGN_FUNCTION_NAMES, FUNCTIONS
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    BUILTIN_TYPES,
    MAX_DURATION_MS,
    MAX_DURATION_TEXT,
    MAX_INT,
    MIN_INT,
)
from agentflow.grammar import ast
from agentflow.grammar.written import expr_text


def literal_const(expr: ast.Expr | None) -> tuple[bool, Any]:
    """Evaluate a literal constant: ``(True, value)`` or ``(False, None)``."""
    if isinstance(expr, ast.NumberLit):
        return True, expr.value
    if isinstance(expr, ast.Unary) and expr.op == "-" and isinstance(expr.operand, ast.NumberLit):
        return True, -expr.operand.value
    if isinstance(expr, ast.StringLit) and expr.is_plain:
        return True, expr.text
    if isinstance(expr, ast.BoolLit):
        return True, expr.value
    if isinstance(expr, ast.NullLit):
        return True, None
    return False, None


def what_is(e: ast.Expr) -> str:
    """A name for an expression in a note: its path as written (``input.t``, ``xs.count``),
    else "this value"."""
    parts = []
    while isinstance(e, ast.Member):
        parts.append(e.name)
        e = e.obj
    if isinstance(e, ast.Name):
        return "`" + ".".join([e.name, *reversed(parts)]) + "`"
    return "this value"


#: expressions that are effects (a step each, in evaluation order)
_EFFECT_NODES = (ast.Call, ast.AgentExpr, ast.AskExpr, ast.VerifyExpr, ast.FilterExpr)


#: literal expressions: a side of a comparison that is one of these is not what the hint lists
_LITERALS = (ast.StringLit, ast.NumberLit, ast.BoolLit, ast.NullLit)


#: node class → the ``visit_<Class>`` method typing it; built once, by checker.py, from
#: :class:`~agentflow.compiler.checker.Checker` (which assembles the mixins holding the rules)
_DISPATCH: dict[type[ast.Node], Callable[[Any, Any, Type | None], Type]] = {}


def _no_rule(checker: Any, e: Any, hint: Type | None) -> Type:
    """Typing rule of a node class with no ``visit_`` method: the error type."""
    return ERROR


#: what users of other languages write for a length: ``xs.length``, ``len(xs)`` …
LENGTH_HINTS = {
    name: "the length of an array, a text or a map is `.count` (`xs.count`)"
    for name in ("length", "len", "size", "count", "Count", "Length")
}


#: The hint of arithmetic on a duration other than ``+`` and ``-`` of two durations
#: (docs/reference/lexical.md "Durations").
_DURATION_ARITHMETIC = (
    "durations take `+` and `-` of another duration (`input.wait - 30s`, never below 0ms); "
    "for anything else compute with their seconds: `from_seconds(seconds(d) * 2)`"
)


class ExpressionChecks(CheckerShared):
    """Expression typing rules (``visit_<Node>``) and the dispatch."""

    #: the literal a prefix `-` is typing (`-9223372036854775808` is in range, its digits alone
    #: are not)
    _negated: ast.NumberLit | None = None

    def expr(self, e: ast.Expr, expected: Type | None = None) -> Type:
        """Type ``e`` with the expected type flowing into it; report a ``type-mismatch`` when the
        result is not assignable to ``expected``."""
        t = self.infer(e, expected)
        if expected is not None and not assignable(t, expected, self.env):
            self.mismatch(e, t, expected)
            return ERROR
        return t

    def infer(self, e: ast.Expr, hint: Type | None = None) -> Type:
        self.expr_depth += 1
        if self.expr_depth > self.max_expr_depth:
            self.max_expr_depth = self.expr_depth
        try:
            t = _DISPATCH.get(type(e), _no_rule)(self, e, hint)
        finally:
            self.expr_depth -= 1
        self.types[id(e)] = t
        return t

    def visit_Name(self, e: ast.Name, hint: Type | None) -> Type:
        t = self.name(e)
        if isinstance(t, UseType):
            # an alias names an agent or team for `agent(…)`; the plan has no value for it, so a
            # `let`, field, argument or interpolation holding one could not be compiled
            self.report(
                D.TYPE_MISMATCH,
                f"`{t.alias}` is a `use {t.kind}` alias, not a value"
                + (f" (expected `{self.said(hint)}`)" if hint is not None else ""),
                e.span,
                hint=(
                    f"a `use` alias can only be the target of `agent(…)`: `agent({t.alias})`"
                    if t.kind == "agent"
                    else f"a team is an agent target through `agent({t.alias}.main)` or "
                    f'`agent({t.alias}.member("name"))`'
                ),
            )
            return ERROR
        return t

    def visit_StringLit(self, e: ast.StringLit, hint: Type | None) -> Type:
        if e.braces and not self.constant_strings:
            self._braces_not_interpolation(e)
        if e.is_plain:
            return LiteralType(e.text, fresh=True)
        result: Type = TEXT
        # an interpolated string literal is still a string literal: it may be a path or member
        if (
            hint is not None
            and not assignable(TEXT, hint, self.env)
            and assignable(LiteralType(""), hint, self.env)
        ):
            result = PATH if assignable(PATH, hint, self.env) else MEMBER
        for p in e.parts:
            if isinstance(p, ast.Interpolation):
                self.infer(p.expr)  # a `use` alias is reported by visit_Name: it is not a value
        return result

    def _braces_not_interpolation(self, e: ast.StringLit) -> None:
        """``brace-not-interpolation``: each ``{x}`` / ``{x.field…}`` written in the string
        whose ``x`` names a value in scope (``input``, a ``let``, a stage, a parameter, a loop
        variable) is sent as those characters, not the value: ``${x}`` reads it. The hint and
        quick fix propose ``${x.field…}`` only when that path reads a value (every field exists
        along it); otherwise the hint says which field is missing and offers no fix. Braces
        around any other text (JSON, ``{}``, a name of nothing) are left alone
        (docs/reference/lexical.md "Interpolation")."""
        names = self.visible_names() - set(self.use_syms)
        for path, span in e.braces:
            if path.split(".", 1)[0] not in names:
                continue
            message = (
                f"`{{{path}}}` is sent as written, braces included: a string reads a value "
                "only inside `${…}`"
            )
            wanted = f"${{{path}}}"
            broken = self._brace_path_error(path, span)
            if broken is None:
                self.report(
                    D.BRACE_NOT_INTERPOLATION,
                    message,
                    span,
                    hint=f"did you mean `{wanted}`?",
                    fix=Replacement(span, wanted, f"Replace `{{{path}}}` with `{wanted}`"),
                )
                continue
            self.report(
                D.BRACE_NOT_INTERPOLATION,
                message,
                span,
                hint=f"`{wanted}` would not read a value either: {broken}; to send the braces "
                f"as text, write the opening one as `\\u{{7B}}` (`\\u{{7B}}{path}}}`)",
            )

    def _brace_path_error(self, path: str, span: Span) -> str | None:
        """Why ``${path}`` (the dotted path of a ``{path}`` in a string) would not type-check
        where the string is — the first ``unknown-field`` message along it, its trailing period
        dropped — or None when it reads a value. Checks it as the expression it would be (with
        the narrowings in force) without reporting anything, marking its name used or leaving a
        type or reference behind."""
        head, *fields = path.split(".")
        expr: ast.Expr = ast.Name(span, head)
        made: list[ast.Expr] = [expr]
        for name in fields:
            expr = ast.Member(span, expr, name, span)
            made.append(expr)
        var = next((s[head] for s in reversed(self.scopes) if head in s), None)
        was_used = var.used if var is not None else False
        diags, self.diags = self.diags, []
        try:
            t = self.infer(expr)
            found = [d.message for d in self.diags if d.severity == "error"]
        finally:
            self.diags = diags
            if var is not None:
                var.used = was_used
            for node in made:
                self.types.pop(id(node), None)
                self.refs.pop(id(node), None)
        if found:
            return found[0].rstrip(".")
        return None if not isinstance(t, ErrorType) else f"`{path}` has no value here"

    def visit_NumberLit(self, e: ast.NumberLit, hint: Type | None) -> Type:
        value = e.value
        if isinstance(value, int) and value > MAX_INT and e is not self._negated:
            self._int_out_of_range(e, value)
        return LiteralType(value, fresh=True)

    def _duration_rewrite(self) -> None:
        """Note a `-` of two durations: the lowering writes it as ``from_seconds(max([seconds(a)
        - seconds(b), 0]))`` (compiler/durations.py), four brackets a level, so a chain nested
        in parentheses compiles deeper than it reads: count its levels so (``checker._SHALLOW``)
        that the check measures what it compiles to (compiler/check_depth.py)."""
        if self.expr_depth * 4 > self.max_expr_depth:
            self.max_expr_depth = self.expr_depth * 4

    def _int_out_of_range(self, e: ast.Expr, value: int) -> None:
        """``int-out-of-range`` on a whole-number literal past `int` (docs/reference/types.md:
        a literal is read exactly, up to the `int` range; `-9223372036854775808` is one)."""
        self.report(
            D.INT_OUT_OF_RANGE,
            f"`{value}` is outside the range of `int` ({MIN_INT} to {MAX_INT})",
            e.span,
            hint=f"for a `number`, write it with a fraction (`{value}.0`): it is then a "
            "floating-point number, exact only up to 2^53",
        )

    def visit_BoolLit(self, e: ast.BoolLit, hint: Type | None) -> Type:
        return LiteralType(bool(e.value), fresh=True)

    def visit_NullLit(self, e: ast.NullLit, hint: Type | None) -> Type:
        return NULL

    def visit_DurationLit(self, e: ast.DurationLit, hint: Type | None) -> Type:
        if e.ms > MAX_DURATION_MS:  # docs/reference/lexical.md "Durations"
            self.report(
                D.INVALID_DURATION,
                f"`{e.text}` is longer than the longest duration, {MAX_DURATION_TEXT}",
                e.span,
                hint="compute longer spans in seconds: `seconds(d)` is a number",
            )
        return DURATION

    def _hint_parts(self, hint: Type | None) -> Type | None:
        if hint is None:
            return None
        r = self.env.resolve(strip_optional(hint, self.env))
        return r

    def visit_ListLit(self, e: ast.ListLit, hint: Type | None) -> Type:
        h = self._hint_parts(hint)
        elem_hint = h.elem if isinstance(h, ListType) else None
        items = [self.infer(i, elem_hint) for i in e.items]
        if elem_hint is not None and all(assignable(t, elem_hint, self.env) for t in items):
            return ListType(elem_hint)
        if not items:
            return ListType(NEVER)
        return ListType(join(items, self.env))

    def visit_ObjectLit(self, e: ast.ObjectLit, hint: Type | None) -> Type:
        h = self._hint_parts(hint)
        fields: dict[str, Field] = {}
        first: dict[str, ast.ObjectEntry] = {}
        for entry in e.entries:
            fh = None
            if isinstance(h, ObjectType) and entry.key in h.fields:
                fh = h.fields[entry.key].type
            elif isinstance(h, MapType):
                fh = h.value
            vt = self.infer(entry.value, fh)
            if entry.key in first:
                self.report(
                    D.DUPLICATE_FIELD,
                    f"key `{entry.key}` is given twice",
                    entry.key_span,
                    notes=[Note("first given here", first[entry.key].key_span)],
                )
                continue
            first[entry.key] = entry
            fields[entry.key] = Field(vt, False, {}, None, entry.key_span)
        if any(isinstance(f.type, ErrorType) for f in fields.values()):
            return ERROR
        obj = ObjectType(fields)
        if hint is not None and isinstance(h, (ObjectType, MapType)):
            if assignable(obj, h, self.env):
                return strip_optional(hint, self.env)
        return obj

    def visit_RangeExpr(self, e: ast.RangeExpr, hint: Type | None) -> Type:
        lo = self.infer(e.low)
        hi = self.infer(e.high)
        bad = False
        for side, t in ((e.low, lo), (e.high, hi)):
            if not is_numeric(t, self.env) and not isinstance(t, ErrorType) and t != JSON:
                self.report(
                    D.TYPE_MISMATCH,
                    f"a range bound must be a number, found {self.said_words(t)}",
                    side.span,
                )
                bad = True
        if self.range_ok != id(e):
            self.report(D.TYPE_MISMATCH, "a range can only be used after `in`", e.span)
            return ERROR
        if bad:
            return ERROR
        return RangeType(join([lo, hi], self.env))

    def visit_Unary(self, e: ast.Unary, hint: Type | None) -> Type:
        if e.op == "not":
            self.expr(e.operand, BOOL)
            return BOOL
        negated = e.operand if e.op == "-" and isinstance(e.operand, ast.NumberLit) else None
        outer, self._negated = self._negated, negated
        try:
            t = self.infer(e.operand)
        finally:
            self._negated = outer
        if negated is not None and isinstance(negated.value, int) and -negated.value < MIN_INT:
            self._int_out_of_range(e, -negated.value)
        if e.op == "-":
            self.fold(e, e.operand)
        if isinstance(t, ErrorType) or t == JSON:
            return t
        if is_numeric(t, self.env):
            if isinstance(t, LiteralType):
                return LiteralType(-t.value, fresh=True)  # type: ignore[operator]
            return widen(t)
        self.report(
            D.TYPE_MISMATCH,
            f"`-` needs a number, found {self.said_words(t)}"
            + (" (a duration is never negative)" if t == DURATION else ""),
            e.operand.span,
            hint=_DURATION_ARITHMETIC if t == DURATION else None,
        )
        return ERROR

    def visit_Binary(self, e: ast.Binary, hint: Type | None) -> Type:
        op = e.op
        if op in ("and", "or"):
            self.expr(e.left, BOOL)
            yes, no = self.narrowings(e.left)  # `p.kind == "cat" and p.lives > 3`
            with self.narrowed(yes if op == "and" else no):
                self.expr(e.right, BOOL)
            return BOOL
        if op == "??":
            lt = self.infer(e.left, make_optional(hint) if hint is not None else None)
            base = strip_optional(lt, self.env)
            rt = self.infer(
                e.right,
                hint if hint is not None else (widen(base) if not mentions_never(base) else None),
            )
            if isinstance(lt, ErrorType) or isinstance(rt, ErrorType):
                return ERROR
            if isinstance(base, NeverType):
                return rt
            if assignable(rt, base, self.env):
                return widen(base)
            if assignable(base, rt, self.env):
                return widen(rt)
            return make_union([widen(base), widen(rt)])
        if op in ("in", "not in"):
            if isinstance(e.right, ast.RangeExpr):
                self.range_ok = id(e.right)
            lt = self.infer(e.left)
            rt = self.infer(e.right)
            self.range_ok = None
            self.check_in(e, lt, rt)
            return BOOL
        if op == "+":
            lt, rt = self.concat_operands(e, hint)
        else:
            lt = self.infer(e.left)
            rt = self.infer(e.right)
        if op in ("+", "-", "*", "/", "%"):
            self.fold(e, e.left, e.right)
        if op in ("/", "%") and constant_number(e.right) == 0:  # `0`, `-0`, `(1 - 1)`, `2 * 0.0`
            divisor = e.right
            while isinstance(divisor, ast.Unary) and divisor.op == "-":  # `-0` is 0 too
                divisor = divisor.operand
            what = "division" if op == "/" else "modulo"
            self.report(
                D.DIVISION_BY_ZERO,
                f"{what} by zero: the divisor is the literal `{divisor.value}`"
                if isinstance(divisor, ast.NumberLit)
                else f"{what} by zero: the divisor `{expr_text(e.right)}` is always 0",
                e.right.span,
                hint="it always fails at run time (`arithmetic`): divide by a value that is not "
                "zero, guarding one that may be: `if d != 0 then n / d else 0`",
            )
        if isinstance(lt, ErrorType) or isinstance(rt, ErrorType):
            return BOOL if op in ("==", "!=", "<", "<=", ">", ">=") else ERROR
        if op in ("==", "!="):
            # `null` compares with anything: `text == ("a" | "b")?` as `text == "a" | "b"`
            ls, rs = strip_optional(lt, self.env), strip_optional(rt, self.env)
            comparable = (
                assignable(lt, rt, self.env)
                or assignable(rt, lt, self.env)
                or (is_numeric(ls, self.env) and is_numeric(rs, self.env))
                or (is_textual(ls, self.env) and is_textual(rs, self.env))
                or assignable(widen(lt), widen(rt), self.env)
                or assignable(widen(rt), widen(lt), self.env)
            )
            if not overlaps(lt, rt, self.env) and (comparable or self.same_kind(lt, rt)):
                self.no_overlap(e, e.left, lt, e.right, rt)
            elif not comparable:
                self.report(
                    D.TYPE_MISMATCH,
                    f"cannot compare `{self.said(widen(lt))}` with `{self.said(widen(rt))}`",
                    e.span,
                    hint=self._compare_hint(e, lt, rt),
                )
            return BOOL
        if op in ("<", "<=", ">", ">="):
            if (type(lt) is Prim and lt.name == "json") or (type(rt) is Prim and rt.name == "json"):
                return BOOL
            if lt == DURATION and rt == DURATION:
                return BOOL  # by length: lowered through `seconds` (compiler/durations.py)
            ok = (is_numeric(lt, self.env) and is_numeric(rt, self.env)) or (
                is_textual(lt, self.env) and is_textual(rt, self.env)
            )
            if not ok:
                self.report(
                    D.TYPE_MISMATCH,
                    f"`{op}` cannot order `{self.said(widen(lt))}` and `{self.said(widen(rt))}`",
                    e.span,
                    hint=self.optional_operand_hint(e, lt, rt)
                    or "comparisons need two numbers, two texts or two durations",
                )
            return BOOL
        if (type(lt) is Prim and lt.name == "json") or (type(rt) is Prim and rt.name == "json"):
            return JSON
        lw, rw = widen(lt), widen(rt)
        if op == "+":
            if is_numeric(lt, self.env) and is_numeric(rt, self.env):
                return INT if _is_int(lw) and _is_int(rw) else NUMBER
            if is_textual(lt, self.env) and is_textual(rt, self.env):
                return TEXT
            if lt == DURATION and rt == DURATION:
                return DURATION
            lr, rr = self.env.resolve(lw), self.env.resolve(rw)
            if isinstance(lr, ListType) and isinstance(rr, ListType):
                if isinstance(lr.elem, NeverType):
                    return rr
                if isinstance(rr.elem, NeverType):
                    return lr
                if assignable(rr.elem, lr.elem, self.env):
                    return lr
                if assignable(lr.elem, rr.elem, self.env):
                    return rr
                return ListType(make_union([lr.elem, rr.elem]))
            self.report(
                D.TYPE_MISMATCH,
                f"`+` cannot combine `{self.said(lw)}` and {self.said_words(rw)}",
                e.span,
                hint=self.optional_operand_hint(e, lt, rt)
                or "`+` adds numbers and concatenates text or arrays; "
                'use interpolation ("${…}") to build text from other values',
            )
            return ERROR
        # - * / %
        if is_numeric(lt, self.env) and is_numeric(rt, self.env):
            if op == "/":
                return NUMBER
            return INT if _is_int(lw) and _is_int(rw) else NUMBER
        if op == "-" and lt == DURATION and rt == DURATION:
            self._duration_rewrite()
            return DURATION  # never below 0ms: lowered through `seconds` (compiler/durations.py)
        self.report(
            D.TYPE_MISMATCH,
            f"`{op}` needs numbers, found {self.said_words(lw)} and {self.said_words(rw)}",
            e.span,
            hint=_DURATION_ARITHMETIC
            if DURATION in (lt, rt)
            else self.optional_operand_hint(e, lt, rt),
        )
        return ERROR

    def fold(self, e: ast.Expr, left: ast.Expr, right: ast.Expr | None = None) -> None:
        """Fold ``e`` (``left op right``, or ``-left``), whose operands are checked, when they
        are pure literal arithmetic (their folds are in ``self.folded``): its value into
        ``self.folded``, or `constant-overflow` when the run would refuse it as past `int` or
        any number (docs/diagnostics.md "constant-overflow"). A zero divisor is
        ``division-by-zero``'s."""
        a = left.value if isinstance(left, ast.NumberLit) else self.folded.get(id(left))
        b = None
        if right is not None:
            b = right.value if isinstance(right, ast.NumberLit) else self.folded.get(id(right))
            if b is None:
                return
        if a is None:
            return
        op = e.op if isinstance(e, ast.Binary | ast.Unary) else "-"
        v = fold_step(op, a, b)
        if v is not None:
            self.folded[id(e)] = v
            return
        why = overflow(op, a, b)
        if why is not None:
            self.report(
                D.CONSTANT_OVERFLOW,
                f"`{overflow_text(e)}` always fails at run time: {why}",
                e.span,
                hint="it is `arithmetic` when run: compute a value within range (an `int` is "
                "64-bit; a `number` with a fraction, `9223372036854775807.0 + 1`, goes further)",
            )

    def concat_operands(self, e: ast.Binary, hint: Type | None) -> tuple[Type, Type]:
        """The operand types of ``a + b``.  When an array is expected of the sum (a stage's
        ``-> WorkItem[]``, an annotated ``let``, an argument), that type flows into both
        operands, as into an array literal: ``input.work + [{ owner: "lead", … }]`` keeps
        ``owner`` a ``member`` and ``input.files + ["b.txt"]`` is a ``path[]``.  With no such
        expectation, an array operand's type flows into the other one (``acc.seen + ["x"]``
        with ``acc.seen: path[]``), so the sum has the array's type rather than a union."""
        h = self._hint_parts(hint)
        if isinstance(h, ListType) and not mentions_never(h):
            return self.infer(e.left, h), self.infer(e.right, h)
        if isinstance(e.left, ast.ListLit) and not isinstance(e.right, ast.ListLit):
            # `["a.txt"] + input.files`: the literal takes the other side's type
            rt = self.infer(e.right)
            return self.infer(e.left, self._concat_hint(rt)), rt
        lt = self.infer(e.left)
        return lt, self.infer(e.right, self._concat_hint(lt))

    def _concat_hint(self, t: Type) -> Type | None:
        """The type an operand of ``+`` gives the other one: its own when it is an array type
        that holds something (not ``never[]``), else nothing."""
        r = self.env.resolve(widen(t))
        return r if isinstance(r, ListType) and not mentions_never(r) else None

    def optional_operand_hint(self, e: ast.Binary, lt: Type, rt: Type) -> str | None:
        """The fix when an operand of ``e`` is optional (``int?``) and the operator needs its
        value: a default with ``??``, or a check for ``null`` first; None otherwise."""
        for side, t in ((e.left, lt), (e.right, rt)):
            r = self.env.resolve(t)
            if not isinstance(r, OptionalType):
                continue
            inner = self.env.resolve(r.inner)
            default = (
                "0"
                if is_numeric(inner, self.env)
                else '""'
                if is_textual(inner, self.env)
                else None
            )
            if default is None:
                return None
            shown = self.source_text(side)
            if shown == "…":
                return (
                    f"an operand may be `null` (`{self.said(t)}`): give it a default with `??`: "
                    f"`(… ?? {default})`"
                )
            return (
                f"`{shown}` may be `null` (`{self.said(t)}`): give a default with `??`, e.g. "
                f"`({shown} ?? {default})`"
            )
        return None

    def _compare_hint(self, e: ast.Binary, lt: Type, rt: Type) -> str:
        """The hint of comparing values of two types that never equal: a number with text
        (write the literal as its type, or convert one side), else to compare like with like."""
        ls, rs = widen(strip_optional(lt, self.env)), widen(strip_optional(rt, self.env))
        for num, txt, side in ((ls, rs, e.right), (rs, ls, e.left)):
            if is_numeric(num, self.env) and is_textual(txt, self.env):
                if isinstance(side, ast.StringLit) and side.is_plain:
                    return (
                        f"a number never equals text: write the number without quotes "
                        f"(`{side.text}`), or convert a side (`parse_int(…)`, `to_text(…)`)"
                    )
                return "a number never equals text: convert a side (`parse_int(…)`, `to_text(…)`)"
        return (
            f"values of `{self.said(ls)}` and `{self.said(rs)}` are never equal: compare two "
            "values of the same type"
        )

    def source_text(self, e: ast.Expr) -> str:
        """``e`` as written, when it is a name or a path of fields (``input.n``), else `…`."""
        if isinstance(e, ast.Name):
            return e.name
        if isinstance(e, ast.Member):
            return f"{self.source_text(e.obj)}.{e.name}"
        return "…"

    def check_in(self, e: ast.Binary, lt: Type, rt: Type) -> None:
        if isinstance(lt, ErrorType) or isinstance(rt, ErrorType) or rt == JSON or lt == JSON:
            return
        r = self.env.resolve(rt)
        ok = True
        if isinstance(r, RangeType):
            ok = is_numeric(lt, self.env)
        elif isinstance(r, ListType):
            ok = (
                isinstance(r.elem, NeverType)
                or assignable(lt, r.elem, self.env)
                or assignable(r.elem, widen(lt), self.env)
                or (is_textual(lt, self.env) and is_textual(r.elem, self.env))
                or (is_numeric(lt, self.env) and is_numeric(r.elem, self.env))
            )
        elif is_textual(r, self.env) or isinstance(r, MapType):
            ok = is_textual(lt, self.env)
        else:
            self.report(
                D.TYPE_MISMATCH,
                f"`{e.op}` needs an array, text, map or range on the right, found {self.said_words(rt)}",
                e.right.span,
            )
            return
        if not ok:
            self.report(
                D.TYPE_MISMATCH,
                f"`{self.said(widen(lt))}` cannot be {'in' if e.op == 'in' else 'not in'} `{self.said(rt)}`",
                e.span,
            )
        elif isinstance(r, ListType):
            elem = r.elem
            if isinstance(e.right, ast.ListLit) and e.right.items:
                # `k in ["x", "y"]`: the literals, not the widened `text`
                elem = make_union([self.types.get(id(i), ERROR) for i in e.right.items])
            if not overlaps(lt, elem, self.env):
                self.no_overlap(e, e.left, lt, e.right, elem)

    def same_kind(self, lt: Type, rt: Type) -> bool:
        """Operands whose comparison is a question of values, not of kinds: two object types,
        or ``null`` against anything (``x == null`` with ``x: int`` is always false)."""
        a, b = self.env.resolve(lt), self.env.resolve(rt)
        return a == NULL or b == NULL or (isinstance(a, ObjectType) and isinstance(b, ObjectType))

    def no_overlap(
        self, e: ast.Binary, left: ast.Expr, lt: Type, right: ast.Expr, rt: Type
    ) -> None:
        """Report `no-overlap`: ``e`` (``==``, ``!=``, ``in``, ``not in``; for ``in``, ``rt``
        is the array's element type) can never be true, or for ``!=`` / ``not in`` never false.
        The hint lists the values the finite side can be (and the closest one to a literal on
        the other side)."""
        always = "true" if e.op in ("!=", "not in") else "false"
        if e.op in ("==", "!="):
            message = (
                f"this comparison is always {always}: `{self.said(lt)}` and `{self.said(rt)}` "
                "have no value in common"
            )
        else:
            message = (
                f"this `{e.op}` test is always {always}: the array's elements are "
                f"`{self.said(rt)}`, never `{self.said(lt)}`"
            )
        hint = None
        fix: D.Replacement | None = None
        for side, t, ot in ((left, lt, rt), (right, rt, lt)):
            values = finite_values(t, self.env)
            if values is None or len(values) < 2 and isinstance(side, _LITERALS):
                continue
            shown = [literal_str(v) for v in values]
            listed = ", ".join(shown[:-1]) + f" or {shown[-1]}" if len(shown) > 1 else shown[0]
            name = what_is(side)
            if name == "this value":
                name = "the left side" if side is left else "the right side"
            if e.op in ("in", "not in") and side is right:
                name = "the elements"
            hint = f"{name} is always {listed}" if len(shown) == 1 else f"{name} can be {listed}"
            other_values = finite_values(ot, self.env)
            if other_values and len(other_values) == 1 and isinstance(other_values[0], str):
                written = other_values[0]
                meant = suggest_name(written, [v for v in values if isinstance(v, str)])
                if meant is not None:
                    hint = f"did you mean {literal_str(meant)}? ({hint})"
                    other = right if side is left else left
                    if isinstance(other, ast.StringLit) and other.parts == [written]:
                        fix = D.respelling(other.span, written, meant, before='"', after='"')
            break
        a, b = self.env.resolve(lt), self.env.resolve(rt)
        if isinstance(a, ObjectType) and isinstance(b, ObjectType):
            for name, fa in a.fields.items():
                fb = b.fields.get(name)
                if fb and not (fa.optional or fb.optional or overlaps(fa.type, fb.type, self.env)):
                    hint = (
                        f"field `{name}` is `{self.said(fa.type)}` on one side and "
                        f"`{self.said(fb.type)}` on the other"
                    )
                    fix = None  # the hint says no more what the fix does
                    break
        for side, t, ot in ((left, lt, rt), (right, rt, lt)):
            if ot == NULL and hint is None:
                name = what_is(side)
                name = "this value" if name == "this value" else name
                hint = f"{name} is never null: its type is `{self.said(t)}`, not `{self.said(t)}?`"
        self.report(D.NO_OVERLAP, message, e.span, hint=hint, fix=fix)

    def visit_Member(self, e: ast.Member, hint: Type | None) -> Type:
        if isinstance(e.obj, ast.Name):
            # `dev.main` outside an agent target is reported by member_type, as a whole
            ot = self.types[id(e.obj)] = self.name(e.obj)
        else:
            ot = self.infer(e.obj, self._values_hint(e, hint))
        t = self.member_type(ot, e.name, e.name_span, e)
        if self.narrows and not isinstance(t, ErrorType):
            narrowed = self.narrowed_type(e)  # `input.pet` inside `if input.pet.kind == …`
            if narrowed is not None:
                return narrowed
        return t

    def _values_hint(self, e: ast.Member, hint: Type | None) -> Type | None:
        """The type expected of ``e.obj`` when ``e`` is ``(map … tolerate N { … }).values``
        and ``T[]`` is expected of ``e``: ``Outcome<T>[]``, so that ``T`` flows into the map's
        body as it does without ``tolerate`` (an object literal there keeps its literal types,
        ``kind: "bug"`` against ``"bug" | "debt"``); None otherwise."""
        if e.name != "values" or hint is None or not isinstance(e.obj, ast.MapExpr):
            return None
        if e.obj.tolerate is None:
            return None
        h = self.env.resolve(hint)
        if isinstance(h, OptionalType):
            h = self.env.resolve(h.inner)
        if not isinstance(h, ListType):
            return None
        return ListType(check_errors.outcome_type(h.elem))

    def member_type(self, ot: Type, name: str, span: Span, e: ast.Expr) -> Type:
        # fast path: a field that an object type (named or inline) has
        tp = type(ot)
        if tp is NamedRef:
            r = self.env.resolve(ot)
            tp = type(r)
        else:
            r = ot
        if tp is ObjectType:
            f = cast(ObjectType, r).fields.get(name)
            if f is not None:
                return f.type
        if isinstance(ot, ErrorType):
            return ERROR
        if type(ot) is Prim and ot.name == "json":
            return JSON
        if isinstance(ot, UseType):
            if ot.kind == "team" and name in ("main", "member"):
                self.report(
                    D.TYPE_MISMATCH,
                    f"`{ot.alias}.{name}` names an agent and can only be an agent target",
                    e.span,
                )
            else:
                meant = suggest_name(name, ["main", "member"]) if ot.kind == "team" else None
                self.report(
                    D.UNKNOWN_FIELD,
                    f"{self.said(ot)} has no field `{name}`",
                    span,
                    hint=meant_hint(meant) if meant else None,
                    fix=D.respelling(span, name, meant),
                )
            return ERROR
        r = self.env.resolve(ot)
        if isinstance(r, ErrorType):
            return ERROR
        if isinstance(r, OptionalType):
            inner = self.member_type(r.inner, name, span, e)
            return make_optional(inner) if not isinstance(inner, ErrorType) else ERROR
        if isinstance(r, UnionType):
            members = [m for m in r.members if m != NULL]
            has_null = len(members) < len(r.members)
            found: list[Type] = []
            for m in members:
                mr = self.env.resolve(m)
                if name == "count" and self.countable(mr):
                    found.append(INT)
                elif isinstance(mr, ObjectType) and name in mr.fields:
                    found.append(mr.fields[name].type)
                elif mr == JSON:
                    found.append(JSON)
                else:
                    self.report(
                        D.UNKNOWN_FIELD,
                        f"`{name}` is not a field of every member of `{self.said(ot)}`",
                        span,
                        notes=[Note(f"`{self.said(m)}` has no field `{name}`")],
                        hint=self.narrowing_hint(e, r, name),
                    )
                    return ERROR
            t = make_union(found)
            return make_optional(t) if has_null else t
        if name == "count" and self.countable(r):
            if not (isinstance(r, ObjectType) and "count" in r.fields):
                return INT
        if (helper := check_errors.outcome_list_member(r, name)) is not None:
            return helper  # `.values` / `.errors` of Outcome<T>[]
        if isinstance(r, VerdictType):
            r = VERDICT_OBJECT
        if isinstance(r, ObjectType):
            f = r.fields.get(name)
            if f is not None:
                return f.type
            fields = ", ".join(f"`{k}`" for k in r.fields)
            close = suggest_name(name, list(r.fields))
            # a built-in object (`Error`, `ErrorPlace`) is written nowhere in the file: list its
            # fields even when one is close
            builtin = type_str(ot) in BUILTIN_TYPES and fields
            # an object type with no name of its own is named by the path the user wrote
            # (`input`, `plan.work`), its fields in the hint: not `{ dir: path }`
            path = what_is(e.obj) if isinstance(e, ast.Member) and r.name is None else None
            shown = f"`{self.said(ot)}`" if path is None or path == "this value" else path
            self.report(
                D.UNKNOWN_FIELD,
                f"{shown} has no field `{name}`",
                span,
                notes=[Note(f"the fields of `{self.said(ot)}` are {fields}")] if builtin else [],
                hint=meant_hint(close)
                if close
                else (f"use one of its fields: {fields}" if fields else None),
                fix=D.respelling(span, name, close),
            )
            return ERROR
        if isinstance(r, MapType):
            return r.value
        meant = suggest_name(name, ["count"]) if self.countable(r) else None
        hint = LENGTH_HINTS.get(name) if self.countable(r) else None
        fix = D.respelling(span, name, "count") if hint is not None else None  # `xs.length`
        if hint is None and isinstance(e, ast.Member):
            hint, fix = self.function_as_field(e, name) or (None, None)
        if hint is None and meant is not None:
            hint, fix = meant_hint(meant), D.respelling(span, name, meant)
        if name in ("values", "errors") and isinstance(r, ListType):
            hint = (
                f"`.{name}` is for a `map … tolerate N {{ … }}`, whose items are `Outcome`s; a "
                "`map` without `tolerate` fails at its first failed item, so its value is already "
                "the list of values"
                + (": use it as it is" if name == "values" else "")
                + " (add `tolerate N` or `tolerate P%` to the `map` to keep going past failures)"
            )
            fix = None
        self.report(
            D.UNKNOWN_FIELD, f"`{self.said(ot)}` has no field `{name}`", span, hint=hint, fix=fix
        )
        return ERROR

    def function_as_field(self, e: ast.Member, name: str) -> tuple[str, Replacement | None] | None:
        """``input.s.lower``, ``xs.reverse``, ``s.toUpperCase``: a library function (or one of
        another language's names for one) read as a field — the hint is the call to write, and,
        when that call takes nothing else, its edit; None when ``name`` is no function."""
        target = name if name in FUNCTIONS else FOREIGN_FUNCTION_NAMES.get(name)
        if target is None:
            return None
        path = what_is(e.obj)
        first = path.strip("`") if path != "this value" else "…"
        more = sum(1 for p in FUNCTIONS[target].params if not p.omittable) > 1
        call = f"{target}({first}{', …' if more else ''})"
        hint = (
            f"`{name}` is not a field: `.flow` values have no methods; call the function: `{call}`"
        )
        ot = self.types.get(id(e.obj))
        optional = ot is not None and isinstance(self.env.resolve(ot), OptionalType)
        if more or first == "…" or optional:  # (an optional needs its `??` first)
            return hint, None
        return hint, Replacement(e.span, call, f"Replace `{first}.{name}` with `{call}`")

    def countable(self, r: Type) -> bool:
        return isinstance(r, (ListType, MapType)) or is_textual(r, self.env)

    def visit_Index(self, e: ast.Index, hint: Type | None) -> Type:
        ot = self.infer(e.obj)
        it = self.infer(e.index)
        if isinstance(ot, ErrorType):
            return ERROR
        if type(ot) is Prim and ot.name == "json":
            return JSON
        r = self.env.resolve(ot)
        opt = False
        if isinstance(r, OptionalType):
            r = self.env.resolve(r.inner)
            opt = True
        result: Type
        if isinstance(r, ListType):
            if not assignable(it, INT, self.env):
                self.report(
                    D.TYPE_MISMATCH,
                    f"an array index must be an `int`, found {self.said_words(widen(it))}",
                    e.index.span,
                )
            result = r.elem if not isinstance(r.elem, NeverType) else ERROR
        elif isinstance(r, MapType):
            if not is_textual(it, self.env) and not isinstance(it, ErrorType) and it != JSON:
                self.report(
                    D.TYPE_MISMATCH,
                    f"a map key must be text, found {self.said_words(it)}",
                    e.index.span,
                )
            result = r.value
        elif (
            isinstance(r, ObjectType) and isinstance(it, LiteralType) and isinstance(it.value, str)
        ):
            return self.member_type(ot, it.value, e.index.span, e)
        elif is_textual(r, self.env):
            if not assignable(it, INT, self.env):
                self.report(
                    D.TYPE_MISMATCH,
                    f"a text index must be an `int`, found {self.said_words(it)}",
                    e.index.span,
                )
            result = TEXT
        else:
            self.report(
                D.TYPE_MISMATCH,
                f"`{self.said(ot)}` cannot be indexed",
                e.obj.span,
                hint=_field_hint(r, e.obj),
            )
            return ERROR
        return make_optional(result) if opt else result

    def visit_Projection(self, e: ast.Projection, hint: Type | None) -> Type:
        bt = self.infer(e.base)
        elem = self.list_elem(bt, "[*]", e.base.span)
        if e.path is None:
            return bt if not isinstance(elem, ErrorType) else ERROR
        self.proj.append(elem)
        try:
            pt = self.infer(e.path)
        finally:
            self.proj.pop()
        if isinstance(pt, ErrorType) or isinstance(elem, ErrorType):
            return ERROR
        if self.path_defaults(e.path):
            self.effectful_index(e.path)
        return ListType(pt)

    def path_defaults(self, p: ast.Expr) -> bool:
        """True when a projection's per-element path reads an optional part (a `T?` field, a
        field of a `T?` value), nested projections included: lowering then computes it with a
        `map` step per element (the rule of ``lower_expressions._path_defaults``)."""
        while True:
            if isinstance(p, ast.Member):
                if self.optional_field(p) or self.nullable(p.obj):
                    return True
                p = p.obj
            elif isinstance(p, ast.Index):
                p = p.obj
            elif isinstance(p, ast.Projection):
                if p.path is not None and self.path_defaults(p.path):
                    return True
                p = p.base
            else:
                return False

    def nullable(self, e: ast.Expr) -> bool:
        t = self.env.resolve(self.types.get(id(e), ERROR))
        return isinstance(t, OptionalType) or (isinstance(t, UnionType) and NULL in t.members)

    def optional_field(self, e: ast.Member) -> bool:
        t = self.env.resolve(self.types.get(id(e.obj), ERROR))
        if isinstance(t, OptionalType):
            t = self.env.resolve(t.inner)
        for m in t.members if isinstance(t, UnionType) else (t,):
            m = self.env.resolve(m)
            if isinstance(m, OptionalType):
                m = self.env.resolve(m.inner)
            if isinstance(m, ObjectType):
                f = m.fields.get(e.name)
                if f is not None and f.optional:
                    return True
        return False

    def effectful_index(self, path: ast.Expr) -> None:
        """An index with an effect inside a projection path over optional parts would run once
        per element of the `map` that computes the path: `unsupported-construct`, at check time
        (it used to pass the check and fail `flowc compile`)."""
        for node in ast.walk(path):
            if isinstance(node, ast.Index) and any(
                isinstance(n, _EFFECT_NODES) for n in ast.walk(node.index)
            ):
                self.report(
                    D.UNSUPPORTED_CONSTRUCT,
                    "this index has an effect (a tool call, agent, ask or judge) inside a "
                    "projection over optional fields, where it would run once per element",
                    node.index.span,
                    hint="bind it first (`let i = …`) and index with `i`",
                )
                return

    def visit_ProjectionItem(self, e: ast.ProjectionItem, hint: Type | None) -> Type:
        return self.proj[-1] if self.proj else ERROR

    def elem_type(self, over: ast.Expr, what: str) -> Type:
        return self.list_elem(self.infer(over), what, over.span)

    def list_elem(self, t: Type, what: str, span: Any) -> Type:
        """The element type of the list type ``t`` (``json`` and errors pass through); anything
        else is reported as "`what` needs an array" at ``span`` and gives the error type."""
        if isinstance(t, ErrorType):
            return ERROR
        if type(t) is Prim and t.name == "json":
            return JSON
        r = self.env.resolve(t)
        if isinstance(r, ListType):
            return r.elem if not isinstance(r.elem, NeverType) else NEVER
        self.report(D.TYPE_MISMATCH, f"`{what}` needs an array, found {self.said_words(t)}", span)
        return ERROR


def _field_hint(r: Type, obj: ast.Expr) -> str | None:
    """For an object indexed like a list or tuple (``pair[0]`` of a ``zip``): read it by field
    (``pair.first``, ``pair.second``); None for other types."""
    if not isinstance(r, ObjectType) or not r.fields:
        return None
    base = obj.name if isinstance(obj, ast.Name) else ""
    names = list(r.fields)
    shown = ", ".join(f"`{base}.{f}`" for f in names[:6]) + (", …" if len(names) > 6 else "")
    return f"an object is read by field name, not by position: {shown}"


def _is_int(t: Type) -> bool:
    """``t == INT`` without the dataclass ``__eq__`` call (hot in arithmetic)."""
    return type(t) is Prim and t.name == "int"
