"""Lowering's user functions (docs/reference/programs.md "User functions", docs/decisions.md
"User functions"): a call stays a call in its template (``rank(E0.severity)``), and each
function is written once in the plan's ``functions`` section — its parameters' names and its
body as an expression over them (docs/spec/PLAN_IR.md "functions") — which the runtime's
evaluator runs with the parameters bound. A call's body is never copied into the templates, so
nested calls cost their calls, and an error inside a body is told by the function's name and
the call as written."""

from __future__ import annotations

import os
from typing import Any

from agentflow.compiler.lower_expressions import Ctx, Frag, LoweringShared, PlanBuilder
from agentflow.core.spans import Span
from agentflow.errors import LoweringError
from agentflow.grammar import ast

__all__ = ["FunctionLowering"]


class FunctionLowering(LoweringShared):
    """The ``visit_UserCall`` rule and the plan's ``functions`` section."""

    def visit_UserCall(self, e: ast.UserCall, ctx: Ctx) -> Frag:
        """``rank(x)``: the call as written, its arguments lowered in the caller's scope."""
        return self.delimited_call(e.name + "(", e.args, ")", ctx)

    def delimited_call(self, opening: str, exprs: list[ast.Expr], closing: str, ctx: Ctx) -> Frag:
        raise NotImplementedError

    def source(self, span: Span) -> str:
        raise NotImplementedError

    def _where(self, span: Span) -> str:
        """``file.flow:line:col`` of a function's name — in its own file when imported."""
        if span.file != self.r.module.file:
            return f"{os.path.basename(span.file)}:{span.line}:{span.column}"
        return self.source(span)

    def lowered_functions(self) -> dict[str, Any]:
        """The plan's ``functions``: each user function in scope that the program calls
        (directly or through another function), in declaration order, as ``{params: [names],
        expr: body, meta: {source}}``."""
        fns = self.r.functions
        used: set[str] = set()
        for node in ast.walk([*self.r.stages]):
            if isinstance(node, ast.UserCall) and node.name in fns:
                used.add(node.name)
        todo = list(used)
        while todo:
            for callee in fns[todo.pop()].calls:
                if callee not in used:
                    used.add(callee)
                    todo.append(callee)
        out: dict[str, Any] = {}
        for name, sig in fns.items():
            if name not in used:
                continue
            fn = sig.decl
            params = [p.name.name for p in fn.params]
            scratch: list[dict[str, Any]] = []
            ctx = Ctx(PlanBuilder(), scratch, None, bindings={p: Frag.text(p) for p in params})
            body = self.expr(fn.body, ctx)
            if scratch:  # pragma: no cover - the checker refuses effects in a body
                raise LoweringError(f"function `{name}` has effects", fn.body.span)
            out[name] = {
                "params": params,
                "expr": body.render(),
                "meta": {"source": self._where(fn.name.span)},
            }
        return out
