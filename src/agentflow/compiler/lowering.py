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

The pure expressions' rules and :class:`Frag` are in :mod:`~agentflow.compiler.lower_expressions`,
the effectful ones in :mod:`~agentflow.compiler.lower_effects`.  Entry point: :func:`lower`.  The output is plain data (dicts, lists, strings, numbers) in the
canonical field order; :func:`agentflow.ir.dump.dump_plan` writes it as YAML.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentflow.compiler import types as T
from agentflow.compiler.contracts import contract_for
from agentflow.compiler.durations import by_length
from agentflow.compiler.lower_effects import (
    EffectLowering,
    _insert_before,
)
from agentflow.compiler.lower_expressions import (
    NULL,
    Ctx,
    ExpressionLowering,
    Frag,
    PlanBuilder,
    StepRef,
    _NeedsOutline,
    join_frags,
    paren_frag,
    scope_name,
)
from agentflow.compiler.lower_functions import FunctionLowering
from agentflow.compiler.lower_match import MatchLowering
from agentflow.compiler.lower_parallel import ParallelLowering
from agentflow.compiler.lower_written import (
    LetValue,
    StageMark,
    place_stages,
    place_values,
    span_text,
    step_texts,
    value_expr,
    value_stmt,
)
from agentflow.core.spans import Span
from agentflow.core.vocabulary import BODY_CONTROL_STEPS, CONTROL_STEPS, Code
from agentflow.errors import LoweringError
from agentflow.grammar import ast
from agentflow.grammar.written import written_text

if TYPE_CHECKING:  # a type only: the checker runs the lowering (check_depth)
    from agentflow.compiler.checker import CheckResult

__all__ = ["LoweringError", "lower"]


# When a `let` (or a stage's value) is inlined into the templates that use it
# (docs/spec/LANGUAGE.md §10) and when it is materialised once as a `value` step instead
# (docs/decisions.md, "Lowering"): inlining copies its printed text into every use, so a name used
# more than once is inlined only while its text is short, and any name only while its text is not
# too deep (brackets, operators of its top chain and member/index links together at most
# `_INLINE_MAX_NESTING`: a compiled template may be 200 levels deep) nor huge.  This keeps compile time and plan size
# linear in the source.
_INLINE_MAX_NESTING = 16


_INLINE_MAX_SHARED = 100  # characters, for a name used more than once


_INLINE_MAX_LENGTH = 4000  # characters, for a name used once


# Control steps that may not be a body (docs/spec/PLAN_IR.md §5): they nest only through plan__*.
_NOT_BODY = CONTROL_STEPS - BODY_CONTROL_STEPS


# Scope names a nested filter gate shadows (docs/spec/PLAN_IR.md §3).
_SHADOWED = frozenset({"item", "index"})


#: A finish output that only reads a step's result (``{{ E3 }}``): it cannot fail.
_BARE_REF = re.compile(r"\{\{ *[A-Za-z_][A-Za-z0-9_]* *\}\}")


class _Lowerer(
    ExpressionLowering, EffectLowering, FunctionLowering, MatchLowering, ParallelLowering
):
    """The lowering of one checked module: its plans, steps and scopes, stages, statements and
    control bodies (inline or outlined); the ``visit_<Node>`` rules of expressions are in the
    mixins (:mod:`~agentflow.compiler.lower_expressions`, :mod:`~agentflow.compiler.lower_effects`)
    and found through :data:`_RULES`."""

    def __init__(self, result: CheckResult, file: str, source: str | None = None):
        self.r = result
        self.source_text = source  # for the expressions kept as written (lower_written.py)
        self.match_subjects: dict[str, str] = {}  # lower_match.py
        self.stage_reads: set[tuple[str | None, str]] = set()  # (reading stage, stage read)
        self.stage_values: dict[str, Any] = {}
        self.env = result.env
        self.file = os.path.basename(file)
        self.uses = result.uses
        self.flow = result.flow_name.lower()
        self.plans: dict[str, dict[str, Any]] = {}
        self.sub_counters: dict[str, int] = {}
        # id(LetStmt or StageDecl) -> how many names in the source refer to it
        self.name_uses: Counter[int] = Counter(
            id(sym.decl)
            for sym in result.references.values()
            if sym.kind in ("let", "stage") and sym.decl is not None
        )
        # the `let`s inlined as text (id of the scope binding it, its name), the names of those
        # a condition read, and whether a condition is being lowered as written (lets by name):
        # a step's `meta.when` keeps the condition in the names the user wrote (:meth:`condition`)
        self.inlined_lets: set[tuple[int, str]] = set()
        self.lets_read: set[str] = set()
        self.as_written = False
        # the inlined `let`s whose value can fail at run time: (stage, name, source, fragment,
        # the inlined lets its value reads), recorded in the `meta.lets` of the steps whose
        # text holds them (:func:`_place_lets`)
        self.let_marks: list[_LetMark] = []
        # every inlined `let` worth a node of the graph (not a literal or another name):
        # (stage, name, source, fragment, value as written, whether it can fail: then
        # `meta.lets` has it) — `meta.values` (lower_written.py)
        self.drawn_lets: list[tuple[str | None, str, str, Frag, str | None, bool]] = []

    # -- meta / steps ------------------------------------------------------------------------
    def source(self, span: Span) -> str:
        return f"{self.file}:{span.line}:{span.column}"

    def delimited_call(self, opening: str, exprs: list[ast.Expr], closing: str, ctx: Ctx) -> Frag:
        """``name(a, b)`` as written, its arguments lowered in ``ctx``."""
        return self._delimited(opening, exprs, closing, ctx)

    def meta(self, span: Span, ctx: Ctx, name: str | None = None) -> dict[str, Any]:
        m: dict[str, Any] = {"source": self.source(span)}
        if ctx.stage:
            m["stage"] = ctx.stage
        if name:
            m["name"] = name
        return m

    def add_step(
        self, ctx: Ctx, tool_name: str, inp: Any, span: Span, *, select: str | None = None
    ) -> dict[str, Any]:
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
    def share(self, frag: Frag, ctx: Ctx, span: Span, uses: int, name: str | None = None) -> Frag:
        """The fragment a name bound to ``frag`` and used ``uses`` times should stand for.

        Small fragments are returned as they are (inlined at every use); one that could blow up
        the plan (see ``_INLINE_MAX_*``) is materialised once as a zero-cost ``value`` step
        (``meta.name`` = ``name``) and the name refers to that step.
        """
        if uses == 0 or (len(frag.parts) == 1 and isinstance(frag.parts[0], StepRef)):
            return frag
        length, nesting, links = frag.measure()
        # a flat chain `a + b + …` is as deep in the parsed template as it has operators, and a
        # member chain `a.b.c…` as it has links
        nesting += frag.ops + links
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

    def resolve(self, name: str, ctx: Ctx | None) -> Frag | None:
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
                if c.parent is None and ctx is not None and name in self.stage_values:
                    self.stage_reads.add((ctx.stage, name))  # for meta.stages (lower_written)
                if (id(c), name) in self.inlined_lets:
                    if self.as_written:
                        return Frag.text(name, free=f.free)
                    self.lets_read.add(name)
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
    def lower(self) -> dict[str, Any]:
        r = self.r
        plan = PlanBuilder()
        root = Ctx(plan, plan.steps, None, bindings={"input": scope_name("input")})
        last: Frag | None = None
        ctx = root
        stage_marks: list[StageMark] = []
        self.root_bindings = root.bindings
        for stage in r.stages:
            ctx = Ctx(plan, plan.steps, stage.name.name, parent=root)
            value = self.block(stage.body.stmts, ctx)
            if value is None:
                value = NULL
            uses = self.name_uses[id(stage)] + (stage is r.stages[-1])  # the finish reads it
            # a value step of the stage's value points at its `return`, not the `stage` line
            shared = self.share(value, ctx, value_span(stage.body.stmts, stage.span), uses)
            if shared is not value:  # a value step made for it
                _mark_implicit(shared, stage.body.stmts)
            value = shared
            root.bindings[stage.name.name] = value
            self.stage_values[stage.name.name] = self.whole(value)
            _mark_value_of(value, stage.name.name)
            last = value
            stage_marks += self._inlined_stage(stage, value)
        if not plan.steps:
            # A flow with no effectful step still gets one value step (docs/spec/LANGUAGE.md §10).
            span = (
                value_span(r.stages[-1].body.stmts, r.stages[-1].span)
                if r.stages
                else r.module.span
            )
            step = self.add_step(ctx, "value", {"value": self.whole(last or NULL)}, span)
            self._keep_text(step["meta"], r.stages[-1] if r.stages else None, ctx)
            _mark_implicit(Frag([StepRef(step)]), r.stages[-1].body.stmts if r.stages else [])
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
        functions = self.lowered_functions() if r.functions else {}
        if functions:
            data["functions"] = functions
        data["steps"] = plan.steps
        data["finish"] = self._finish(self.whole(last or NULL), r.stages[-1] if r.stages else None)
        self._keep_text(data["finish"].get("meta"), r.stages[-1] if r.stages else None, ctx)
        if self.plans:
            data["plans"] = self.plans
        if self.let_marks:
            _place_lets(data, self.let_marks)
        place_stages(data, stage_marks, self.stage_reads)
        place_values(data, self._drawn(), stage_marks)
        return data

    def _drawn(self) -> list[LetValue]:
        """:attr:`drawn_lets` with their fragments printed as the plan holds them (a let that
        reads an inline body's step is left out: its text is the body's select)."""
        out: list[LetValue] = []
        for stage, name, source, frag, written, fails in self.drawn_lets:
            try:
                printed = frag.render()
            except _NeedsOutline:
                continue
            if written is not None and len(printed.strip()) >= 4:
                out.append((stage, name, source, printed, written, fails))
        return out

    def _inlined_stage(self, stage: ast.StageDecl, value: Frag) -> list[StageMark]:
        """The mark of ``stage`` when its value was inlined where it is read (no step of its
        own holds it), for ``meta.stages`` (compiler/lower_written.py); else none."""
        expr = value_expr(stage.body.stmts)
        if expr is None or (len(value.parts) == 1 and isinstance(value.parts[0], StepRef)):
            return []
        if isinstance(expr, ast.Name):  # `return doubled`: the stage's node shows the let's value
            let = expr.name
            for st in stage.body.stmts:
                if isinstance(st, ast.LetStmt) and st.name.name == let:
                    expr = st.value
        written = span_text(self.source_text, expr, self.r.module.file)
        try:
            printed = value.render()
        except _NeedsOutline:  # pragma: no cover - a stage's value never reads a body step
            return []
        if written is None or not printed.strip() or printed.strip() == "null":
            return []
        return [(stage.name.name, self.source(expr.span), printed, written)]

    def _compared_by_length(self, e: ast.Expr) -> bool:
        """True when ``e`` compares durations by length (compiler/durations.py): ``seconds``
        fails on a joined text past 100 years (``big > 1s`` where ``big = a + a``)."""
        return any(
            isinstance(n, ast.Binary) and by_length(n, self.r) is not None for n in ast.walk(e)
        )

    def _shown_otherwise(self, stage: str) -> bool:
        """True when a read of ``stage`` is not shown by its name in the plan's terms: its value
        is inlined, or is a step the graph names otherwise (a `let` of the stage, ``answer``)."""
        frag = self.root_bindings.get(stage)
        if frag is None:
            return False
        if not (len(frag.parts) == 1 and isinstance(frag.parts[0], StepRef)):
            return True
        shown = frag.parts[0].step.get("meta", {}).get("name")
        return shown is not None and shown != stage

    def _keep_text(self, meta: Any, stage: ast.StageDecl | None, ctx: Ctx) -> None:
        """Set ``meta.text`` to the last stage's value as written when it reads a stage or an
        inlined ``let`` by name (the plan's template holds what they stand for)."""
        expr = value_expr(stage.body.stmts) if stage is not None else None
        if not isinstance(meta, dict) or expr is None or stage is None:
            return
        named = False
        for n in ast.walk(expr):
            if isinstance(n, ast.Name):
                name = n.name
                if name in self.stage_values and name != stage.name.name:
                    named = self._shown_otherwise(name)
                c: Ctx | None = ctx
                while c is not None and not named:
                    named = (id(c), name) in self.inlined_lets
                    c = c.parent
            if named:
                break
        written = span_text(self.source_text, expr, self.r.module.file) if named else None
        if written is not None:
            meta["text"], meta["text_source"] = written, self.source(expr.span)

    def _finish(self, output: Any, stage: ast.StageDecl | None) -> dict[str, Any]:
        """The plan's ``finish``: ``output``, and when it is an expression that can fail at run
        time (not a step's result alone) the ``meta`` of where it was written — the stage's last
        statement — so its error is placed in the `.flow` as a step's is."""
        finish: dict[str, Any] = {"mode": "output", "output": output}
        if stage is None or not isinstance(output, str) or _BARE_REF.fullmatch(output):
            return finish
        last = stage.body.stmts[-1] if stage.body.stmts else None
        span = stage.span
        if isinstance(last, ast.ReturnStmt):
            span = last.value.span
        elif isinstance(last, ast.ExprStmt):
            span = last.expr.span
        finish["meta"] = {"source": self.source(span), "stage": stage.name.name}
        if not isinstance(value_stmt(stage.body.stmts), ast.ReturnStmt):
            finish["meta"]["implicit"] = True  # no `return` written: named by its stage alone
        return finish

    # -- statements --------------------------------------------------------------------------
    def block(self, stmts: list[ast.Stmt], ctx: Ctx, value: Frag | None = None) -> Frag | None:
        """Lower statements into ``ctx.target``; return the value of the block (its ``return``,
        else its last expression statement, else ``value``)."""
        for i, st in enumerate(stmts):
            if isinstance(st, ast.LetStmt):
                before = len(ctx.target)
                outer, self.lets_read = self.lets_read, set()
                frag = self.expr(st.value, ctx)
                inner, self.lets_read = self.lets_read, self.lets_read | outer
                frag = self.share(frag, ctx, st.value.span, self.name_uses[id(st)])
                if not (len(frag.parts) == 1 and isinstance(frag.parts[0], StepRef)):
                    # inlined as text: a condition that reads it keeps its name (meta.when)
                    self.inlined_lets.add((id(ctx), st.name.name))
                    fails = _can_fail(st.value) or self._compared_by_length(st.value)
                    if not _plain(st.value):
                        as_written = span_text(self.source_text, st.value, self.r.module.file)
                        self.drawn_lets.append(
                            (ctx.stage, st.name.name, self.source(st.value.span), frag,
                             _dedented(as_written), fails)
                        )  # fmt: skip
                    if fails:
                        source = self.source(st.value.span)
                        written = _dedented(
                            span_text(self.source_text, st.value, self.r.module.file)
                        )
                        self.let_marks.append(
                            (ctx.stage, st.name.name, source, frag, inner, written)
                        )
                else:
                    self.inlined_lets.discard((id(ctx), st.name.name))
                ctx.bindings[st.name.name] = frag
                if len(ctx.target) > before and _is_result_of(frag, ctx.target[-1]):
                    # the step whose result the let is (or a field of it): not the subject of
                    # a `match` or an operand the let's value only reads
                    ctx.target[-1]["meta"]["name"] = st.name.name
            elif isinstance(st, ast.RequireStmt):
                cond, written = self.condition(st.cond, ctx)
                step = self.exit_step(
                    ctx, st.span, st.message, when=join_frags("not ", paren_frag(cond))
                )
                self.keep_written(step, written, negate=True)
            elif isinstance(st, ast.FailStmt):
                self.exit_step(ctx, st.span, st.message, when=None)
                return value
            elif isinstance(st, ast.SleepStmt):
                # a constant duration as written (`for: 5m`), else a template the step checks
                wait = self.count_setting(st.duration, ctx)
                self.add_step(ctx, "sleep", {"for": wait}, st.span)
            elif isinstance(st, ast.ReturnStmt):
                return self.expr(st.value, ctx)
            elif isinstance(st, ast.ExprStmt):
                value = self.expr(st.expr, ctx)
            elif isinstance(st, ast.IfStmt):
                done, out = self.if_stmt(st, list(stmts[i + 1 :]), ctx, value)
                if done:
                    return out
        return value

    def condition(self, cond: ast.Expr, ctx: Ctx) -> tuple[Frag, str | None]:
        """A statement's condition lowered, and — when it reads a ``let`` that was inlined as
        text (``let kind = if … then … else …``; ``if kind == "billing"``) — the same condition
        as the user wrote it, the let by its name (a pure condition lowers again adding no
        step), for the step's ``meta.when``: graphs title it in the `.flow`'s terms."""
        self.lets_read = set()
        steps, plans = len(ctx.target), len(self.plans)
        frag = self.expr(cond, ctx)
        if not self.lets_read or len(ctx.target) != steps or len(self.plans) != plans:
            return frag, None  # no inlined let read, or lowering it again would add steps
        self.as_written = True
        try:
            written = self.expr(cond, ctx)
        finally:
            self.as_written = False
        text = written_text(written.render())  # durations' `seconds(…)` read back too
        return frag, (text if text != frag.render() else None)  # (read through input.env)

    @staticmethod
    def keep_written(step: dict[str, Any], written: str | None, negate: bool = False) -> None:
        """Record ``written`` (:meth:`condition`) as ``meta.when`` of ``step``: the condition
        the step tests (``negate``: the step tests ``not`` of it, a ``require``)."""
        if written is not None:
            step["meta"]["when"] = f"not ({written})" if negate else written

    def exit_step(
        self, ctx: Ctx, span: Span, message: ast.Expr, when: Frag | None
    ) -> dict[str, Any]:
        inp: dict[str, Any] = {}
        if when is not None:
            inp["when"] = {"expr": when.render()}
        inp["status"] = "error"
        inp["code"] = str(Code.FAILED)  # the plan holds the plain string
        inp["message"] = self.text_value(message, ctx)
        return self.add_step(ctx, "exit", inp, span)

    def if_stmt(
        self, st: ast.IfStmt, rest: list[ast.Stmt], ctx: Ctx, value: Frag | None
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
            cond, written = self.condition(st.cond, ctx)
            step = self.exit_step(ctx, then_stmts[0].span, then_stmts[0].message, when=cond)
            step["meta"]["kind"] = "if"  # written `if c { fail m }`, not `require`: its label
            self.keep_written(step, written)
            return True, self.block((else_stmts or []) + rest, ctx, value)
        # `if c { … } else { fail m }` → exit when not c; the then and the rest follow inline.
        if (
            else_stmts is not None
            and len(else_stmts) == 1
            and isinstance(else_stmts[0], ast.FailStmt)
        ):
            cond, written = self.condition(st.cond, ctx)
            fail = else_stmts[0]
            step = self.exit_step(
                ctx, fail.span, fail.message, when=join_frags("not ", paren_frag(cond))
            )
            step["meta"]["kind"] = "if"
            self.keep_written(step, written, negate=True)
            return True, self.block(then_stmts + rest, ctx, value)
        if ctx.body:
            raise _NeedsOutline()  # a decide cannot be a body
        cond, written = self.condition(st.cond, ctx)
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
        self.keep_written(step, written)
        if consumed:
            _insert_before(step, "meta", "select", "{{ result.output }}")
            return True, Frag([StepRef(step)])
        return False, value

    # -- bodies ------------------------------------------------------------------------------
    def body_step(
        self,
        stmts: list[ast.Stmt],
        span: Span,
        ctx: Ctx,
        loop: dict[str, str],
        what: str,
    ) -> dict[str, Any]:
        """Lower a control body to exactly one step (docs/spec/PLAN_IR.md §5), outlining when
        needed.

        ``loop`` maps source names to the scope names the control step binds
        (``{var: "item", "index": "index", acc: "accumulator"}``).
        """
        # A gate inside the attempt numbers its scratch steps from ``ctx.plan``: roll that back too.
        snapshot = self.snapshot(ctx)
        try:
            return self.inline_body(stmts, span, ctx, loop)
        except _NeedsOutline:
            self.rollback(ctx, snapshot)
        return self.outline_body(stmts, span, ctx, loop, what)

    def snapshot(self, ctx: Ctx) -> tuple[list[str], dict[str, Any], int]:
        """What a failed lowering attempt must undo: sub-plans, their counters, the step counter."""
        return list(self.plans), dict(self.sub_counters), ctx.plan.counter

    def rollback(self, ctx: Ctx, snapshot: tuple[list[str], dict[str, Any], int]) -> None:
        """Undo everything registered since :meth:`snapshot` (no gaps in ids or plan names)."""
        names, self.sub_counters, ctx.plan.counter = snapshot
        for k in list(self.plans):
            if k not in names:
                del self.plans[k]

    def inline_body(
        self, stmts: list[ast.Stmt], span: Span, ctx: Ctx, loop: dict[str, str]
    ) -> dict[str, Any]:
        scratch: list[dict[str, Any]] = []
        bindings = {n: scope_name(s) for n, s in loop.items()}
        bctx = Ctx(ctx.plan, scratch, ctx.stage, parent=ctx, bindings=bindings, body=True)
        value = self.block(stmts, bctx)
        if value is None:
            value = NULL
        if not scratch:
            made = self.add_step(
                bctx, "value", {"value": self.whole(value)}, value_span(stmts, span)
            )
            _mark_implicit(Frag([StepRef(made)]), stmts)
            return made
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
        ctx: Ctx,
        loop: dict[str, str],
        what: str,
    ) -> dict[str, Any]:
        stage = (ctx.stage or "flow").lower()
        n = self.sub_counters.get(stage, 0)
        self.sub_counters[stage] = n + 1
        name = f"{self.flow}__{stage}_{n}"
        self.plans[name] = {}  # reserve its place: outer bodies come before inner ones
        sub = PlanBuilder()
        bindings = {v: scope_name(f"input.{s}") for v, s in loop.items()}
        sctx = Ctx(sub, sub.steps, ctx.stage, parent=ctx, bindings=bindings, env={})
        value = self.block(stmts, sctx)
        if value is None:
            value = NULL
        if not sub.steps:
            last = self.add_step(
                sctx, "value", {"value": self.whole(value)}, value_span(stmts, span)
            )
            value = Frag([StepRef(last)])
            _mark_implicit(value, stmts)
        where = f" of stage `{ctx.stage}`" if ctx.stage else ""
        self.plans[name] = {
            "version": 1,
            "name": name,
            "description": f"{what}{where}, outlined by flowc",  # runtime: is_outlined()
            "steps": sub.steps,
            "finish": {"mode": "output", "output": self.whole(value)},
        }
        call: dict[str, Any] = {}
        for s in ("item", "index", "round", "accumulator"):
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

    def text_value(self, e: ast.Expr, ctx: Ctx) -> str:
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

    def value_input(self, e: ast.Expr, ctx: Ctx) -> Any:
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

    def expr(self, e: ast.Expr, ctx: Ctx) -> Frag:
        """Lower ``e`` with the ``visit_<Class>`` rule of its node class (:data:`_RULES`)."""
        rule = _RULES.get(type(e))
        if rule is None:
            raise LoweringError(f"cannot lower {type(e).__name__}", e.span)
        return rule(self, e, ctx)


#: node class → the ``visit_<Class>`` rule lowering it (lower_expressions.py, lower_effects.py),
#: built once at import
_RULES: dict[type[ast.Node], Callable[[Any, Any, Ctx], Frag]] = {
    getattr(ast, name[len("visit_") :]): getattr(_Lowerer, name)
    for name in dir(_Lowerer)
    if name.startswith("visit_")
}


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


def lower(result: CheckResult, *, file: str, source: str | None = None) -> dict[str, Any]:
    """Lower a checked program (no errors) to a plan as plain data (docs/spec/LANGUAGE.md §10).

    ``file`` is the source path; its base name goes into every step's ``meta.source``
    (``"bug-triage.flow:41:13"``).  ``source``: the text ``result`` was parsed from, for the
    expressions kept as written (``meta.text``, ``meta.stages``: compiler/lower_written.py;
    none without it).  Outlined bodies are sub-plans under ``plans``.  Raises
    :class:`LoweringError` (with its span) for a construct this compiler cannot lower, and
    ``ValueError`` when ``result`` has errors.
    """
    if not result.ok:
        raise ValueError("lower() needs a program without errors")
    try:
        return _Lowerer(result, file, source).lower()
    except _NeedsOutline:  # pragma: no cover - every attempt that raises it is caught
        raise LoweringError(
            "internal error: a body could not be outlined", result.module.span
        ) from None


def lower_with_stages(
    result: CheckResult, *, file: str, source: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`lower`, plus each stage's value as the plan template that reads it after the
    run's steps (``{"todos": "{{ E1 }}"}``) — what the test runner reads stages with
    (docs/reference/testing.md). Raises like :func:`lower`."""
    if not result.ok:
        raise ValueError("lower() needs a program without errors")
    lowerer = _Lowerer(result, file, source)
    try:
        plan = lowerer.lower()
    except _NeedsOutline:  # pragma: no cover - every attempt that raises it is caught
        raise LoweringError(
            "internal error: a body could not be outlined", result.module.span
        ) from None
    return plan, dict(lowerer.stage_values)


#: Operators whose evaluation can fail at run time (a division by zero, an `int` past 64 bits)
_FAILING_OPS = frozenset({"+", "-", "*", "/", "%"})


def _can_fail(e: ast.Expr) -> bool:
    """True when evaluating ``e`` can raise a run-time error of its own: it calls a library
    function or a user function (whose body can fail: docs/reference/programs.md "User
    functions"), does arithmetic or indexes."""
    for n in ast.walk(e):
        t = type(n)
        if t is ast.FuncCall or t is ast.UserCall or t is ast.Index:
            return True
        if (t is ast.Binary or t is ast.Unary) and n.op in _FAILING_OPS:  # type: ignore[attr-defined]
            return True
    return False


#: a `let` whose value is a literal or another name: no node of its own in the graph
_PLAIN = (ast.Name, ast.NumberLit, ast.BoolLit, ast.NullLit, ast.DurationLit)


def _plain(e: ast.Expr) -> bool:
    """True when ``e`` computes nothing the graph would show: a literal (a text without
    ``${…}``) or a name."""
    if isinstance(e, ast.StringLit):
        return e.is_plain
    return isinstance(e, _PLAIN)


#: an inlined `let` that can fail: (stage, name, `file:line:col` of its value, its fragment,
#: the names of the inlined lets its value reads, its value as written in the `.flow`)
_LetMark = tuple[str | None, str, str, Frag, set[str], str | None]


def _dedented(text: str | None) -> str | None:
    """A value written over lines, its lines after the first without the indentation they
    share (the statement's): ``match x {⏎    "a" => 1,⏎  }`` → ``match x {⏎  "a" => 1,⏎}``."""
    if text is None or "\n" not in text:
        return text
    first, *rest = text.split("\n")
    cut = min((len(r) - len(r.lstrip(" ")) for r in rest if r.strip()), default=0)
    return "\n".join([first, *(r[cut:] for r in rest)])


def _is_result_of(frag: Frag, step: dict[str, Any]) -> bool:
    """Whether ``frag`` is ``step``'s result, or a selection from it (``E0``, ``E0.items``)."""
    first = frag.parts[0] if frag.parts else None
    return isinstance(first, StepRef) and first.step is step


def _place_lets(data: dict[str, Any], marks: list[_LetMark]) -> None:
    """Record, in the ``meta.lets`` of each step (and of ``finish``) whose templates hold the
    printed text of an inlined ``let`` that can fail, ``{name, source, text}`` of that let: the
    executor places an error of its expression at the ``let`` (docs/decisions.md "Where a
    run-time expression error points"), not at the statement that reads it.  ``text`` is the
    let's value as printed with the lets it reads by their names (``n * 2``: each entry stays
    as short as the let's own text, the plan linear in the source); the executor writes them
    back (runtime/where.py ``let_of``)."""
    printed: list[tuple[str | None, str, dict[str, str]]] = []
    full: dict[tuple[str | None, str], str] = {}
    for stage, name, source, frag, inner, as_written in marks:
        try:
            text = frag.render()
        except _NeedsOutline:  # it reads an inline body's step: its text is the body's select
            continue
        written = text
        nested = [(full[(stage, n)], n) for n in inner if (stage, n) in full]
        for sub, n in sorted(nested, key=lambda x: -len(x[0])):
            written = written.replace(sub, n)
        written = written_text(written)  # durations' `seconds(a) < seconds("5m")` as `a < 5m`
        full[(stage, name)] = text
        entry = {"name": name, "source": source, "text": written}
        if (
            as_written is not None
            and as_written != written
            and any(isinstance(p, StepRef) for p in frag.parts)
        ):
            # it reads a step (`match E0 { … }`): `text` is the `.flow`'s, `expr` the plan's
            # printing the executor matches an error's quote against (runtime/where.py)
            entry = {"name": name, "source": source, "text": as_written, "expr": written}
        printed.append((stage, text, entry))

    for meta, own in step_texts(data):
        stage = meta.get("stage")
        found = [
            entry for st, text, entry in printed if st == stage and any(text in t for t in own)
        ]
        if found:
            meta["lets"] = found


def value_span(stmts: list[ast.Stmt], default: Span) -> Span:
    """Where the value of a block of ``stmts`` is written, as :meth:`_Lowerer.block` takes it:
    its first top-level ``return`` statement, else its last expression statement, else
    ``default`` (the block's or the stage's span).  A ``value`` step that holds a block's value
    points there (docs/decisions.md "Run-time names"), so a progress line says the `return`'s
    line, not the `stage` line."""
    st = value_stmt(stmts)
    return st.span if st is not None else default


def _mark_implicit(value: Frag, stmts: list[ast.Stmt]) -> None:
    """Mark the ``value`` step holding the value of a block of ``stmts`` written without a
    ``return`` (its last expression: ``map xs as it { parse_int(it.qty) }``) ``meta.implicit``:
    the run names it by its place alone (``totals › item 1``), never ``› return``, which the
    user did not write (runtime/where.py)."""
    if len(value.parts) != 1 or not isinstance(value.parts[0], StepRef):
        return
    step = value.parts[0].step
    meta = step.setdefault("meta", {})
    if step.get("tool_name") != "value" or meta.get("name"):
        return
    if not isinstance(value_stmt(stmts), ast.ReturnStmt):
        meta["implicit"] = True


def _mark_value_of(value: Frag, stage: str) -> None:
    """Record ``meta.value_of`` on the step of ``stage`` bound to a ``let`` whose result is the
    stage's whole value (``let d = agent(…)``, ``return d``): another stage reads it as
    ``stage``, and graphs name it so there (ir/names.py ``step_names_in_stage``)."""
    if len(value.parts) == 1 and isinstance(value.parts[0], StepRef):
        meta = value.parts[0].step.get("meta")
        if isinstance(meta, dict) and meta.get("stage") == stage and meta.get("name"):
            if meta["name"] != stage:
                meta["value_of"] = stage
