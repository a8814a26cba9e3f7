"""Lowering's effectful expressions: each becomes a step (docs/spec/LANGUAGE.md §10).

:class:`EffectLowering` is a mixin of :class:`~agentflow.compiler.lowering._Lowerer` holding the
``visit_<Node>`` rules of tool calls, ``agent`` (target, tools, ``expect`` contract, ``retry``,
``timeout``, ``budget``), ``map``, ``catch``, ``filter``, ``reduce``, ``loop``, ``ask`` and ``verify``, and
the settings the plan fixes at compile time.
"""

from __future__ import annotations

from typing import Any

from agentflow.compiler import types as T
from agentflow.compiler.check_types import written_type
from agentflow.compiler.contracts import agent_contract, contract_for, object_type_name
from agentflow.compiler.lower_expressions import (
    Ctx,
    Frag,
    LoweringShared,
    StepRef,
    _NeedsOutline,
    paren_frag,
    scope_name,
)
from agentflow.compiler.lower_written import span_text
from agentflow.core.vocabulary import UNANSWERED_FAIL
from agentflow.errors import ContractError, LoweringError
from agentflow.grammar import ast


def _alias_of(target: ast.Expr) -> str | None:
    """The ``use`` alias an agent target is written with: ``investigator`` for
    ``agent(investigator)``, ``dev`` for ``agent(dev.main)`` and ``agent(dev.member(x))``."""
    if isinstance(target, ast.Call):
        target = target.callee
    if isinstance(target, ast.Member):
        target = target.obj
    return target.name if isinstance(target, ast.Name) else None


def _order(d: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    out = {k: d[k] for k in keys if k in d}
    out.update({k: v for k, v in d.items() if k not in out})
    return out


def _insert_before(step: dict[str, Any], before: str, key: str, value: Any) -> None:
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


#: what makes an arm of ``if … then … else`` effectful (run only when chosen: a `decide` step)
_ARM_EFFECTS = (
    ast.Call,
    ast.AgentExpr,
    ast.AskExpr,
    ast.VerifyExpr,
    ast.FilterExpr,
    ast.MapExpr,
    ast.ReduceExpr,
    ast.CatchExpr,
    ast.TryExpr,
)


def arm_effect(n: ast.Node) -> bool:
    """Whether ``n`` makes an arm of ``if`` / ``match`` run as a body of a ``decide`` step (run
    only when chosen): an :data:`_ARM_EFFECTS` node, or a ``parallel`` block whose ``limit`` is
    computed — a step even when every branch is pure, so the run checks that limit
    (compiler/lower_parallel.py)."""
    if isinstance(n, ast.ParallelExpr):
        return n.limit is not None and not isinstance(n.limit, ast.NumberLit)
    return isinstance(n, _ARM_EFFECTS)


class EffectLowering(LoweringShared):
    """The ``visit_<Node>`` rules of effectful expressions, each adding a step."""

    def visit_CondExpr(self, e: ast.CondExpr, ctx: Ctx) -> Frag:
        """``if c then a else b``: with pure arms the template expression itself (the evaluator
        evaluates only the chosen arm); when an arm has an effect (a tool call, an agent …), a
        ``decide`` step whose branches are the arms, so only the chosen arm's effects run."""
        cond = self.expr(e.cond, ctx)
        if not any(arm_effect(n) for arm in (e.then, e.else_) for n in ast.walk(arm)):
            then, else_ = self.expr(e.then, ctx), self.expr(e.else_, ctx)
            # the condition and the `then` arm are operand chains: a conditional there (prec 0)
            # needs parentheses; the `else` arm extends to the end
            c = paren_frag(cond) if cond.prec == 0 else cond
            t = paren_frag(then) if then.prec == 0 else then
            return Frag(
                ["if ", *c.parts, " then ", *t.parts, " else ", *else_.parts],
                False,
                cond.free | then.free | else_.free,
            )
        if ctx.body:
            raise _NeedsOutline()  # a decide cannot be a body
        inp: dict[str, Any] = {"when": {"expr": cond.render()}}
        then_stmt = ast.ExprStmt(e.then.span, e.then)
        inp["then"] = self.body_step([then_stmt], e.then.span, ctx, {}, "then arm")
        inp["else"] = self.body_step(
            [ast.ExprStmt(e.else_.span, e.else_)], e.else_.span, ctx, {}, "else arm"
        )
        step = self.add_step(ctx, "decide", inp, e.span)
        _insert_before(step, "meta", "select", "{{ result.output }}")
        return Frag([StepRef(step)])

    # effectful expressions
    def visit_Call(self, e: ast.Call, ctx: Ctx) -> Frag:
        name = e.callee.name if isinstance(e.callee, ast.Name) else "?"
        sig = self.r.tools.get(name) or self.r.tool_decls.get(name)
        tool = sig.catalog_name if sig is not None else name
        inp = {a.name: self.value_input(a.value, ctx) for a in e.args}
        step = self.add_step(ctx, tool, inp, e.span)
        schema = self._result_schema(sig)
        if schema is not None:
            _insert_before(step, "meta", "result_schema", schema)
        return Frag([StepRef(step)])

    def visit_CallOptions(self, e: ast.CallOptions, ctx: Ctx) -> Frag:
        """A tool call with ``timeout`` / ``retry`` clauses: the call's step, with the step's
        ``timeout`` and ``retry`` (docs/reference/tools.md "Timeout and retry"); the checker
        made sure ``e.call`` is a tool call and the settings constants."""
        if not isinstance(e.call, ast.Call):
            raise LoweringError("internal compiler error: clauses on a non-call", e.span)
        frag = self.visit_Call(e.call, ctx)
        step = frag.parts[0].step if isinstance(frag.parts[0], StepRef) else None
        if step is None:
            raise LoweringError("internal compiler error: a tool call without a step", e.span)
        after = next((k for k in ("select", "result_schema", "meta") if k in step), "meta")
        for c in e.clauses:
            if c.kind == "timeout":
                _insert_before(step, after, "timeout", self.constant(c.value, "timeout"))
            elif c.kind == "retry":
                _insert_before(step, after, "retry", self._retry(c.value))
        return frag

    def _result_schema(self, sig: Any) -> dict[str, Any] | None:
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
        opened: dict[str, Any] = _open_objects(schema)
        return opened

    def visit_AgentExpr(self, e: ast.AgentExpr, ctx: Ctx) -> Frag:
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

    def _retry(self, spec: ast.RetrySpec) -> dict[str, Any]:
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

    def count_setting(self, e: ast.Expr, ctx: Ctx) -> Any:
        """``limit`` / ``max_iterations``: the number when the checker computed it, else a
        template the run evaluates (and checks: a positive integer up to the limit)."""
        if id(e) in self.r.constants:
            return self.r.constants[id(e)]
        return self.whole(self.expr(e, ctx))

    def _budget(self, spec: ast.BudgetSpec) -> dict[str, Any]:
        """A ``budget { … }`` as the plan's ``{inferences?, tokens?, cost?}``."""
        return {
            key: self.constant(value, f"budget `{key}`")
            for key in ("inferences", "tokens", "cost")
            if (value := spec.limit(key)) is not None
        }

    def _target(self, target: ast.Expr, ctx: Ctx) -> dict[str, Any]:
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

    def visit_MapExpr(self, e: ast.MapExpr, ctx: Ctx) -> Frag:
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
            # a percentage exactly as written (`:g` alone rounds to 6 digits: 12.3456789% would
            # become 12.3457%, another tolerance for a long enough list)
            pct = f"{n:g}" if float(f"{n:g}") == n else repr(n)
            inp["on_item_error"] = {"tolerate": f"{pct}%" if e.tolerate_percent else n}
        inp["do"] = body
        step = self.add_step(ctx, "map", inp, e.keyword_span or e.span)
        _name_scopes(step, loop)
        return Frag([StepRef(step)])

    def visit_CatchExpr(self, e: ast.CatchExpr | ast.TryExpr, ctx: Ctx) -> Frag:
        """A `try` step: the guarded expression (a `try` block's statements) as its `do` body, the
        fallback as its `catch` body (the binding reads the scope's `error`), `on` the codes
        caught (all when absent)."""
        if ctx.body:
            raise _NeedsOutline()
        if isinstance(e, ast.TryExpr):
            do = self.body_step(e.block.stmts, e.block.span, ctx, {}, "try block")
        else:
            guarded: list[ast.Stmt] = [ast.ExprStmt(e.guarded.span, e.guarded)]
            do = self.body_step(guarded, e.guarded.span, ctx, {}, "guarded expression")
        loop = {e.var.name: "error"} if e.var is not None else {}
        fallback = self.body_step(e.body.stmts, e.body.span, ctx, loop, "catch fallback")
        inp: dict[str, Any] = {"do": do}
        if e.codes:
            inp["on"] = [c.name for c in e.codes]
        inp["catch"] = fallback
        # a `try` block's step is where the block starts (its progress line, its events);
        # `x catch { … }` is at its `catch`
        where = e.try_span if isinstance(e, ast.TryExpr) and e.try_span else e.keyword_span
        step = self.add_step(ctx, "try", inp, where or e.span)
        if not isinstance(e, ast.TryExpr):  # `x catch { … }`: named `catch`, as written
            step["meta"]["kind"] = "catch"
        _name_scopes(step, loop)
        return Frag([StepRef(step)])

    visit_TryExpr = visit_CatchExpr

    def visit_FilterExpr(self, e: ast.FilterExpr, ctx: Ctx) -> Frag:
        over = self.expr(e.over, ctx)
        inp: dict[str, Any] = {"over": self.whole(over)}
        bindings = {e.var.name: scope_name("item"), "index": scope_name("index")}
        scratch: list[dict[str, Any]] = []
        gate = Ctx(ctx.plan, scratch, ctx.stage, parent=ctx, bindings=bindings, gate=True)
        snapshot = self.snapshot(ctx)
        written: str | None = None
        if e.judge is not None:
            inp["infer"] = self.text_value(e.judge, gate)
        else:
            assert e.cond is not None
            inp["when"] = {"expr": self.expr(e.cond, gate).render()}
        if scratch:
            # The gate needs a step (a projection lowered to a `map`): roll the attempt back,
            # compute the gate of every item by a `map` first and let the filter read it by index.
            self.rollback(ctx, snapshot)
            if ctx.body:
                raise _NeedsOutline()  # two steps cannot be a body
            gate_expr = e.judge if e.judge is not None else e.cond
            assert gate_expr is not None
            loop = {e.var.name: "item", "index": "index"}
            stmts: list[ast.Stmt] = [ast.ExprStmt(gate_expr.span, gate_expr)]
            what = "filter prompt" if e.judge is not None else "filter condition"
            body = self.body_step(stmts, gate_expr.span, ctx, loop, what)
            # the gates' map is the filter's own work: at the filter's place, named `filter`
            # (progress, `--explore`: meta.kind), the filter's gate kept as written (meta.when)
            gates = self.add_step(ctx, "map", {"over": inp["over"], "do": body}, e.span)
            gates["meta"]["kind"] = "filter"
            _name_scopes(gates, loop)
            read = "{{ " + gates["id"] + "[index] }}"
            if e.judge is not None:
                inp["infer"] = read
            else:
                inp["when"] = {"expr": gates["id"] + "[index]"}
            written = span_text(self.source_text, gate_expr, self.r.module.file)
        step = self.add_step(ctx, "filter", inp, e.span, select="{{ result.kept }}")
        if scratch and written is not None:
            step["meta"]["when"] = written
        _name_scopes(step, {e.var.name: "item"})
        return Frag([StepRef(step)])

    def visit_ReduceExpr(self, e: ast.ReduceExpr, ctx: Ctx) -> Frag:
        if ctx.body:
            raise _NeedsOutline()
        over = self.expr(e.over, ctx)
        init = self.expr(e.init, ctx)
        loop = {e.var.name: "item", "index": "index", e.acc.name: "accumulator"}
        body = self.body_step(e.body.stmts, e.body.span, ctx, loop, "reduce body")
        inp = {"over": self.whole(over), "initial": self.whole(init), "do": body}
        step = self.add_step(ctx, "reduce", inp, e.span)
        _name_scopes(step, loop)
        return Frag([StepRef(step)])

    def visit_LoopExpr(self, e: ast.LoopExpr, ctx: Ctx) -> Frag:
        """A `loop` step (docs/spec/PLAN_IR.md §5): ``up_to`` the bound (a number when
        constant), the body as ``do`` (the round variable reads ``round``, the state
        ``accumulator``), ``until`` a condition and ``on_exhausted`` from the ``else``."""
        if ctx.body:
            raise _NeedsOutline()
        bound = self.count_setting(e.over, ctx)
        init = self.expr(e.init, ctx)
        loop = {e.var.name: "round", e.acc.name: "accumulator"}
        body = self.body_step(e.body.stmts, e.body.span, ctx, loop, "loop body")
        inp: dict[str, Any] = {"up_to": bound, "initial": self.whole(init), "do": body}
        if e.until is not None:
            scratch: list[dict[str, Any]] = []
            bindings = {n: scope_name(s) for n, s in loop.items()}
            after = Ctx(ctx.plan, scratch, ctx.stage, parent=ctx, bindings=bindings)
            inp["until"] = {"expr": self.expr(e.until, after).render()}
            if e.else_fail is not None:
                inp["on_exhausted"] = {"fail": self.text_value(e.else_fail, after)}
            elif e.else_value is not None:
                inp["on_exhausted"] = {"value": self.whole(self.expr(e.else_value, after))}
            if scratch:
                raise LoweringError(
                    "a `loop`'s `until` and `else` are computed without steps of their own: "
                    "compute this in the body and keep it in the state",
                    e.until.span,
                )
        step = self.add_step(ctx, "loop", inp, e.keyword_span or e.span)
        _name_scopes(step, loop)
        return Frag([StepRef(step)])

    def visit_AskExpr(self, e: ast.AskExpr, ctx: Ctx) -> Frag:
        inp: dict[str, Any] = {"question": self.text_value(e.question, ctx)}
        if e.expect is not None:
            inp["schema"] = contract_for(self.r.type_of(e), self.env)
            named = object_type_name(self.r.type_of(e), self.env)
            if named is not None:  # a wrong answer is said in its name (`Plan`), not spelt out
                inp["schema"] = {**inp["schema"], "title": named}
            if "enum" in inp["schema"]:  # `expect "ship" | "hold"`: offer them as choices
                inp["choices"] = list(inp["schema"]["enum"])
        if e.default is not None:
            inp["when_unanswered"] = {"default": self.value_input(e.default, ctx)}
        elif e.else_fail is not None:
            inp["when_unanswered"] = {"fail": self.text_value(e.else_fail, ctx)}
        else:
            inp["when_unanswered"] = {"fail": UNANSWERED_FAIL}
        step = self.add_step(ctx, "ask", inp, e.span, select="{{ result.answer }}")
        if e.expect is not None:  # the type as the `.flow` writes it (`Choice`, not its values)
            step["meta"]["expect"] = written_type(e.expect)
        return Frag([StepRef(step)])

    def visit_VerifyExpr(self, e: ast.VerifyExpr, ctx: Ctx) -> Frag:
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


def _name_scopes(step: dict[str, Any], loop: dict[str, str]) -> None:
    """Record in ``meta.names`` the `.flow` names of the scope names a control step binds for
    its bodies (``{"item": "t", "accumulator": "acc"}``; those spelled alike left out): graphs,
    costs and run-time errors put them back (:mod:`agentflow.ir.names`)."""
    names = {scope: source for source, scope in loop.items() if scope != source}
    if names:
        step["meta"]["names"] = names
