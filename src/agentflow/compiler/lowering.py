"""Lowering a checked `.flow` program to the plan IR (LANGUAGE.md §10, PLAN_IR.md).

Pure expressions cost nothing: they are printed back into the ``{{ … }}`` template language and
inlined where they are used.  Effectful expressions (tool calls, ``agent``, ``map``, ``filter``,
``reduce``, ``ask``, ``verify``) become steps numbered ``E0, E1, …`` in evaluation order; the
``exit`` steps of ``require``/``fail`` are numbered too.  A value that refers to a step is kept as a
:class:`Frag` holding a :class:`StepRef` until it is printed, so that a body's single step can fold
the value into its ``select`` (``result`` in place of the step id).

Entry point: :func:`lower`.  The output is plain data (dicts, lists, strings, numbers) in the
canonical field order; :func:`agentflow.ir.dump.dump_plan` writes it as YAML.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from agentflow.compiler import types as T
from agentflow.compiler.checker import CheckResult
from agentflow.compiler.contracts import agent_contract, contract_for
from agentflow.grammar import ast


class LoweringError(Exception):
    """A construct this version of the compiler cannot lower; carries the span."""

    def __init__(self, message: str, span: ast.Span):
        super().__init__(f"{span}: {message}")
        self.message = message
        self.span = span


# ---------------------------------------------------------------------------------------------
# Fragments: template-expression text with symbolic step references


@dataclass(eq=False)
class StepRef:
    """A reference to a step's (selected) result, printed as its id or as ``result``."""

    step: dict


@dataclass
class Frag:
    """Template-expression text: a list of literal text and :class:`StepRef` pieces.

    ``atomic`` is True when the text needs no parentheses to be used as an operand.
    """

    parts: list[str | StepRef] = field(default_factory=list)
    atomic: bool = True

    @staticmethod
    def text(s: str, atomic: bool = True) -> Frag:
        return Frag([s], atomic)

    def refs(self) -> list[StepRef]:
        return [p for p in self.parts if isinstance(p, StepRef)]

    def render(self, subst: dict[int, str] | None = None) -> str:
        out = []
        for p in self.parts:
            if isinstance(p, StepRef):
                key = id(p.step)
                if subst and key in subst:
                    out.append(subst[key])
                else:
                    out.append(p.step["id"])
            else:
                out.append(p)
        return "".join(out)


def _join(*items: Frag | str, atomic: bool = False) -> Frag:
    parts: list[str | StepRef] = []
    for it in items:
        if isinstance(it, str):
            parts.append(it)
        else:
            parts.extend(it.parts)
    return Frag(parts, atomic)


def _paren(f: Frag) -> Frag:
    return f if f.atomic else _join("(", f, ")", atomic=True)


# ---------------------------------------------------------------------------------------------
# Plan builder


@dataclass
class _PlanBuilder:
    """The steps of one plan (main or outlined sub-plan) with its own ``E<n>`` counter."""

    steps: list[dict] = field(default_factory=list)
    counter: int = 0

    def next_id(self) -> str:
        n = self.counter
        self.counter += 1
        return f"E{n}"


@dataclass
class _Ctx:
    """Where statements are being lowered to.

    ``target`` is the list receiving steps (the plan's steps, or a body's scratch list);
    ``bindings`` maps a source name to its fragment; ``numbered`` is False inside control
    bodies (body steps carry no id); ``stage`` names the enclosing stage for ``meta``.
    """

    plan: _PlanBuilder
    target: list[dict]
    bindings: dict[str, Frag]
    stage: str | None
    numbered: bool = True


class _Lowerer:
    def __init__(self, result: CheckResult, file: str):
        self.r = result
        self.env = result.env
        self.file = os.path.basename(file)
        self.uses = result.uses
        self.stage_values: dict[str, Frag] = {}

    # -- meta --------------------------------------------------------------------------------
    def meta(self, span: ast.Span, ctx: _Ctx, name: str | None = None) -> dict:
        m: dict[str, Any] = {"source": f"{self.file}:{span.line}:{span.column}"}
        if ctx.stage:
            m["stage"] = ctx.stage
        if name:
            m["name"] = name
        return m

    def add_step(
        self, ctx: _Ctx, tool_name: str, inp: Any, span: ast.Span, *, select: str | None = None
    ) -> dict:
        step: dict[str, Any] = {}
        if ctx.numbered:
            step["id"] = ctx.plan.next_id()
        step["tool_name"] = tool_name
        step["input"] = inp
        if select is not None:
            step["select"] = select
        step["meta"] = self.meta(span, ctx)
        ctx.target.append(step)
        return step

    # -- top level ---------------------------------------------------------------------------
    def lower(self) -> dict:
        r = self.r
        plan = _PlanBuilder()
        ctx = _Ctx(plan, plan.steps, {}, None)
        last: Frag | None = None
        for stage in r.stages:
            ctx.stage = stage.name.name
            ctx.bindings = {}
            value = self.block(stage.body, ctx)
            if value is None:
                value = Frag.text("null")
            self.stage_values[stage.name.name] = value
            last = value
        if not plan.steps:
            # A flow with no effectful step still gets one value step (LANGUAGE.md §10).
            span = r.stages[-1].span if r.stages else ast.NO_SPAN
            ctx.stage = r.stages[-1].name.name if r.stages else None
            step = self.add_step(ctx, "value", {"value": self.whole(last or Frag.text("null"))}, span)
            last = Frag([StepRef(step)])
        data: dict[str, Any] = {"version": 1, "name": r.flow_name.lower()}
        if r.description:
            data["description"] = r.description
        if not (isinstance(r.input_type, T.Prim) and r.input_type.name == "json"):
            data["input_schema"] = contract_for(r.input_type, self.env)
        deadline = r.module.of(ast.DeadlineDecl)
        if deadline:
            data["deadline"] = deadline[0].duration.text
        data["steps"] = plan.steps
        data["finish"] = {"mode": "output", "output": self.whole(last or Frag.text("null"))}
        return data

    # -- statements --------------------------------------------------------------------------
    def block(self, block: ast.Block, ctx: _Ctx) -> Frag | None:
        """Lower a body's statements into ``ctx.target``; return the body's value."""
        stmts = block.stmts
        value: Frag | None = None
        for i, st in enumerate(stmts):
            if isinstance(st, ast.LetStmt):
                before = len(ctx.target)
                frag = self.expr(st.value, ctx)
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
                rest = ast.Block(block.span, stmts[i + 1 :])
                out = self.if_stmt(st, rest, ctx)
                if out is not None:
                    return out[0]
        return value

    def exit_step(self, ctx: _Ctx, span: ast.Span, message: ast.Expr, when: Frag | None) -> dict:
        inp: dict[str, Any] = {}
        if when is not None:
            inp["when"] = {"expr": when}
        inp["status"] = "error"
        inp["code"] = "failed"
        inp["message"] = self.text_value(message, ctx)
        return self.add_step(ctx, "exit", inp, span)

    def if_stmt(self, st: ast.IfStmt, rest: ast.Block, ctx: _Ctx) -> tuple[Frag] | None:
        """Lower ``if``.  Returns ``(value,)`` when the if (with the rest of the block as its
        else, where a branch leaves the stage) produced the body's value, else None."""
        then_leaves = _leaves(st.then)
        # `if c { fail m }` → exit when c
        if (
            len(st.then.stmts) == 1
            and isinstance(st.then.stmts[0], ast.FailStmt)
            and st.else_ is None
        ):
            cond = self.expr(st.cond, ctx)
            self.exit_step(ctx, st.then.stmts[0].span, st.then.stmts[0].message, when=cond)
            return None
        cond = self.expr(st.cond, ctx)
        then_step, then_val = self.body_step(st.then, ctx)
        if st.else_ is not None:
            else_block = (
                st.else_
                if isinstance(st.else_, ast.Block)
                else ast.Block(st.else_.span, [st.else_])
            )
            if then_leaves and rest.stmts:
                else_block = ast.Block(else_block.span, else_block.stmts + rest.stmts)
        elif then_leaves:
            else_block = rest
        else:
            else_block = None
        inp: dict[str, Any] = {"when": {"expr": cond}, "then": then_step}
        if else_block is not None and else_block.stmts:
            else_step, _ = self.body_step(else_block, ctx)
            inp["else"] = else_step
        step = self.add_step(ctx, "decide", inp, st.span, select="{{ result.output }}")
        if then_leaves:
            return (Frag([StepRef(step)]),)
        return None

    # -- bodies ------------------------------------------------------------------------------
    def body_step(
        self, block: ast.Block, ctx: _Ctx, extra: dict[str, Frag] | None = None
    ) -> tuple[dict, Frag]:
        """Lower a control body to exactly one step (PLAN_IR.md §5)."""
        scratch: list[dict] = []
        bctx = _Ctx(ctx.plan, scratch, {**ctx.bindings, **(extra or {})}, ctx.stage, False)
        value = self.block(block, bctx)
        if value is None:
            value = Frag.text("null")
        if not scratch:
            step = self.add_step(bctx, "value", {"value": self.whole(value)}, block.span)
            return step, value
        if len(scratch) == 1:
            step = scratch[0]
            refs = value.refs()
            if len(refs) == 1 and refs[0].step is step and value.parts == [refs[0]]:
                return step, value
            if all(ref.step is step for ref in refs):
                sel = step.get("select")
                inner = _select_expr(sel) if sel else "result"
                step["select"] = "{{ " + value.render({id(step): f"({inner})"}) + " }}"
                # keep canonical key order: select before meta
                meta = step.pop("meta")
                step["meta"] = meta
                return step, value
        raise LoweringError(
            "a control body that needs more than one step is not supported yet "
            "(outlining into sub-plans, issue 7)",
            block.span,
        )

    # -- expressions -------------------------------------------------------------------------
    def whole(self, f: Frag) -> str:
        return "{{ " + f.render() + " }}"

    def text_value(self, e: ast.Expr, ctx: _Ctx) -> str:
        """A text-valued input (prompt, message): an interpolated string literal becomes template
        text; anything else a whole-value template."""
        if isinstance(e, ast.StringLit):
            out = []
            for p in e.parts:
                if isinstance(p, str):
                    out.append(p.replace("{{", '{{ "{{" }}'))
                else:
                    out.append(self.whole(self.expr(p.expr, ctx)))
            return "".join(out)
        return self.whole(self.expr(e, ctx))

    def value_input(self, e: ast.Expr, ctx: _Ctx) -> Any:
        """A structured input value: object literals become YAML mappings of templates."""
        if isinstance(e, ast.ObjectLit):
            return {en.key: self.value_input(en.value, ctx) for en in e.entries}
        if isinstance(e, ast.StringLit):
            return self.text_value(e, ctx)
        if isinstance(e, ast.NumberLit | ast.BoolLit) and not isinstance(e.value, float | str):
            return e.value
        return self.whole(self.expr(e, ctx))

    def expr(self, e: ast.Expr, ctx: _Ctx) -> Frag:
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise LoweringError(f"cannot lower {type(e).__name__}", e.span)
        return m(e, ctx)

    # pure expressions
    def x_Name(self, e: ast.Name, ctx: _Ctx) -> Frag:
        if e.name in ctx.bindings:
            return ctx.bindings[e.name]
        if e.name in self.stage_values:
            return self.stage_values[e.name]
        return Frag.text(e.name)

    def x_StringLit(self, e: ast.StringLit, ctx: _Ctx) -> Frag:
        if e.is_plain:
            return Frag.text(json.dumps(e.text, ensure_ascii=False))
        parts: list[str | StepRef] = ['"']
        for p in e.parts:
            if isinstance(p, str):
                esc = json.dumps(p, ensure_ascii=False)[1:-1].replace("$", "\\$")
                parts.append(esc)
            else:
                parts.append("${")
                parts.extend(self.expr(p.expr, ctx).parts)
                parts.append("}")
        parts.append('"')
        return Frag(parts, True)

    def x_NumberLit(self, e: ast.NumberLit, ctx: _Ctx) -> Frag:
        return Frag.text(repr(e.value) if isinstance(e.value, float) else str(e.value))

    def x_BoolLit(self, e: ast.BoolLit, ctx: _Ctx) -> Frag:
        return Frag.text("true" if e.value else "false")

    def x_NullLit(self, e: ast.NullLit, ctx: _Ctx) -> Frag:
        return Frag.text("null")

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
            key = en.key if _is_ident(en.key) else json.dumps(en.key, ensure_ascii=False)
            items.append(f"{key}: ")
            items.append(self.expr(en.value, ctx))
        items.append("}")
        return _join(*items, atomic=True)

    def x_RangeExpr(self, e: ast.RangeExpr, ctx: _Ctx) -> Frag:
        return _join(_paren(self.expr(e.low, ctx)), "..", _paren(self.expr(e.high, ctx)))

    def x_Binary(self, e: ast.Binary, ctx: _Ctx) -> Frag:
        left = _paren(self.expr(e.left, ctx))
        right = _paren(self.expr(e.right, ctx))
        return _join(left, f" {e.op} ", right)

    def x_Unary(self, e: ast.Unary, ctx: _Ctx) -> Frag:
        op = "not " if e.op == "not" else "-"
        return _join(op, _paren(self.expr(e.operand, ctx)))

    def x_Member(self, e: ast.Member, ctx: _Ctx) -> Frag:
        obj = _paren(self.expr(e.obj, ctx))
        f = _join(obj, "." + e.name, atomic=True)
        if self._optional_field(e):
            return _join("(", f, " ?? null)", atomic=True)
        return f

    def _optional_field(self, e: ast.Member) -> bool:
        t = self.env.resolve(self.r.type_of(e.obj))
        if isinstance(t, T.OptionalType):
            t = self.env.resolve(t.inner)
        if isinstance(t, T.ObjectType):
            f = t.fields.get(e.name)
            return bool(f and f.optional)
        return False

    def x_Index(self, e: ast.Index, ctx: _Ctx) -> Frag:
        return _join(_paren(self.expr(e.obj, ctx)), "[", self.expr(e.index, ctx), "]", atomic=True)

    def x_Projection(self, e: ast.Projection, ctx: _Ctx) -> Frag:
        base = _join(_paren(self.expr(e.base, ctx)), "[*]", atomic=True)
        if e.path is None:
            return base
        return _join(base, self._path(e.path, ctx), atomic=True)

    def _path(self, p: ast.Expr, ctx: _Ctx) -> Frag:
        if isinstance(p, ast.ProjectionItem):
            return Frag.text("")
        if isinstance(p, ast.Member):
            return _join(self._path(p.obj, ctx), "." + p.name, atomic=True)
        if isinstance(p, ast.Index):
            return _join(self._path(p.obj, ctx), "[", self.expr(p.index, ctx), "]", atomic=True)
        raise LoweringError("unsupported projection path", p.span)

    # effectful expressions
    def x_Call(self, e: ast.Call, ctx: _Ctx) -> Frag:
        name = e.callee.name if isinstance(e.callee, ast.Name) else "?"
        sig = self.r.tools.get(name) or self.r.tool_decls.get(name)
        tool = f"builtin__{name}" if sig is not None and sig.prelude else name
        inp = {a.name: self.value_input(a.value, ctx) for a in e.args}
        step = self.add_step(ctx, tool, inp, e.span)
        return Frag([StepRef(step)])

    def x_AgentExpr(self, e: ast.AgentExpr, ctx: _Ctx) -> Frag:
        inp: dict[str, Any] = {}
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
                inp["max_iterations"] = _const_int(c.value)
            elif k == "timeout":
                timeout = c.value.text if isinstance(c.value, ast.DurationLit) else None
            elif k == "retry":
                retry = self._retry(c.value)
        t = self.r.type_of(e)
        schema, wrapped = agent_contract(t, self.env)
        inp["output_schema"] = schema
        inp["agent"] = self._target(e.target, ctx)
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
                "require_final",
                "output_schema",
            ],
        )
        select = "{{ result.output.value }}" if wrapped else "{{ result.output }}"
        step = self.add_step(ctx, "agent", ordered, e.keyword_span, select=select)
        if timeout:
            _insert_before(step, "select", "timeout", timeout)
        if retry:
            _insert_before(step, "select", "retry", retry)
        return Frag([StepRef(step)])

    def _tool_name(self, t: ast.ToolRef) -> str:
        if t.pattern:
            return t.name
        sig = self.r.tool_decls.get(t.name)
        if sig is not None and sig.prelude:
            return f"builtin__{t.name}"
        return t.name

    def _retry(self, spec: ast.RetrySpec) -> dict:
        out: dict[str, Any] = {"attempts": _const_int(spec.attempts) if spec.attempts else 0}
        out["on"] = [i.name for i in spec.on] if spec.on is not None else ["transient"]
        return out

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

    def _loop_bindings(self, var: str, ctx: _Ctx, acc: str | None = None) -> dict[str, Frag]:
        b = {var: Frag.text("item"), "index": Frag.text("index")}
        if acc:
            b[acc] = Frag.text("accumulator")
        return b

    def x_MapExpr(self, e: ast.MapExpr, ctx: _Ctx) -> Frag:
        over = self.expr(e.over, ctx)
        body, _ = self.body_step(e.body, ctx, self._loop_bindings(e.var.name, ctx))
        inp: dict[str, Any] = {"over": self.whole(over)}
        if e.parallel:
            inp["concurrency"] = _const_int(e.limit) if e.limit is not None else 4
        inp["do"] = body
        step = self.add_step(ctx, "map", inp, e.keyword_span or e.span)
        return Frag([StepRef(step)])

    def x_FilterExpr(self, e: ast.FilterExpr, ctx: _Ctx) -> Frag:
        over = self.expr(e.over, ctx)
        inp: dict[str, Any] = {"over": self.whole(over)}
        inner = _Ctx(ctx.plan, [], {**ctx.bindings, **self._loop_bindings(e.var.name, ctx)},
                     ctx.stage, False)
        if e.judge is not None:
            inp["infer"] = self.text_value(e.judge, inner)
        else:
            inp["when"] = {"expr": self.expr(e.cond, inner)}
        if inner.target:
            raise LoweringError("a filter condition must be pure", e.span)
        step = self.add_step(ctx, "filter", inp, e.span, select="{{ result.kept }}")
        return Frag([StepRef(step)])

    def x_ReduceExpr(self, e: ast.ReduceExpr, ctx: _Ctx) -> Frag:
        over = self.expr(e.over, ctx)
        init = self.expr(e.init, ctx)
        body, _ = self.body_step(
            e.body, ctx, self._loop_bindings(e.var.name, ctx, acc=e.acc.name)
        )
        inp = {"over": self.whole(over), "initial": self.whole(init), "do": body}
        step = self.add_step(ctx, "reduce", inp, e.span)
        return Frag([StepRef(step)])

    def x_AskExpr(self, e: ast.AskExpr, ctx: _Ctx) -> Frag:
        inp: dict[str, Any] = {"question": self.text_value(e.question, ctx)}
        if e.expect is not None:
            t = self.r.type_of(e)
            inp["schema"] = contract_for(t, self.env)
        if e.default is not None:
            inp["when_unanswered"] = {"default": self.value_input(e.default, ctx)}
        elif e.else_fail is not None:
            inp["when_unanswered"] = {"fail": self.text_value(e.else_fail, ctx)}
        else:
            inp["when_unanswered"] = {"fail": "question not answered"}
        step = self.add_step(ctx, "ask", inp, e.span, select="{{ result.answer }}")
        return Frag([StepRef(step)])

    def x_VerifyExpr(self, e: ast.VerifyExpr, ctx: _Ctx) -> Frag:
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


def _leaves(block: ast.Block) -> bool:
    """True when every path through ``block`` ends in ``return`` or ``fail``."""
    for st in block.stmts:
        if isinstance(st, ast.ReturnStmt | ast.FailStmt):
            return True
        if isinstance(st, ast.IfStmt) and st.else_ is not None:
            els = st.else_ if isinstance(st.else_, ast.Block) else ast.Block(st.span, [st.else_])
            if _leaves(st.then) and _leaves(els):
                return True
    return False


def _select_expr(sel: str) -> str:
    s = sel.strip()
    if s.startswith("{{") and s.endswith("}}"):
        return s[2:-2].strip()
    return s


def _is_ident(s: str) -> bool:
    return s.isidentifier() and s.isascii()


def _const_int(e: ast.Expr | None) -> Any:
    if isinstance(e, ast.NumberLit):
        return e.value
    if isinstance(e, ast.Unary) and e.op == "-" and isinstance(e.operand, ast.NumberLit):
        return -e.operand.value
    return None


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


def _finalize(value: Any) -> Any:
    """Replace every :class:`Frag` left in the data (``when.expr``) by its text."""
    if isinstance(value, Frag):
        return value.render()
    if isinstance(value, dict):
        return {k: _finalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finalize(v) for v in value]
    return value


def lower(result: CheckResult, *, file: str) -> dict:
    """Lower a checked program (no errors) to a plan as plain data (LANGUAGE.md §10).

    ``file`` is the source path; its base name goes into every step's ``meta.source``
    (``"bug-triage.flow:41:13"``).  Raises :class:`LoweringError` for a construct this compiler
    cannot lower yet, with its span.
    """
    if not result.ok:
        raise ValueError("lower() needs a program without errors")
    return _finalize(_Lowerer(result, file).lower())
