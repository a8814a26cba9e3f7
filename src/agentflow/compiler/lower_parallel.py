"""Lowering's ``parallel [limit N] { name: expr, … }`` block (docs/reference/control.md
"parallel blocks"): the branches with an effect (every branch, when the ``limit`` is computed
and none has one) become the bodies of one ``parallel`` step
(docs/spec/PLAN_IR.md §5, its ``branches`` keyed by the names written, so a branch's step path
``E<n>/<name>`` is stable from one compile to the next and a durable run resumed does not run a
finished branch again); the pure branches are values, computed in the block's value, an object
of every branch by name in the order written."""

from __future__ import annotations

from typing import Any

from agentflow.compiler.lower_effects import _ARM_EFFECTS
from agentflow.compiler.lower_expressions import (
    Ctx,
    Frag,
    LoweringShared,
    StepRef,
    _NeedsOutline,
    join_frags,
)
from agentflow.grammar import ast

#: what makes a branch run in the ``parallel`` step rather than be computed as a value
_BRANCH_EFFECTS = (*_ARM_EFFECTS, ast.LoopExpr, ast.CallOptions, ast.ParallelExpr)


def effectful(e: ast.Expr) -> bool:
    """Whether ``e`` holds an effect (a tool call, an agent, an ``ask`` …): a branch that runs
    concurrently in the ``parallel`` step."""
    return any(isinstance(n, _BRANCH_EFFECTS) for n in ast.walk(e))


class ParallelLowering(LoweringShared):
    """The ``visit_ParallelExpr`` rule."""

    def visit_ParallelExpr(self, e: ast.ParallelExpr, ctx: Ctx) -> Frag:
        """A ``parallel`` step whose ``branches`` are the effectful branches (each one body,
        outlined when it needs more than one step), ``concurrency`` the ``limit`` (absent: all
        at once); the value ``{name: E<n>.name, pure: <its expression>, …}``, or the step's
        result itself when every branch is effectful. A block whose branches are all pure but
        whose ``limit`` is computed is a ``parallel`` step all the same, each branch a body: the
        run checks that limit as it checks any block's (a ``validation`` error quoting it),
        rather than the block being folded into a value whose limit nothing reads."""
        runs = [b for b in e.branches if effectful(b.value)]
        if not runs and e.limit is not None and id(e.limit) not in self.r.constants:
            runs = list(e.branches)
        if runs and ctx.body:
            raise _NeedsOutline()  # a parallel step and its value are more than one body step
        step: dict[str, Any] | None = None
        if runs:
            branches: dict[str, Any] = {}
            for b in runs:
                stmts: list[ast.Stmt] = [ast.ExprStmt(b.value.span, b.value)]
                what = f"parallel branch `{b.key}`"
                branches[b.key] = self.body_step(stmts, b.value.span, ctx, {}, what)
            inp: dict[str, Any] = {"branches": branches}
            if e.limit is not None:
                inp["concurrency"] = self.count_setting(e.limit, ctx)
            step = self.add_step(ctx, "parallel", inp, e.keyword_span or e.span)
            if len(runs) == len(e.branches):
                return Frag([StepRef(step)])
        items: list[Frag | str] = ["{"]
        for i, b in enumerate(e.branches):
            if i:
                items.append(", ")
            items.append(f"{b.key}: ")
            if step is not None and b in runs:
                items.append(Frag([StepRef(step), f".{b.key}"]))
            else:
                items.append(self.expr(b.value, ctx))
        items.append("}")
        return join_frags(*items, atomic=True)

    def count_setting(self, e: ast.Expr, ctx: Ctx) -> Any:
        raise NotImplementedError
