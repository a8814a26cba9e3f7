"""Lowering's pure expressions: the printed template text and one ``visit_<Node>`` rule per class.

A pure expression is printed back into the ``{{ … }}`` template language (docs/spec/LANGUAGE.md §10,
docs/spec/PLAN_IR.md) as a :class:`Frag`, which keeps a :class:`StepRef` for every step it reads
until it is printed, and its precedence, so that only the parentheses the grammar needs are written.
:class:`ExpressionLowering` is a mixin of :class:`~agentflow.compiler.lowering._Lowerer` holding the
rules for names, literals, operators, members, indexes and projections.  The scopes every rule
lowers in (:class:`Ctx`, :class:`PlanBuilder`) are defined here too, below the fragments.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from agentflow.compiler import types as T
from agentflow.compiler.contracts import flow_string as _flow_string
from agentflow.compiler.durations import by_length, call_by_length, needs_once
from agentflow.core.spans import Span
from agentflow.core.vocabulary import MINUS_PRECEDENCE, NOT_PRECEDENCE, PRECEDENCE
from agentflow.errors import LoweringError
from agentflow.grammar import ast

if TYPE_CHECKING:  # a type only: the checker runs the lowering (check_depth)
    from agentflow.compiler.checker import CheckResult

#: Expressions that lower to effectful steps (tool calls, agents, asks, judges, checks).
_EFFECTS = (ast.Call, ast.AgentExpr, ast.AskExpr, ast.VerifyExpr, ast.FilterExpr)


class _NeedsOutline(Exception):
    """Raised while lowering a control body inline when it cannot be a single body step."""


# Binding strength of the operators (core.vocabulary.PRECEDENCE, the parser's).
_PREC = PRECEDENCE
_NOT_PREC = NOT_PRECEDENCE
_MINUS_PREC = MINUS_PRECEDENCE


# Operators a printed chain may hold before its left part becomes a `value` step of its own (the
# template parser allows 200 in one chain, and 200 levels of depth).
_MAX_CHAIN = 150


# The binding of a projection's element (`xs[*]`) in the `map` body it is lowered to: not an
# identifier, so no source name can clash with it.
_ELEMENT = "[*]"


@dataclass(eq=False)
class StepRef:
    """A reference to a step's (selected) result, printed as its id or as ``result``."""

    step: dict[str, Any]


@dataclass
class Frag:
    """Template-expression text: a list of literal text and :class:`StepRef` pieces.

    ``atomic`` is True when the text needs no parentheses to be used as an operand; ``free`` holds
    the scope names (``item``, ``index``, ``accumulator``, ``input``) the text reads. A text that
    is not atomic records the binding strength of its top operator (``prec``, as in the grammar's
    precedence climbing; 0: unknown, always parenthesized) and how many binary operators its top
    chain holds (``ops``), so that ``a + b + c`` prints without the parentheses of its tree.
    """

    parts: list[str | StepRef] = field(default_factory=list)
    atomic: bool = True
    free: frozenset[str] = frozenset()
    prec: int = 0
    ops: int = 0

    @staticmethod
    def text(s: str, atomic: bool = True, free: frozenset[str] = frozenset()) -> Frag:
        """A fragment of literal template text."""
        return Frag([s], atomic, free)

    def refs(self) -> list[StepRef]:
        """The step references in this fragment, in order."""
        return [p for p in self.parts if isinstance(p, StepRef)]

    def measure(self) -> tuple[int, int, int]:
        """``(length, nesting, links)`` of the printed text: its length in characters (a step
        reference counted as 4), its deepest nesting of brackets, string literals and ``${…}``
        holes, and how many ``.`` and ``[`` it holds outside string literals (an upper bound on
        the member and index links of its chains, each a level of the parsed template)."""
        length = depth = links = 0
        stack: list[str] = []  # the closer each open bracket / string waits for
        for p in self.parts:
            if isinstance(p, StepRef):
                length += 4
                continue
            length += len(p)
            i, n = 0, len(p)
            while i < n:
                ch = p[i]
                if stack and stack[-1] == '"':  # inside a string literal
                    if ch == "\\":
                        i += 2
                        continue
                    if ch == '"':
                        stack.pop()
                    elif ch == "$" and p.startswith("${", i):
                        stack.append("}")
                        i += 1
                elif ch == '"':
                    stack.append('"')
                elif ch == ".":
                    links += 1
                elif ch in _OPENERS:
                    links += ch == "["
                    stack.append(_OPENERS[ch])
                elif ch in ")]}" and stack:
                    stack.pop()
                depth = max(depth, len(stack))
                i += 1
        return length, depth, links

    def render(self, subst: dict[int, str] | None = None) -> str:
        """The template-expression text; ``subst`` maps ``id(step)`` to replacement text.

        A reference to a body step (which has no id) that is not substituted cannot be printed:
        :class:`_NeedsOutline` is raised, so that the enclosing body gets outlined.
        """
        out = []
        for p in self.parts:
            if isinstance(p, StepRef):
                key = id(p.step)
                if subst and key in subst:
                    out.append(subst[key])
                elif "id" in p.step:
                    out.append(p.step["id"])
                else:
                    raise _NeedsOutline()
            else:
                out.append(p)
        return "".join(out)


_OPENERS = {"(": ")", "[": "]", "{": "}"}


def join_frags(*items: Frag | str, atomic: bool = False) -> Frag:
    parts: list[str | StepRef] = []
    free: set[str] = set()
    for it in items:
        if isinstance(it, str):
            parts.append(it)
        else:
            parts.extend(it.parts)
            free.update(it.free)
    return Frag(parts, atomic, frozenset(free))


def paren_frag(f: Frag) -> Frag:
    return f if f.atomic else join_frags("(", f, ")", atomic=True)


NULL = Frag.text("null")


@dataclass
class PlanBuilder:
    """The steps of one plan (main or outlined sub-plan) with its own ``E<n>`` counter."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    counter: int = 0

    def next_id(self) -> str:
        n = self.counter
        self.counter += 1
        return f"E{n}"


@dataclass(eq=False)
class Ctx:
    """A lexical scope and where its steps go.

    - ``target`` receives the steps (a plan's ``steps``, or a body's scratch list);
    - ``bindings`` maps source names declared in this scope to fragments; lookups continue in
      ``parent``;
    - ``body``: an inline control body — steps carry no id, and at most one step is allowed;
    - ``gate``: a ``filter`` condition — its ``item``/``index`` shadow those of enclosing bodies;
    - ``env``: set on the root scope of an outlined sub-plan; names found beyond it are passed in
      the call's ``env`` and read as ``input.env.<name>``.
    """

    plan: PlanBuilder
    target: list[dict[str, Any]]
    stage: str | None
    parent: Ctx | None = None
    bindings: dict[str, Frag] = field(default_factory=dict)
    body: bool = False
    gate: bool = False
    env: dict[str, Frag] | None = None


def scope_name(s: str) -> Frag:
    """A fragment reading a scope name (``item``, ``input.item``, …)."""
    return Frag.text(s, free=frozenset({s.split(".", 1)[0]}))


def _is_ident(s: str) -> bool:
    return s.isidentifier() and s.isascii()


def _number(v: int | float) -> str:
    """A number in the `.flow` syntax (``\\d+(\\.\\d+)?``: no exponent)."""
    if isinstance(v, int):
        return str(v)
    text = format(Decimal(repr(v)), "f")
    if "." not in text:
        text += ".0"
    return text


class LoweringShared:
    """The lowering's declared interface: the state of one lowering (set in
    ``lowering._Lowerer.__init__``) and the methods the rule mixins call on one another.
    :class:`ExpressionLowering` and :class:`~agentflow.compiler.lower_effects.EffectLowering`
    derive from it, so each type-checks on its own (as the checker's mixins do over
    :class:`~agentflow.compiler.checker_shared.CheckerShared`); the methods raise
    ``NotImplementedError`` here and are defined by the mixins or the lowerer."""

    r: CheckResult
    env: T.TypeEnv
    uses: dict[str, ast.UseDecl]
    #: the `.flow` source being lowered (None when not given): expressions kept as written
    source_text: str | None
    #: the subject of a `match`, as written, by the name its arms left read it through
    #: (`match_subject_N`: compiler/lower_match.py), for the graph's titles
    match_subjects: dict[str, str]

    def snapshot(self, ctx: Ctx) -> tuple[list[str], dict[str, Any], int]:
        raise NotImplementedError

    def rollback(self, ctx: Ctx, snapshot: tuple[list[str], dict[str, Any], int]) -> None:
        raise NotImplementedError

    def add_step(
        self, ctx: Ctx, tool_name: str, inp: Any, span: Span, *, select: str | None = None
    ) -> dict[str, Any]:
        raise NotImplementedError

    def body_step(
        self,
        stmts: list[ast.Stmt],
        span: Span,
        ctx: Ctx,
        loop: dict[str, str],
        what: str,
    ) -> dict[str, Any]:
        raise NotImplementedError

    def expr(self, e: ast.Expr, ctx: Ctx) -> Frag:
        raise NotImplementedError

    def resolve(self, name: str, ctx: Ctx | None) -> Frag | None:
        raise NotImplementedError

    def text_value(self, e: ast.Expr, ctx: Ctx) -> str:
        raise NotImplementedError

    def value_input(self, e: ast.Expr, ctx: Ctx) -> Any:
        raise NotImplementedError

    def whole(self, f: Frag) -> str:
        raise NotImplementedError


class ExpressionLowering(LoweringShared):
    """The ``visit_<Node>`` rules of pure expressions (names, literals, operators, paths)."""

    # pure expressions
    def visit_Name(self, e: ast.Name, ctx: Ctx) -> Frag:
        f = self.resolve(e.name, ctx)
        return f if f is not None else Frag.text(e.name)

    def visit_StringLit(self, e: ast.StringLit, ctx: Ctx) -> Frag:
        if e.is_plain:
            return Frag.text(_flow_string(e.text))
        items: list[Frag | str] = ['"']
        for p in e.parts:
            if isinstance(p, str):
                items.append(_flow_string(p)[1:-1])
            else:
                items.extend(["${", self.expr(p.expr, ctx), "}"])
        items.append('"')
        return join_frags(*items, atomic=True)

    def visit_NumberLit(self, e: ast.NumberLit, ctx: Ctx) -> Frag:
        return Frag.text(_number(e.value))

    def visit_BoolLit(self, e: ast.BoolLit, ctx: Ctx) -> Frag:
        return Frag.text("true" if e.value else "false")

    def visit_NullLit(self, e: ast.NullLit, ctx: Ctx) -> Frag:
        return NULL

    def visit_DurationLit(self, e: ast.DurationLit, ctx: Ctx) -> Frag:
        return Frag.text(json.dumps(e.text))

    def visit_ListLit(self, e: ast.ListLit, ctx: Ctx) -> Frag:
        return self._delimited("[", e.items, "]", ctx)

    def _delimited(self, opening: str, exprs: list[ast.Expr], closing: str, ctx: Ctx) -> Frag:
        """``opening e1, e2, … closing``: a list literal's or a call's arguments, as written."""
        items: list[Frag | str] = [opening]
        for i, x in enumerate(exprs):
            if i:
                items.append(", ")
            items.append(self.expr(x, ctx))
        items.append(closing)
        return join_frags(*items, atomic=True)

    def visit_ObjectLit(self, e: ast.ObjectLit, ctx: Ctx) -> Frag:
        items: list[Frag | str] = ["{"]
        for i, en in enumerate(e.entries):
            if i:
                items.append(", ")
            key = en.key if _is_ident(en.key) else _flow_string(en.key)
            items.append(f"{key}: ")
            items.append(self.expr(en.value, ctx))
        items.append("}")
        return join_frags(*items, atomic=True)

    def visit_RangeExpr(self, e: ast.RangeExpr, ctx: Ctx) -> Frag:
        f = join_frags(paren_frag(self.expr(e.low, ctx)), "..", paren_frag(self.expr(e.high, ctx)))
        f.prec, f.ops = _PREC[".."], 1
        return f

    def visit_Binary(self, e: ast.Binary, ctx: Ctx) -> Frag:
        """``left op right`` with only the parentheses the grammar needs: every binary operator
        is left-associative, comparisons and ranges do not chain. A long chain (``1 + 1 + …``)
        stays flat instead of nesting a parenthesis per operator (the template parser allows
        100 levels of brackets). A chain is as deep as it is long in the parsed template (at
        most 200 levels, and 200 operators): past ``_MAX_CHAIN`` operators its left part is
        computed by a `value` step of its own."""
        by_value = by_length(e, self.r)
        if by_value is not None:  # durations compare and subtract by length
            return self.expr(by_value, ctx)
        p = _PREC[e.op]
        left, right = self.expr(e.left, ctx), self.expr(e.right, ctx)
        bare_left = not left.atomic and (left.prec > p or (left.prec == p and p not in (5, 6)))
        bare_right = not right.atomic and right.prec > p
        lops = left.ops if bare_left else 0
        rops = right.ops if bare_right else 0
        if lops + rops + 1 > _MAX_CHAIN:
            step = self.add_step(ctx, "value", {"value": self.whole(left)}, e.left.span)
            left, bare_left, lops = Frag([StepRef(step)]), False, 0
        lf = left if left.atomic or bare_left else paren_frag(left)
        rf = right if right.atomic or bare_right else paren_frag(right)
        f = join_frags(lf, f" {e.op} ", rf)
        f.prec, f.ops = p, lops + rops + 1
        return f

    def visit_Unary(self, e: ast.Unary, ctx: Ctx) -> Frag:
        op = "not " if e.op == "not" else "-"
        f = join_frags(op, paren_frag(self.expr(e.operand, ctx)))
        f.prec = _NOT_PREC if e.op == "not" else _MINUS_PREC
        return f

    def visit_FuncCall(self, e: ast.FuncCall, ctx: Ctx) -> Frag:
        """A library function call, printed as written: the evaluator runs it inside the
        template (docs/reference/functions.md)."""
        by_value = call_by_length(e, self.r)  # durations compared by length
        if by_value is None and needs_once(e, self.r):
            xs = self.expr(e.args[0], ctx)  # `unique(tool())`: the tool's step, read twice
            name = f"\x00unique{id(e)}"  # no source name can be it
            ctx.bindings[name] = xs
            try:
                rewritten = call_by_length(e, self.r, once=ast.Name(e.span, name))
                if rewritten is None:  # pragma: no cover - needs_once says it is rewritten
                    return join_frags(e.name + "(", xs, ")", atomic=True)
                return self.expr(rewritten, ctx)
            finally:
                del ctx.bindings[name]
        if by_value is not None:
            return self.expr(by_value, ctx)
        return self._delimited(e.name + "(", e.args, ")", ctx)

    def visit_Member(self, e: ast.Member, ctx: Ctx) -> Frag:
        if self._nullable(e.obj) and not self._optional_field(e):
            # A required field (or `.count`) read through a `T?` value is null when the value is
            # null or absent (docs/spec/LANGUAGE.md §4), and still `bad_path` when the value is
            # there but the field is missing: `(x ?? {f: null}).f`.
            key = e.name if _is_ident(e.name) else _flow_string(e.name)
            return join_frags(
                "(", self._read(e.obj, ctx), f" ?? {{{key}: null}}).{e.name}", atomic=True
            )
        f = join_frags(paren_frag(self.expr(e.obj, ctx)), "." + e.name, atomic=True)
        if self._optional_field(e):
            return join_frags("(", f, " ?? null)", atomic=True)
        return f

    def _read(self, e: ast.Expr, ctx: Ctx) -> Frag:
        """``e`` as the left operand of ``??``: an optional field read without its own
        ``?? null`` (``??`` already catches the missing path)."""
        if isinstance(e, ast.Member) and self._optional_field(e) and not self._nullable(e.obj):
            return join_frags(paren_frag(self.expr(e.obj, ctx)), "." + e.name, atomic=True)
        return self.expr(e, ctx)

    def _text(self, e: ast.Expr) -> bool:
        """True when the checked type of ``e`` is text (``text``, ``path``, ``member``, string
        literals), never null."""
        return T.is_textual(self.r.type_of(e), self.env)

    def _nullable(self, e: ast.Expr) -> bool:
        """True when the checked type of ``e`` is ``T?`` (or a union with ``null``)."""
        return nullable(self.r.type_of(e), self.env)

    def _optional_field(self, e: ast.Member) -> bool:
        """True when ``e`` reads a field that may be absent (:func:`may_be_absent`)."""
        return may_be_absent(self.r.type_of(e.obj), e.name, self.env)

    def visit_Index(self, e: ast.Index, ctx: Ctx) -> Frag:
        return join_frags(
            paren_frag(self.expr(e.obj, ctx)), "[", self.expr(e.index, ctx), "]", atomic=True
        )

    def visit_Projection(self, e: ast.Projection, ctx: Ctx) -> Frag:
        """``xs[*].path``: a plain template path, or — when the per-element path reads an
        optional part (a `T?` field, a field of a `T?` value) — a ``map`` step over ``xs`` whose
        ``value`` body reads the path of ``item`` with the ``??`` defaults of plain reads
        (docs/spec/LANGUAGE.md §4: an absent optional field is null, never ``bad_path``)."""
        if e.path is not None and self._path_defaults(e.path):
            return self._projection_map(e, ctx)
        # not atomic: an index or field after a projection in the template would apply to each
        # element (`xs[*].id[0]`), so `(xs[*].id)[0]` keeps its parentheses
        base = join_frags(paren_frag(self.expr(e.base, ctx)), "[*]")
        if e.path is None:
            return base
        return join_frags(base, self._path(e.path, ctx))

    def _path_defaults(self, p: ast.Expr) -> bool:
        """True when a per-element projection path crosses an optional part (see
        :meth:`visit_Member`), nested projections included."""
        while True:
            if isinstance(p, ast.Member):
                if self._optional_field(p) or self._nullable(p.obj):
                    return True
                p = p.obj
            elif isinstance(p, ast.Index):
                p = p.obj
            elif isinstance(p, ast.Projection):
                if p.path is not None and self._path_defaults(p.path):
                    return True
                p = p.base
            else:
                return False

    def _projection_map(self, e: ast.Projection, ctx: Ctx) -> Frag:
        assert e.path is not None
        for node in ast.walk(e.path):
            if isinstance(node, ast.Index) and any(
                isinstance(n, _EFFECTS) for n in ast.walk(node.index)
            ):
                # in the `map` body it would run once per element, not once
                # (docs/spec/LANGUAGE.md §10)
                raise LoweringError(
                    "this index has an effect (a tool call, agent, ask or judge) inside a "
                    "projection over optional fields, where it would run once per element; "
                    "bind it first (`let i = …`) and index with `i`",
                    node.index.span,
                )
        if ctx.body:
            raise _NeedsOutline()  # a map cannot be a body
        over = self.expr(e.base, ctx)
        stmts: list[ast.Stmt] = [ast.ExprStmt(e.path.span, e.path)]
        body = self.body_step(stmts, e.span, ctx, {_ELEMENT: "item"}, "projection")
        step = self.add_step(ctx, "map", {"over": self.whole(over), "do": body}, e.span)
        return Frag([StepRef(step)])

    def visit_ProjectionItem(self, e: ast.ProjectionItem, ctx: Ctx) -> Frag:
        f = self.resolve(_ELEMENT, ctx)
        if f is None:  # pragma: no cover - only a projection map body reads the element
            raise LoweringError("projection element outside a projection", e.span)
        return f

    def _path(self, p: ast.Expr, ctx: Ctx) -> Frag:
        if isinstance(p, ast.ProjectionItem):
            return Frag.text("")
        if isinstance(p, ast.Member):
            return join_frags(self._path(p.obj, ctx), "." + p.name, atomic=True)
        if isinstance(p, ast.Index):
            return join_frags(
                self._path(p.obj, ctx), "[", self.expr(p.index, ctx), "]", atomic=True
            )
        if isinstance(p, ast.Projection):  # a nested projection: `xs[*].ys[*].b`
            inner = join_frags(self._path(p.base, ctx), "[*]", atomic=True)
            if p.path is None:
                return inner
            return join_frags(inner, self._path(p.path, ctx), atomic=True)
        raise LoweringError("unsupported projection path", p.span)


# ---------------------------------------------------------------------------------------------
# Reads of fields that may be absent, for expressions evaluated from the checked AST


def nullable(t: T.Type, env: T.TypeEnv) -> bool:
    """True when ``t`` (resolved in ``env``) is ``T?`` or a union with ``null``."""
    t = env.resolve(t)
    if isinstance(t, T.OptionalType):
        return True
    return isinstance(t, T.UnionType) and T.NULL in t.members


def may_be_absent(obj: T.Type, name: str, env: T.TypeEnv) -> bool:
    """True when reading field ``name`` of a value of type ``obj`` may find it absent: the field
    is optional in the object type, or in any object member of a union (``A | B`` with
    ``a: int?`` in ``A``), ``obj`` itself optional or not."""
    t = env.resolve(obj)
    if isinstance(t, T.OptionalType):
        t = env.resolve(t.inner)
    members = t.members if isinstance(t, T.UnionType) else (t,)
    for m in members:
        m = env.resolve(m)
        if isinstance(m, T.OptionalType):
            m = env.resolve(m.inner)
        if isinstance(m, T.ObjectType):
            f = m.fields.get(name)
            if f and f.optional:
                return True
    return False


def absent_reads_null(expr: ast.Expr, result: CheckResult) -> ast.Expr:
    """``expr`` (checked in ``result``) as the lowering reads its fields: a field that may be
    absent read as ``(x.f ?? null)``, a required field of a ``T?`` value as
    ``(x ?? {f: null}).f`` — the rule of :meth:`ExpressionLowering.visit_Member`, for an
    expression the runtime's evaluator runs from the checked AST rather than from a plan
    (eval scorers, `test` expectations: docs/reference/types.md "Objects": reading an absent
    optional field gives ``null``, never an error); and durations compared and subtracted by
    length as :meth:`ExpressionLowering.visit_Binary` lowers them
    (:func:`~agentflow.compiler.durations.by_length`); a user function's call bound to its
    function (its body read the same way), which the plan's ``functions`` would run.

    Returns a copy where something changed (the checked nodes are never modified; the types are
    looked up on them), ``expr`` itself where nothing did."""
    env = result.env
    table: dict[str, ast.UserFunction] = {}

    def functions() -> dict[str, ast.UserFunction]:
        """The user functions, their bodies read by the same rule (built at the first call)."""
        if not table and result.functions:
            for name, sig in result.functions.items():
                params = tuple(p.name.name for p in sig.decl.params)
                table[name] = ast.UserFunction(name, params, sig.decl.body)
            for fn in table.values():
                fn.body = rewrite(fn.body)
        return table

    def rewrite(node: Any) -> Any:
        if isinstance(node, list):
            items = [rewrite(x) for x in node]
            return items if any(a is not b for a, b in zip(items, node, strict=True)) else node
        if not isinstance(node, ast.Node):
            return node
        if isinstance(node, ast.UserCall) and node.function is None:  # a user function's call
            fn = functions().get(node.name)
            if fn is not None:
                return ast.UserCall(node.span, node.name, node.name_span, rewrite(node.args), fn)
        if isinstance(node, ast.Binary):
            by_value = by_length(node, result, rewrite)  # as visit_Binary lowers it
            if by_value is not None:
                return by_value
        if isinstance(node, ast.FuncCall):
            by_value = call_by_length(node, result, rewrite)  # as visit_FuncCall lowers it
            if by_value is not None:
                return by_value
        changed = {}
        for name in node.__dataclass_fields__:
            if name == "span":
                continue
            old = getattr(node, name)
            new = rewrite(old)
            if new is not old:
                changed[name] = new
        out = dataclasses.replace(node, **changed) if changed else node
        if not isinstance(node, ast.Member) or not isinstance(out, ast.Member):
            return out
        span, obj = node.span, result.type_of(node.obj)
        if may_be_absent(obj, node.name, env):
            return ast.Binary(span, "??", out, ast.NullLit(span))
        if nullable(obj, env):
            default = ast.ObjectLit(
                span, [ast.ObjectEntry(span, node.name, node.name_span, ast.NullLit(span))]
            )
            return dataclasses.replace(out, obj=ast.Binary(span, "??", out.obj, default))
        return out

    rewritten: ast.Expr = rewrite(expr)
    return rewritten
