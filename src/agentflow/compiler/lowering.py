"""Lowering a checked `.flow` program to the plan IR (docs/spec/LANGUAGE.md §10,
docs/spec/PLAN_IR.md).

Pure expressions cost nothing: they are printed back into the ``{{ … }}`` template language and
inlined where they are used.  Effectful expressions (tool calls, ``agent``, ``map``, ``filter``,
``reduce``, ``ask``, ``verify``) become steps numbered ``E0, E1, …`` per plan in evaluation order;
the ``exit`` steps of ``require``/``fail`` are numbered too.  A value that refers to a step is kept
as a :class:`Frag` holding a :class:`StepRef` until it is printed, so that a body's single step can
fold the value into its ``select`` (``result`` in place of the step id).

Control bodies (``map``/``reduce`` ``do``, ``decide`` branches) are first lowered *inline* as one
step.  When that is impossible — a second step, a control step that cannot be a body (``map``,
``reduce``, ``decide``, ``verify``), or a ``filter`` gate reading a loop variable of an enclosing
inline body (whose ``item``/``index`` the gate would shadow) — the attempt is abandoned (signalled by
:class:`_NeedsOutline`, everything it registered rolled back) and the body is **outlined** into a
sub-plan ``<flow>__<stage>_<n>`` under ``plans:``, called as ``plan__<flow>__<stage>_<n>`` with
input ``{item, index, accumulator, env}``; ``env`` holds the outer names the body reads, read inside
as ``input.env.<name>``.

Entry point: :func:`lower`.  The output is plain data (dicts, lists, strings, numbers) in the
canonical field order; :func:`agentflow.ir.dump.dump_plan` writes it as YAML.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from agentflow.compiler import types as T
from agentflow.compiler.checker import CheckResult
from agentflow.compiler.contracts import ContractError, agent_contract, contract_for
from agentflow.compiler.contracts import flow_string as _flow_string
from agentflow.core.spans import Span
from agentflow.core.vocabulary import BODY_CONTROL_STEPS, CONTROL_STEPS
from agentflow.errors import LoweringError
from agentflow.grammar import ast

__all__ = ["LoweringError", "lower"]


#: Expressions that lower to effectful steps (tool calls, agents, asks, judges, checks).
_EFFECTS = (ast.Call, ast.AgentExpr, ast.AskExpr, ast.VerifyExpr, ast.FilterExpr)


class _NeedsOutline(Exception):
    """Raised while lowering a control body inline when it cannot be a single body step."""


# When a `let` (or a stage's value) is inlined into the templates that use it
# (docs/spec/LANGUAGE.md §10) and when it is materialised once as a `value` step instead
# (docs/decisions.md, "Lowering"): inlining copies its printed text into every use, so a name used
# more than once is inlined only while its text is short, and any name only while its text is not
# too deep (the template parser allows 100 levels) nor huge.  This keeps compile time and plan size
# linear in the source.
_INLINE_MAX_NESTING = 16
_INLINE_MAX_SHARED = 100  # characters, for a name used more than once
_INLINE_MAX_LENGTH = 4000  # characters, for a name used once

# Binding strength of the binary operators (the grammar's precedence climbing, builder._PREC),
# of prefix `not` and of prefix `-` (tighter than every binary operator).
_PREC = {
    "??": 1,
    "or": 2,
    "and": 3,
    **dict.fromkeys(("==", "!=", "<", "<=", ">", ">=", "in", "not in"), 5),
    "..": 6,
    "+": 7,
    "-": 7,
    "*": 8,
    "/": 8,
    "%": 8,
}
_NOT_PREC = 4
_MINUS_PREC = 9
# Operators a printed chain may hold before its left part becomes a `value` step of its own (the
# template parser allows 200 in one chain, and 200 levels of depth).
_MAX_CHAIN = 150

# Control steps that may not be a body (docs/spec/PLAN_IR.md §5): they nest only through plan__*.
_NOT_BODY = CONTROL_STEPS - BODY_CONTROL_STEPS
# Scope names a nested filter gate shadows (docs/spec/PLAN_IR.md §3).
_SHADOWED = frozenset({"item", "index"})
# The binding of a projection's element (`xs[*]`) in the `map` body it is lowered to: not an
# identifier, so no source name can clash with it.
_ELEMENT = "[*]"


# ---------------------------------------------------------------------------------------------
# Fragments: template-expression text with symbolic step references


@dataclass(eq=False)
class StepRef:
    """A reference to a step's (selected) result, printed as its id or as ``result``."""

    step: dict


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

    def measure(self) -> tuple[int, int]:
        """``(length, nesting)`` of the printed text: its length in characters (a step reference
        counted as 4) and its deepest nesting of brackets, string literals and ``${…}`` holes."""
        length = depth = 0
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
                elif ch in _OPENERS:
                    stack.append(_OPENERS[ch])
                elif ch in ")]}" and stack:
                    stack.pop()
                depth = max(depth, len(stack))
                i += 1
        return length, depth

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


def _join(*items: Frag | str, atomic: bool = False) -> Frag:
    parts: list[str | StepRef] = []
    free: set[str] = set()
    for it in items:
        if isinstance(it, str):
            parts.append(it)
        else:
            parts.extend(it.parts)
            free.update(it.free)
    return Frag(parts, atomic, frozenset(free))


def _paren(f: Frag) -> Frag:
    return f if f.atomic else _join("(", f, ")", atomic=True)


NULL = Frag.text("null")


# ---------------------------------------------------------------------------------------------
# Plan builder and lowering contexts


@dataclass
class _PlanBuilder:
    """The steps of one plan (main or outlined sub-plan) with its own ``E<n>`` counter."""

    steps: list[dict] = field(default_factory=list)
    counter: int = 0

    def next_id(self) -> str:
        n = self.counter
        self.counter += 1
        return f"E{n}"


@dataclass(eq=False)
class _Ctx:
    """A lexical scope and where its steps go.

    - ``target`` receives the steps (a plan's ``steps``, or a body's scratch list);
    - ``bindings`` maps source names declared in this scope to fragments; lookups continue in
      ``parent``;
    - ``body``: an inline control body — steps carry no id, and at most one step is allowed;
    - ``gate``: a ``filter`` condition — its ``item``/``index`` shadow those of enclosing bodies;
    - ``env``: set on the root scope of an outlined sub-plan; names found beyond it are passed in
      the call's ``env`` and read as ``input.env.<name>``.
    """

    plan: _PlanBuilder
    target: list[dict]
    stage: str | None
    parent: _Ctx | None = None
    bindings: dict[str, Frag] = field(default_factory=dict)
    body: bool = False
    gate: bool = False
    env: dict[str, Frag] | None = None


class _Lowerer:
    def __init__(self, result: CheckResult, file: str):
        self.r = result
        self.env = result.env
        self.file = os.path.basename(file)
        self.uses = result.uses
        self.flow = result.flow_name.lower()
        self.plans: dict[str, dict] = {}
        self.sub_counters: dict[str, int] = {}
        # id(LetStmt or StageDecl) -> how many names in the source refer to it
        self.name_uses: Counter[int] = Counter(
            id(sym.decl)
            for sym in result.references.values()
            if sym.kind in ("let", "stage") and sym.decl is not None
        )

    # -- meta / steps ------------------------------------------------------------------------
    def source(self, span: Span) -> str:
        return f"{self.file}:{span.line}:{span.column}"

    def meta(self, span: Span, ctx: _Ctx, name: str | None = None) -> dict:
        m: dict[str, Any] = {"source": self.source(span)}
        if ctx.stage:
            m["stage"] = ctx.stage
        if name:
            m["name"] = name
        return m

    def add_step(
        self, ctx: _Ctx, tool_name: str, inp: Any, span: Span, *, select: str | None = None
    ) -> dict:
        """Append a step to ``ctx.target`` (numbered unless ``ctx`` is an inline body)."""
        if ctx.body and (ctx.target or tool_name in _NOT_BODY):
            raise _NeedsOutline()
        step: dict[str, Any] = {}
        if not ctx.body:
            step["id"] = ctx.plan.next_id()
        step["tool_name"] = tool_name
        step["input"] = inp
        if select is not None:
            step["select"] = select
        step["meta"] = self.meta(span, ctx)
        ctx.target.append(step)
        return step

    # -- names -------------------------------------------------------------------------------
    def share(self, frag: Frag, ctx: _Ctx, span: Span, uses: int, name: str | None = None) -> Frag:
        """The fragment a name bound to ``frag`` and used ``uses`` times should stand for.

        Small fragments are returned as they are (inlined at every use); one that could blow up
        the plan (see ``_INLINE_MAX_*``) is materialised once as a zero-cost ``value`` step
        (``meta.name`` = ``name``) and the name refers to that step.
        """
        if uses == 0 or (len(frag.parts) == 1 and isinstance(frag.parts[0], StepRef)):
            return frag
        length, nesting = frag.measure()
        nesting += frag.ops  # a flat chain `a + b + …` is as deep in the parsed template
        if (
            nesting <= _INLINE_MAX_NESTING
            and length <= _INLINE_MAX_LENGTH
            and (uses == 1 or length <= _INLINE_MAX_SHARED)
        ):
            return frag
        step = self.add_step(ctx, "value", {"value": self.whole(frag)}, span)
        if name:
            step["meta"]["name"] = name
        return Frag([StepRef(step)])

    def resolve(self, name: str, ctx: _Ctx | None) -> Frag | None:
        """The fragment a source name stands for in ``ctx`` (None when unbound).

        Crossing a filter gate, a binding that reads ``item``/``index`` of an enclosing inline
        body would be shadowed: :class:`_NeedsOutline`.  Crossing the root of an outlined sub-plan,
        the name is recorded in its ``env`` and read as ``input.env.<name>``.
        """
        crossed_gate = False
        c = ctx
        while c is not None:
            if name in c.bindings:
                f = c.bindings[name]
                if crossed_gate and f.free & _SHADOWED:
                    raise _NeedsOutline()
                return f
            if c.gate:
                crossed_gate = True
            if c.env is not None:
                if name not in c.env:
                    outer = self.resolve(name, c.parent)
                    if outer is None:
                        return None
                    c.env[name] = outer
                return Frag.text(f"input.env.{name}", free=frozenset({"input"}))
            c = c.parent
        return None

    # -- top level ---------------------------------------------------------------------------
    def lower(self) -> dict:
        r = self.r
        plan = _PlanBuilder()
        root = _Ctx(plan, plan.steps, None, bindings={"input": _scope_name("input")})
        last: Frag | None = None
        ctx = root
        self.stage_values: dict[str, Any] = {}
        for stage in r.stages:
            ctx = _Ctx(plan, plan.steps, stage.name.name, parent=root)
            value = self.block(stage.body.stmts, ctx)
            if value is None:
                value = NULL
            uses = self.name_uses[id(stage)] + (stage is r.stages[-1])  # the finish reads it
            value = self.share(value, ctx, stage.span, uses)
            root.bindings[stage.name.name] = value
            self.stage_values[stage.name.name] = self.whole(value)
            last = value
        if not plan.steps:
            # A flow with no effectful step still gets one value step (docs/spec/LANGUAGE.md §10).
            span = r.stages[-1].span if r.stages else r.module.span
            step = self.add_step(ctx, "value", {"value": self.whole(last or NULL)}, span)
            last = Frag([StepRef(step)])
        data: dict[str, Any] = {"version": 1, "name": self.flow}
        if r.description:
            data["description"] = r.description
        if not (isinstance(r.input_type, T.Prim) and r.input_type.name == "json"):
            data["input_schema"] = contract_for(r.input_type, self.env)
        deadline = r.module.of(ast.DeadlineDecl)
        if deadline:
            data["deadline"] = deadline[0].duration.text
        budget = r.module.of(ast.BudgetDecl)
        if budget:
            data["budget"] = self._budget(budget[0].spec)
        data["steps"] = plan.steps
        data["finish"] = {"mode": "output", "output": self.whole(last or NULL)}
        if self.plans:
            data["plans"] = self.plans
        return data

    # -- statements --------------------------------------------------------------------------
    def block(self, stmts: list[ast.Stmt], ctx: _Ctx, value: Frag | None = None) -> Frag | None:
        """Lower statements into ``ctx.target``; return the value of the block (its ``return``,
        else its last expression statement, else ``value``)."""
        for i, st in enumerate(stmts):
            if isinstance(st, ast.LetStmt):
                before = len(ctx.target)
                frag = self.expr(st.value, ctx)
                frag = self.share(frag, ctx, st.value.span, self.name_uses[id(st)])
                ctx.bindings[st.name.name] = frag
                if len(ctx.target) > before:
                    ctx.target[-1]["meta"]["name"] = st.name.name
            elif isinstance(st, ast.RequireStmt):
                cond = self.expr(st.cond, ctx)
                self.exit_step(ctx, st.span, st.message, when=_join("not ", _paren(cond)))
            elif isinstance(st, ast.FailStmt):
                self.exit_step(ctx, st.span, st.message, when=None)
                return value
            elif isinstance(st, ast.ReturnStmt):
                return self.expr(st.value, ctx)
            elif isinstance(st, ast.ExprStmt):
                value = self.expr(st.expr, ctx)
            elif isinstance(st, ast.IfStmt):
                done, out = self.if_stmt(st, list(stmts[i + 1 :]), ctx, value)
                if done:
                    return out
        return value

    def exit_step(self, ctx: _Ctx, span: Span, message: ast.Expr, when: Frag | None) -> dict:
        inp: dict[str, Any] = {}
        if when is not None:
            inp["when"] = {"expr": when.render()}
        inp["status"] = "error"
        inp["code"] = "failed"
        inp["message"] = self.text_value(message, ctx)
        return self.add_step(ctx, "exit", inp, span)

    def if_stmt(
        self, st: ast.IfStmt, rest: list[ast.Stmt], ctx: _Ctx, value: Frag | None
    ) -> tuple[bool, Frag | None]:
        """Lower ``if``; ``rest`` are the statements after it in the same block.

        Returns ``(True, value)`` when the ``if`` consumed ``rest`` (a branch that leaves the
        stage takes the rest as the other branch, docs/spec/LANGUAGE.md §10) and so produced the
        block's value, else ``(False, value)``.
        """
        then_stmts = list(st.then.stmts)
        else_stmts = _else_stmts(st)
        # `if c { fail m } [else { … }]` → exit when c; the else and the rest follow inline.
        if len(then_stmts) == 1 and isinstance(then_stmts[0], ast.FailStmt):
            cond = self.expr(st.cond, ctx)
            self.exit_step(ctx, then_stmts[0].span, then_stmts[0].message, when=cond)
            return True, self.block((else_stmts or []) + rest, ctx, value)
        # `if c { … } else { fail m }` → exit when not c; the then and the rest follow inline.
        if (
            else_stmts is not None
            and len(else_stmts) == 1
            and isinstance(else_stmts[0], ast.FailStmt)
        ):
            cond = self.expr(st.cond, ctx)
            fail = else_stmts[0]
            self.exit_step(ctx, fail.span, fail.message, when=_join("not ", _paren(cond)))
            return True, self.block(then_stmts + rest, ctx, value)
        if ctx.body:
            raise _NeedsOutline()  # a decide cannot be a body
        cond = self.expr(st.cond, ctx)
        then_leaves = _leaves(then_stmts)
        else_leaves = else_stmts is not None and _leaves(else_stmts)
        consumed = then_leaves or else_leaves
        if then_leaves and not else_leaves:
            else_stmts = (else_stmts or []) + rest
        elif else_leaves and not then_leaves:
            then_stmts = then_stmts + rest
        inp: dict[str, Any] = {"when": {"expr": cond.render()}}
        inp["then"] = self.body_step(then_stmts, st.then.span, ctx, {}, "then branch")
        if else_stmts:
            span = _else_span(st, else_stmts)
            inp["else"] = self.body_step(else_stmts, span, ctx, {}, "else branch")
        step = self.add_step(ctx, "decide", inp, st.span)
        if consumed:
            _insert_before(step, "meta", "select", "{{ result.output }}")
            return True, Frag([StepRef(step)])
        return False, value

    # -- bodies ------------------------------------------------------------------------------
    def body_step(
        self,
        stmts: list[ast.Stmt],
        span: Span,
        ctx: _Ctx,
        loop: dict[str, str],
        what: str,
    ) -> dict:
        """Lower a control body to exactly one step (docs/spec/PLAN_IR.md §5), outlining when
        needed.

        ``loop`` maps source names to the scope names the control step binds
        (``{var: "item", "index": "index", acc: "accumulator"}``).
        """
        # A gate inside the attempt numbers its scratch steps from ``ctx.plan``: roll that back too.
        snapshot = self._snapshot(ctx)
        try:
            return self.inline_body(stmts, span, ctx, loop)
        except _NeedsOutline:
            self._rollback(ctx, snapshot)
        return self.outline_body(stmts, span, ctx, loop, what)

    def _snapshot(self, ctx: _Ctx) -> tuple[list[str], dict, int]:
        """What a failed lowering attempt must undo: sub-plans, their counters, the step counter."""
        return list(self.plans), dict(self.sub_counters), ctx.plan.counter

    def _rollback(self, ctx: _Ctx, snapshot: tuple[list[str], dict, int]) -> None:
        """Undo everything registered since :meth:`_snapshot` (no gaps in ids or plan names)."""
        names, self.sub_counters, ctx.plan.counter = snapshot
        for k in list(self.plans):
            if k not in names:
                del self.plans[k]

    def inline_body(
        self, stmts: list[ast.Stmt], span: Span, ctx: _Ctx, loop: dict[str, str]
    ) -> dict:
        scratch: list[dict] = []
        bindings = {n: _scope_name(s) for n, s in loop.items()}
        bctx = _Ctx(ctx.plan, scratch, ctx.stage, parent=ctx, bindings=bindings, body=True)
        value = self.block(stmts, bctx)
        if value is None:
            value = NULL
        if not scratch:
            return self.add_step(bctx, "value", {"value": self.whole(value)}, span)
        step = scratch[0]
        if len(value.parts) == 1 and isinstance(value.parts[0], StepRef):
            if value.parts[0].step is step:
                return step
        sel = step.get("select")
        inner = _select_expr(sel) if sel else "result"
        text = value.render({id(step): f"({inner})" if sel else inner})
        if sel is not None:
            step["select"] = "{{ " + text + " }}"
        else:
            _insert_before(step, "meta", "select", "{{ " + text + " }}")
        return step

    def outline_body(
        self,
        stmts: list[ast.Stmt],
        span: Span,
        ctx: _Ctx,
        loop: dict[str, str],
        what: str,
    ) -> dict:
        stage = (ctx.stage or "flow").lower()
        n = self.sub_counters.get(stage, 0)
        self.sub_counters[stage] = n + 1
        name = f"{self.flow}__{stage}_{n}"
        self.plans[name] = {}  # reserve its place: outer bodies come before inner ones
        sub = _PlanBuilder()
        bindings = {v: _scope_name(f"input.{s}") for v, s in loop.items()}
        sctx = _Ctx(sub, sub.steps, ctx.stage, parent=ctx, bindings=bindings, env={})
        value = self.block(stmts, sctx)
        if value is None:
            value = NULL
        if not sub.steps:
            step = self.add_step(sctx, "value", {"value": self.whole(value)}, span)
            value = Frag([StepRef(step)])
        where = f" of stage `{ctx.stage}`" if ctx.stage else ""
        self.plans[name] = {
            "version": 1,
            "name": name,
            "description": f"{what}{where}, outlined by flowc",  # runtime: is_outlined()
            "steps": sub.steps,
            "finish": {"mode": "output", "output": self.whole(value)},
        }
        call: dict[str, Any] = {}
        for s in ("item", "index", "accumulator"):
            if s in loop.values():
                call[s] = "{{ " + s + " }}"
        assert sctx.env is not None
        if sctx.env:
            call["env"] = {k: self.whole(v) for k, v in sctx.env.items()}
        step: dict[str, Any] = {
            "tool_name": f"plan__{name}",
            "input": call,
            "meta": self.meta(span, ctx),
        }
        return step

    # -- expressions -------------------------------------------------------------------------
    def whole(self, f: Frag) -> str:
        """A template that renders to the typed value of ``f``."""
        return "{{ " + f.render() + " }}"

    def text_value(self, e: ast.Expr, ctx: _Ctx) -> str:
        """A text-valued input (prompt, message, a tool's text argument): an interpolated string
        literal becomes template text (a literal ``{{`` escaped as ``{{ "{{" }}``); anything else
        a whole-value template.

        ``"${x}"`` alone would be the whole-value template ``{{ x }}``, which renders ``x``'s own
        value (a number, an array); unless ``x`` is text it is printed as the string expression
        ``{{ "${x}" }}``, so interpolation always yields text (docs/spec/LANGUAGE.md §2)."""
        if (
            isinstance(e, ast.StringLit)
            and len(e.parts) == 1
            and isinstance(e.parts[0], ast.Interpolation)
            and not self._text(e.parts[0].expr)
        ):
            return self.whole(self.expr(e, ctx))
        if isinstance(e, ast.StringLit):
            out = []
            for i, p in enumerate(e.parts):
                if isinstance(p, str):
                    p = p.replace("{{", '{{ "{{" }}')
                    if p.endswith("{") and i + 1 < len(e.parts):
                        # `{` before an interpolation would open a hole: `{{ "{" }}`
                        p = p[:-1] + '{{ "{" }}'
                    out.append(p)
                else:
                    out.append(self.whole(self.expr(p.expr, ctx)))
            return "".join(out)
        return self.whole(self.expr(e, ctx))

    def value_input(self, e: ast.Expr, ctx: _Ctx) -> Any:
        """A structured input value: object literals become YAML mappings of templates, string
        literals template text, integer and boolean literals plain YAML scalars."""
        if isinstance(e, ast.ObjectLit):
            return {en.key: self.value_input(en.value, ctx) for en in e.entries}
        if isinstance(e, ast.StringLit):
            return self.text_value(e, ctx)
        if isinstance(e, ast.BoolLit):
            return e.value
        if isinstance(e, ast.NumberLit) and isinstance(e.value, int):
            return e.value
        return self.whole(self.expr(e, ctx))

    def expr(self, e: ast.Expr, ctx: _Ctx) -> Frag:
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise LoweringError(f"cannot lower {type(e).__name__}", e.span)
        return m(e, ctx)

    # pure expressions
    def x_Name(self, e: ast.Name, ctx: _Ctx) -> Frag:
        f = self.resolve(e.name, ctx)
        return f if f is not None else Frag.text(e.name)

    def x_StringLit(self, e: ast.StringLit, ctx: _Ctx) -> Frag:
        if e.is_plain:
            return Frag.text(_flow_string(e.text))
        items: list[Frag | str] = ['"']
        for p in e.parts:
            if isinstance(p, str):
                items.append(_flow_string(p)[1:-1])
            else:
                items.extend(["${", self.expr(p.expr, ctx), "}"])
        items.append('"')
        return _join(*items, atomic=True)

    def x_NumberLit(self, e: ast.NumberLit, ctx: _Ctx) -> Frag:
        return Frag.text(_number(e.value))

    def x_BoolLit(self, e: ast.BoolLit, ctx: _Ctx) -> Frag:
        return Frag.text("true" if e.value else "false")

    def x_NullLit(self, e: ast.NullLit, ctx: _Ctx) -> Frag:
        return NULL

    def x_DurationLit(self, e: ast.DurationLit, ctx: _Ctx) -> Frag:
        return Frag.text(json.dumps(e.text))

    def x_ListLit(self, e: ast.ListLit, ctx: _Ctx) -> Frag:
        items: list[Frag | str] = ["["]
        for i, it in enumerate(e.items):
            if i:
                items.append(", ")
            items.append(self.expr(it, ctx))
        items.append("]")
        return _join(*items, atomic=True)

    def x_ObjectLit(self, e: ast.ObjectLit, ctx: _Ctx) -> Frag:
        items: list[Frag | str] = ["{"]
        for i, en in enumerate(e.entries):
            if i:
                items.append(", ")
            key = en.key if _is_ident(en.key) else _flow_string(en.key)
            items.append(f"{key}: ")
            items.append(self.expr(en.value, ctx))
        items.append("}")
        return _join(*items, atomic=True)

    def x_RangeExpr(self, e: ast.RangeExpr, ctx: _Ctx) -> Frag:
        f = _join(_paren(self.expr(e.low, ctx)), "..", _paren(self.expr(e.high, ctx)))
        f.prec, f.ops = _PREC[".."], 1
        return f

    def x_Binary(self, e: ast.Binary, ctx: _Ctx) -> Frag:
        """``left op right`` with only the parentheses the grammar needs: every binary operator
        is left-associative, comparisons and ranges do not chain. A long chain (``1 + 1 + …``)
        stays flat instead of nesting a parenthesis per operator (the template parser allows
        100 levels of brackets). A chain is as deep as it is long in the parsed template (at
        most 200 levels, and 200 operators): past ``_MAX_CHAIN`` operators its left part is
        computed by a `value` step of its own."""
        p = _PREC[e.op]
        left, right = self.expr(e.left, ctx), self.expr(e.right, ctx)
        bare_left = not left.atomic and (left.prec > p or (left.prec == p and p not in (5, 6)))
        bare_right = not right.atomic and right.prec > p
        lops = left.ops if bare_left else 0
        rops = right.ops if bare_right else 0
        if lops + rops + 1 > _MAX_CHAIN:
            step = self.add_step(ctx, "value", {"value": self.whole(left)}, e.left.span)
            left, bare_left, lops = Frag([StepRef(step)]), False, 0
        lf = left if left.atomic or bare_left else _paren(left)
        rf = right if right.atomic or bare_right else _paren(right)
        f = _join(lf, f" {e.op} ", rf)
        f.prec, f.ops = p, lops + rops + 1
        return f

    def x_Unary(self, e: ast.Unary, ctx: _Ctx) -> Frag:
        op = "not " if e.op == "not" else "-"
        f = _join(op, _paren(self.expr(e.operand, ctx)))
        f.prec = _NOT_PREC if e.op == "not" else _MINUS_PREC
        return f

    def x_Member(self, e: ast.Member, ctx: _Ctx) -> Frag:
        if self._nullable(e.obj) and not self._optional_field(e):
            # A required field (or `.count`) read through a `T?` value is null when the value is
            # null or absent (docs/spec/LANGUAGE.md §4), and still `bad_path` when the value is
            # there but the field is missing: `(x ?? {f: null}).f`.
            key = e.name if _is_ident(e.name) else _flow_string(e.name)
            return _join("(", self._read(e.obj, ctx), f" ?? {{{key}: null}}).{e.name}", atomic=True)
        f = _join(_paren(self.expr(e.obj, ctx)), "." + e.name, atomic=True)
        if self._optional_field(e):
            return _join("(", f, " ?? null)", atomic=True)
        return f

    def _read(self, e: ast.Expr, ctx: _Ctx) -> Frag:
        """``e`` as the left operand of ``??``: an optional field read without its own
        ``?? null`` (``??`` already catches the missing path)."""
        if isinstance(e, ast.Member) and self._optional_field(e) and not self._nullable(e.obj):
            return _join(_paren(self.expr(e.obj, ctx)), "." + e.name, atomic=True)
        return self.expr(e, ctx)

    def _text(self, e: ast.Expr) -> bool:
        """True when the checked type of ``e`` is text (``text``, ``path``, ``member``, string
        literals), never null."""
        return T.is_textual(self.r.type_of(e), self.env)

    def _nullable(self, e: ast.Expr) -> bool:
        """True when the checked type of ``e`` is ``T?`` (or a union with ``null``)."""
        t = self.env.resolve(self.r.type_of(e))
        if isinstance(t, T.OptionalType):
            return True
        return isinstance(t, T.UnionType) and T.NULL in t.members

    def _optional_field(self, e: ast.Member) -> bool:
        """True when ``e`` reads a field that may be absent: optional in the object type of
        ``e.obj``, or in any object member of a union (``A | B`` with ``a: int?`` in ``A``)."""
        t = self.env.resolve(self.r.type_of(e.obj))
        if isinstance(t, T.OptionalType):
            t = self.env.resolve(t.inner)
        members = t.members if isinstance(t, T.UnionType) else (t,)
        for m in members:
            m = self.env.resolve(m)
            if isinstance(m, T.OptionalType):
                m = self.env.resolve(m.inner)
            if isinstance(m, T.ObjectType):
                f = m.fields.get(e.name)
                if f and f.optional:
                    return True
        return False

    def x_Index(self, e: ast.Index, ctx: _Ctx) -> Frag:
        return _join(_paren(self.expr(e.obj, ctx)), "[", self.expr(e.index, ctx), "]", atomic=True)

    def x_Projection(self, e: ast.Projection, ctx: _Ctx) -> Frag:
        """``xs[*].path``: a plain template path, or — when the per-element path reads an
        optional part (a `T?` field, a field of a `T?` value) — a ``map`` step over ``xs`` whose
        ``value`` body reads the path of ``item`` with the ``??`` defaults of plain reads
        (docs/spec/LANGUAGE.md §4: an absent optional field is null, never ``bad_path``)."""
        if e.path is not None and self._path_defaults(e.path):
            return self._projection_map(e, ctx)
        # not atomic: an index or field after a projection in the template would apply to each
        # element (`xs[*].id[0]`), so `(xs[*].id)[0]` keeps its parentheses
        base = _join(_paren(self.expr(e.base, ctx)), "[*]")
        if e.path is None:
            return base
        return _join(base, self._path(e.path, ctx))

    def _path_defaults(self, p: ast.Expr) -> bool:
        """True when a per-element projection path crosses an optional part (see
        :meth:`x_Member`), nested projections included."""
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

    def _projection_map(self, e: ast.Projection, ctx: _Ctx) -> Frag:
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

    def x_ProjectionItem(self, e: ast.ProjectionItem, ctx: _Ctx) -> Frag:
        f = self.resolve(_ELEMENT, ctx)
        if f is None:  # pragma: no cover - only a projection map body reads the element
            raise LoweringError("projection element outside a projection", e.span)
        return f

    def _path(self, p: ast.Expr, ctx: _Ctx) -> Frag:
        if isinstance(p, ast.ProjectionItem):
            return Frag.text("")
        if isinstance(p, ast.Member):
            return _join(self._path(p.obj, ctx), "." + p.name, atomic=True)
        if isinstance(p, ast.Index):
            return _join(self._path(p.obj, ctx), "[", self.expr(p.index, ctx), "]", atomic=True)
        if isinstance(p, ast.Projection):  # a nested projection: `xs[*].ys[*].b`
            inner = _join(self._path(p.base, ctx), "[*]", atomic=True)
            if p.path is None:
                return inner
            return _join(inner, self._path(p.path, ctx), atomic=True)
        raise LoweringError("unsupported projection path", p.span)

    # effectful expressions
    def x_Call(self, e: ast.Call, ctx: _Ctx) -> Frag:
        name = e.callee.name if isinstance(e.callee, ast.Name) else "?"
        sig = self.r.tools.get(name) or self.r.tool_decls.get(name)
        tool = sig.catalog_name if sig is not None else name
        inp = {a.name: self.value_input(a.value, ctx) for a in e.args}
        step = self.add_step(ctx, tool, inp, e.span)
        schema = self._result_schema(sig)
        if schema is not None:
            _insert_before(step, "meta", "result_schema", schema)
        return Frag([StepRef(step)])

    def _result_schema(self, sig: Any) -> dict | None:
        """The ``result_schema`` of a call to a declared catalog tool: its declared result type
        as JSON Schema, open to fields the type does not name (a server may add some), so the
        run checks what the program relies on.  None for the prelude, ``json`` results and
        types with no schema (``extern type``)."""
        if sig is None or sig.prelude or not sig.declared or sig.returns == T.JSON:
            return None
        try:
            schema = contract_for(sig.returns, self.env)
        except ContractError:
            return None
        return _open_objects(schema)

    def x_AgentExpr(self, e: ast.AgentExpr, ctx: _Ctx) -> Frag:
        inp: dict[str, Any] = {"agent": self._target(e.target, ctx)}
        retry = timeout = None
        for c in e.clauses:
            k = c.kind
            if k == "task":
                inp["prompt"] = self.text_value(c.value, ctx)
            elif k == "system":
                inp["system_prompt"] = self.text_value(c.value, ctx)
            elif k == "model":
                inp["model"] = self.text_value(c.value, ctx)
            elif k == "input":
                inp["input"] = self.value_input(c.value, ctx)
            elif k == "tools":
                if c.value is None:
                    inp["tools"] = "none"
                else:
                    inp["tools"] = [self._tool_name(t) for t in c.value]
            elif k == "write":
                inp["write"] = self.whole(self.expr(c.value, ctx))
            elif k == "max_iterations":
                inp["max_iterations"] = self.count_setting(c.value, ctx)
            elif k == "timeout":
                timeout = self.constant(c.value, "timeout")
            elif k == "retry":
                retry = self._retry(c.value)
            elif k == "budget":
                inp["budget"] = self._budget(c.value)
        t = self.r.type_of(e)
        schema, wrapped = agent_contract(t, self.env)
        inp["output_schema"] = schema
        inp["require_final"] = True
        ordered = _order(
            inp,
            [
                "agent",
                "prompt",
                "system_prompt",
                "input",
                "tools",
                "write",
                "model",
                "max_iterations",
                "budget",
                "require_final",
                "output_schema",
            ],
        )
        select = "{{ result.output.value }}" if wrapped else "{{ result.output }}"
        step = self.add_step(ctx, "agent", ordered, e.keyword_span, select=select)
        step["meta"]["expect"] = str(t)  # the contract's `.flow` type, for graphs and reports
        alias = _alias_of(e.target)
        if alias:  # the `use` alias the source names the agent by, for run output
            step["meta"]["agent"] = alias
        if timeout:
            _insert_before(step, "select", "timeout", timeout)
        if retry:
            _insert_before(step, "select", "retry", retry)
        return Frag([StepRef(step)])

    def _tool_name(self, t: ast.ToolRef) -> str:
        if t.pattern:
            return t.name
        sig = self.r.tool_decls.get(t.name)
        return sig.catalog_name if sig is not None else t.name

    def _retry(self, spec: ast.RetrySpec) -> dict:
        attempts = self.constant(spec.attempts, "retry attempts") if spec.attempts else 0
        out: dict[str, Any] = {"attempts": attempts}
        out["on"] = [i.name for i in spec.on] if spec.on is not None else ["transient"]
        return out

    def constant(self, e: ast.Expr, what: str) -> Any:
        """The value the checker computed for a setting the plan fixes (``timeout``,
        ``retry { attempts }``, budget limits); the checker refuses one that is not a constant,
        so a missing value is a compiler bug, never a dropped setting."""
        if id(e) not in self.r.constants:
            raise LoweringError(f"internal compiler error: no constant value for {what}", e.span)
        return self.r.constants[id(e)]

    def count_setting(self, e: ast.Expr, ctx: _Ctx) -> Any:
        """``limit`` / ``max_iterations``: the number when the checker computed it, else a
        template the run evaluates (and checks: a positive integer up to the limit)."""
        if id(e) in self.r.constants:
            return self.r.constants[id(e)]
        return self.whole(self.expr(e, ctx))

    def _budget(self, spec: ast.BudgetSpec) -> dict:
        """A ``budget { … }`` as the plan's ``{inferences?, tokens?, cost?}``."""
        return {
            key: self.constant(value, f"budget `{key}`")
            for key in ("inferences", "tokens", "cost")
            if (value := spec.limit(key)) is not None
        }

    def _target(self, target: ast.Expr, ctx: _Ctx) -> dict:
        if isinstance(target, ast.Name) and target.name in self.uses:
            return {"kind": "alias", "name": self.uses[target.name].target}
        if (
            isinstance(target, ast.Member)
            and target.name == "main"
            and isinstance(target.obj, ast.Name)
        ):
            return {"kind": "team.main", "team": self.uses[target.obj.name].target}
        if (
            isinstance(target, ast.Call)
            and isinstance(target.callee, ast.Member)
            and isinstance(target.callee.obj, ast.Name)
        ):
            team = self.uses[target.callee.obj.name].target
            arg = target.positional[0] if target.positional else target.args[0].value
            return {"kind": "team.member", "team": team, "member": self.whole(self.expr(arg, ctx))}
        raise LoweringError("invalid agent target", target.span)

    def x_MapExpr(self, e: ast.MapExpr, ctx: _Ctx) -> Frag:
        if ctx.body:
            raise _NeedsOutline()
        over = self.expr(e.over, ctx)
        limit = self.count_setting(e.limit, ctx) if e.limit is not None else None
        loop = {e.var.name: "item", "index": "index"}
        what = "parallel map body" if e.parallel else "map body"
        body = self.body_step(e.body.stmts, e.body.span, ctx, loop, what)
        inp: dict[str, Any] = {"over": self.whole(over)}
        if e.parallel:
            inp["concurrency"] = limit if limit is not None else 4
        if e.tolerate is not None:
            n = e.tolerate
            inp["on_item_error"] = {"tolerate": f"{n:g}%" if e.tolerate_percent else n}
        inp["do"] = body
        step = self.add_step(ctx, "map", inp, e.keyword_span or e.span)
        return Frag([StepRef(step)])

    def x_CatchExpr(self, e: ast.CatchExpr, ctx: _Ctx) -> Frag:
        """A `try` step: the guarded expression as its `do` body, the fallback as its `catch` body
        (the binding reads the scope's `error`), `on` the codes caught (all when absent)."""
        if ctx.body:
            raise _NeedsOutline()
        guarded: list[ast.Stmt] = [ast.ExprStmt(e.guarded.span, e.guarded)]
        do = self.body_step(guarded, e.guarded.span, ctx, {}, "guarded expression")
        loop = {e.var.name: "error"} if e.var is not None else {}
        fallback = self.body_step(e.body.stmts, e.body.span, ctx, loop, "catch fallback")
        inp: dict[str, Any] = {"do": do}
        if e.codes:
            inp["on"] = [c.name for c in e.codes]
        inp["catch"] = fallback
        step = self.add_step(ctx, "try", inp, e.keyword_span or e.span)
        return Frag([StepRef(step)])

    def x_FilterExpr(self, e: ast.FilterExpr, ctx: _Ctx) -> Frag:
        over = self.expr(e.over, ctx)
        inp: dict[str, Any] = {"over": self.whole(over)}
        bindings = {e.var.name: _scope_name("item"), "index": _scope_name("index")}
        scratch: list[dict] = []
        gate = _Ctx(ctx.plan, scratch, ctx.stage, parent=ctx, bindings=bindings, gate=True)
        snapshot = self._snapshot(ctx)
        if e.judge is not None:
            inp["infer"] = self.text_value(e.judge, gate)
        else:
            assert e.cond is not None
            inp["when"] = {"expr": self.expr(e.cond, gate).render()}
        if scratch:
            # The gate needs a step (a projection lowered to a `map`): roll the attempt back,
            # compute the gate of every item by a `map` first and let the filter read it by index.
            self._rollback(ctx, snapshot)
            if ctx.body:
                raise _NeedsOutline()  # two steps cannot be a body
            gate_expr = e.judge if e.judge is not None else e.cond
            assert gate_expr is not None
            loop = {e.var.name: "item", "index": "index"}
            stmts: list[ast.Stmt] = [ast.ExprStmt(gate_expr.span, gate_expr)]
            what = "filter prompt" if e.judge is not None else "filter condition"
            body = self.body_step(stmts, gate_expr.span, ctx, loop, what)
            gates = self.add_step(ctx, "map", {"over": inp["over"], "do": body}, gate_expr.span)
            read = "{{ " + gates["id"] + "[index] }}"
            if e.judge is not None:
                inp["infer"] = read
            else:
                inp["when"] = {"expr": gates["id"] + "[index]"}
        step = self.add_step(ctx, "filter", inp, e.span, select="{{ result.kept }}")
        return Frag([StepRef(step)])

    def x_ReduceExpr(self, e: ast.ReduceExpr, ctx: _Ctx) -> Frag:
        if ctx.body:
            raise _NeedsOutline()
        over = self.expr(e.over, ctx)
        init = self.expr(e.init, ctx)
        loop = {e.var.name: "item", "index": "index", e.acc.name: "accumulator"}
        body = self.body_step(e.body.stmts, e.body.span, ctx, loop, "reduce body")
        inp = {"over": self.whole(over), "initial": self.whole(init), "do": body}
        step = self.add_step(ctx, "reduce", inp, e.span)
        return Frag([StepRef(step)])

    def x_AskExpr(self, e: ast.AskExpr, ctx: _Ctx) -> Frag:
        inp: dict[str, Any] = {"question": self.text_value(e.question, ctx)}
        if e.expect is not None:
            inp["schema"] = contract_for(self.r.type_of(e), self.env)
            if "enum" in inp["schema"]:  # `expect "ship" | "hold"`: offer them as choices
                inp["choices"] = list(inp["schema"]["enum"])
        if e.default is not None:
            inp["when_unanswered"] = {"default": self.value_input(e.default, ctx)}
        elif e.else_fail is not None:
            inp["when_unanswered"] = {"fail": self.text_value(e.else_fail, ctx)}
        else:
            inp["when_unanswered"] = {"fail": "question not answered"}
        step = self.add_step(ctx, "ask", inp, e.span, select="{{ result.answer }}")
        return Frag([StepRef(step)])

    def x_VerifyExpr(self, e: ast.VerifyExpr, ctx: _Ctx) -> Frag:
        if ctx.body:
            raise _NeedsOutline()
        checks = []
        judges = []
        for it in e.items:
            if isinstance(it, ast.VerifyCheck):
                checks.append(
                    {
                        "ok": self.whole(self.expr(it.cond, ctx)),
                        "message": self.text_value(it.message, ctx),
                    }
                )
            else:
                judges.append({"prompt": self.text_value(it.prompt, ctx)})
        inp: dict[str, Any] = {"checks": checks}
        if judges:
            inp["judges"] = judges
        step = self.add_step(ctx, "verify", inp, e.span)
        return Frag([StepRef(step)])


# ---------------------------------------------------------------------------------------------
# helpers


def _scope_name(s: str) -> Frag:
    """A fragment reading a scope name (``item``, ``input.item``, …)."""
    return Frag.text(s, free=frozenset({s.split(".", 1)[0]}))


def _alias_of(target: ast.Expr) -> str | None:
    """The ``use`` alias an agent target is written with: ``investigator`` for
    ``agent(investigator)``, ``dev`` for ``agent(dev.main)`` and ``agent(dev.member(x))``."""
    if isinstance(target, ast.Call):
        target = target.callee
    if isinstance(target, ast.Member):
        target = target.obj
    return target.name if isinstance(target, ast.Name) else None


def _else_stmts(st: ast.IfStmt) -> list[ast.Stmt] | None:
    if st.else_ is None:
        return None
    if isinstance(st.else_, ast.Block):
        return list(st.else_.stmts)
    return [st.else_]


def _else_span(st: ast.IfStmt, else_stmts: list[ast.Stmt]) -> Span:
    if st.else_ is not None:
        return st.else_.span
    return else_stmts[0].span if else_stmts else st.span


def _leaves(stmts: list[ast.Stmt]) -> bool:
    """True when every path through ``stmts`` ends in ``return`` or ``fail``."""
    for st in stmts:
        if isinstance(st, ast.ReturnStmt | ast.FailStmt):
            return True
        if isinstance(st, ast.IfStmt):
            els = _else_stmts(st)
            if els is not None and _leaves(list(st.then.stmts)) and _leaves(els):
                return True
    return False


def _select_expr(sel: str) -> str:
    s = sel.strip()
    if s.startswith("{{") and s.endswith("}}"):
        return s[2:-2].strip()
    return s


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


def _order(d: dict, keys: list[str]) -> dict:
    out = {k: d[k] for k in keys if k in d}
    out.update({k: v for k, v in d.items() if k not in out})
    return out


def _insert_before(step: dict, before: str, key: str, value: Any) -> None:
    items = list(step.items())
    step.clear()
    placed = False
    for k, v in items:
        if k == before and not placed:
            step[key] = value
            placed = True
        step[k] = v
    if not placed:
        step[key] = value


def lower(result: CheckResult, *, file: str) -> dict:
    """Lower a checked program (no errors) to a plan as plain data (docs/spec/LANGUAGE.md §10).

    ``file`` is the source path; its base name goes into every step's ``meta.source``
    (``"bug-triage.flow:41:13"``).  Outlined bodies are sub-plans under ``plans``.  Raises
    :class:`LoweringError` (with its span) for a construct this compiler cannot lower, and
    ``ValueError`` when ``result`` has errors.
    """
    if not result.ok:
        raise ValueError("lower() needs a program without errors")
    try:
        return _Lowerer(result, file).lower()
    except _NeedsOutline:  # pragma: no cover - every attempt that raises it is caught
        raise LoweringError(
            "internal error: a body could not be outlined", result.module.span
        ) from None


def _open_objects(schema: Any) -> Any:
    """``schema`` with every ``additionalProperties: false`` dropped (recursively)."""
    if isinstance(schema, list):
        return [_open_objects(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        k: _open_objects(v)
        for k, v in schema.items()
        if not (k == "additionalProperties" and v is False)
    }


def lower_with_stages(result: CheckResult, *, file: str) -> tuple[dict, dict[str, Any]]:
    """:func:`lower`, plus each stage's value as the plan template that reads it after the
    run's steps (``{"todos": "{{ E1 }}"}``) — what the test runner reads stages with
    (docs/reference/testing.md). Raises like :func:`lower`."""
    if not result.ok:
        raise ValueError("lower() needs a program without errors")
    lowerer = _Lowerer(result, file)
    try:
        plan = lowerer.lower()
    except _NeedsOutline:  # pragma: no cover - every attempt that raises it is caught
        raise LoweringError(
            "internal error: a body could not be outlined", result.module.span
        ) from None
    return plan, dict(lowerer.stage_values)
