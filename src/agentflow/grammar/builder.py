"""The AST builder: Lark transformer callbacks that build :mod:`agentflow.grammar.ast` nodes,
one call per LALR reduction (docs/spec/LANGUAGE.md §1–8).

:class:`Builder` has one method per rule (or rule alias) of :file:`flow.lark`; each receives the
children of the reduction (:class:`~agentflow.grammar.scanner.Tok` or values built before) and
returns a node.  Binary operators arrive as a flat sequence and are arranged by precedence
climbing (:func:`~agentflow.grammar.builder_exprs._climb`, §4), which keeps the number of LALR
reductions per operand small.
Errors that the grammar cannot express (chained comparisons, a comma where a line break is
needed, too long expressions) are raised here as :class:`~agentflow.grammar.scanner.SynErr`.

:class:`Builder` holds the callbacks of statements and control expressions; it inherits those
of items (:class:`~agentflow.grammar.builder_items.ItemBuilder`: declarations, ``test`` and
``eval`` blocks, types) and of expressions
(:class:`~agentflow.grammar.builder_exprs.ExprBuilder`: operators, postfix forms, literals);
:mod:`agentflow.grammar.builder_shared` holds what they share.
"""

from __future__ import annotations

from typing import Any

from agentflow.core.vocabulary import duration_ms as _duration_ms
from agentflow.grammar import ast
from agentflow.grammar.builder_exprs import ExprBuilder
from agentflow.grammar.builder_items import ItemBuilder
from agentflow.grammar.builder_shared import (
    _Acc,
    _AskTail,
    _budget,
    _Checks,
    _Clauses,
    _comma_list,
    _cover,
    _Idents,
    _Kids,
    _LoopHead,
    _MapOptions,
    _number,
    _retry,
    _Stmts,
    _string_value,
    _Tolerance,
)
from agentflow.grammar.scanner import SynErr

__all__ = ["Builder", "match_arm"]


def match_arm(patterns: list[ast.Expr], value: ast.Expr) -> ast.MatchArm:
    """The arm ``patterns => value``; a ``_`` (an ``ast.Name``) must stand alone in its arm and
    becomes the empty pattern list of the wildcard arm."""
    wild = [p for p in patterns if isinstance(p, ast.Name)]
    if wild and len(patterns) > 1:
        raise SynErr(
            "`_` matches every value: it stands alone in its arm",
            wild[0].span,
            hint="write `_ => …` as an arm of its own, the last one",
        )
    span = patterns[0].span.to(value.span)
    if wild:
        return ast.MatchArm(span, [], value, wild[0].span)
    return ast.MatchArm(span, patterns, value)


class Builder(ItemBuilder, ExprBuilder):
    """Lark transformer callbacks; each receives the children of one reduction."""

    # -- entry points ---------------------------------------------------------------------------

    def expr_only(self, c: _Kids) -> ast.Expr:
        out: ast.Expr = c[0]
        return out

    # -- statements -----------------------------------------------------------------------------

    def block(self, c: _Kids) -> ast.Block:
        return ast.Block(_cover(c[0], c[2]), c[1])

    def stmts(self, c: _Kids) -> _Stmts:
        if not c:
            return []
        out: _Stmts = c[0]
        out.append(c[1])
        return out

    def let_stmt(self, c: _Kids) -> ast.LetStmt:
        ann = c[3] if len(c) == 6 else None
        return ast.LetStmt(_cover(c[0], c[-1]), ast.Ident(c[1].span, c[1].value), ann, c[-1])

    def require_stmt(self, c: _Kids) -> ast.RequireStmt:
        return ast.RequireStmt(_cover(c[0], c[4]), c[1], c[4])

    def fail_stmt(self, c: _Kids) -> ast.FailStmt:
        return ast.FailStmt(_cover(c[0], c[1]), c[1])

    def sleep_stmt(self, c: _Kids) -> ast.SleepStmt:
        return ast.SleepStmt(_cover(c[0], c[1]), c[1])

    def return_stmt(self, c: _Kids) -> ast.ReturnStmt:
        return ast.ReturnStmt(_cover(c[0], c[1]), c[1])

    def expr_stmt(self, c: _Kids) -> ast.ExprStmt:
        return ast.ExprStmt(c[0].span, c[0])

    def if_stmt(self, c: _Kids) -> ast.IfStmt:
        else_ = c[4] if len(c) == 5 else None
        return ast.IfStmt(_cover(c[0], c[-1]), c[1], c[2], else_)

    # -- control expressions --------------------------------------------------------------------

    def filter_expr(self, c: _Kids) -> ast.FilterExpr:
        return ast.FilterExpr(
            _cover(c[0], c[5]), c[1], ast.Ident(c[3].span, c[3].value), c[5], None
        )

    def filter_judge(self, c: _Kids) -> ast.FilterExpr:
        return ast.FilterExpr(
            _cover(c[0], c[6]), c[1], ast.Ident(c[3].span, c[3].value), None, c[6]
        )

    def ask_tail(self, c: _Kids) -> _AskTail:
        expect = default = else_fail = None
        i = 0
        while i < len(c):
            t = c[i]
            if t.type == "EXPECT":
                expect = c[i + 1]
                i += 2
            elif t.type == "DEFAULT":
                default = c[i + 1]
                i += 2
            else:  # ELSE FAIL msg
                else_fail = c[i + 2]
                i += 3
        return (expect, default, else_fail, c[-1] if c else None)

    def ask_expr(self, c: _Kids) -> ast.AskExpr:
        expect, default, else_fail, last = c[2]
        end = last if last is not None else c[1]
        return ast.AskExpr(_cover(c[0], end), c[1], expect, default, else_fail)

    def map_expr(self, c: _Kids) -> ast.MapExpr:
        parallel = c[0].type == "PARALLEL"
        k = 1 if parallel else 0
        over = c[k + 1]
        var = c[k + 3]
        limit, tolerance = c[k + 4]
        count, percent, tspan = tolerance if tolerance is not None else (None, False, None)
        return ast.MapExpr(
            _cover(c[0], c[-1]),
            parallel,
            over,
            ast.Ident(var.span, var.value),
            limit,
            c[-1],
            keyword_span=c[k].span,
            tolerate=count,
            tolerate_percent=percent,
            tolerate_span=tspan,
        )

    def parallel_expr(self, c: _Kids) -> ast.ParallelExpr:
        limit = c[2] if len(c) == 6 else None
        return ast.ParallelExpr(_cover(c[0], c[-1]), list(c[-2]), limit, keyword_span=c[0].span)

    def catch_expr(self, c: _Kids) -> ast.CatchExpr:
        guarded, kw, codes, var, body = c
        return ast.CatchExpr(_cover(guarded, body), guarded, codes, var, body, keyword_span=kw.span)

    def call_options(self, c: _Kids) -> ast.CallOptions:
        call, clauses = c
        return ast.CallOptions(_cover(call, clauses[-1]), call, list(clauses))

    def catch_call_options(self, c: _Kids) -> ast.CatchExpr:
        call, clauses, kw, codes, var, body = c
        guarded = self.call_options([call, clauses])
        return ast.CatchExpr(_cover(call, body), guarded, codes, var, body, keyword_span=kw.span)

    def call_clauses(self, c: _Kids) -> _Clauses:
        if len(c) == 1:
            return [c[0]]
        out: _Clauses = c[0]
        out.append(c[1])
        return out

    def call_clause(self, c: _Kids) -> ast.Clause:
        kw = c[0]
        value: Any = _retry(c[1]) if kw.value == "retry" else c[1]
        return ast.Clause(_cover(kw, c[-1]), kw.value, value, kw.span)

    def try_expr(self, c: _Kids) -> ast.TryExpr:
        kw, block, catch, codes, var, body = c
        return ast.TryExpr(
            _cover(kw, body), block, codes, var, body, keyword_span=catch.span, try_span=kw.span
        )

    def cond_expr(self, c: _Kids) -> ast.CondExpr:
        return ast.CondExpr(_cover(c[0], c[5]), c[1], c[3], c[5])

    def catch_any(self, c: _Kids) -> None:
        return None

    def catch_on(self, c: _Kids) -> _Idents:
        return list(c[2])

    def codes_first(self, c: _Kids) -> _Idents:
        return _Acc([ast.Ident(c[0].span, c[0].value)])

    def codes_next(self, c: _Kids) -> _Idents:
        return _comma_list(
            [*c[:2], ast.Ident(c[2].span, c[2].value)], "an error code", "error codes"
        )

    def codes_comma(self, c: _Kids) -> _Idents:
        return _comma_list(c, "an error code", "error codes")

    def catch_unbound(self, c: _Kids) -> None:
        return None

    def catch_bound(self, c: _Kids) -> ast.Ident:
        return ast.Ident(c[1].span, c[1].value)

    def map_options_none(self, c: _Kids) -> _MapOptions:
        return (None, None)

    def map_limit(self, c: _Kids) -> _MapOptions:
        return (c[1], None)

    def map_tolerate(self, c: _Kids) -> _MapOptions:
        return (None, c[1])

    def map_limit_tolerate(self, c: _Kids) -> _MapOptions:
        return (c[1], c[3])

    def tolerance(self, c: _Kids) -> _Tolerance:
        """``N`` or ``P%`` → (number, is_percent, span)."""
        n = c[0]
        value = _number(n.value)
        return (value, len(c) == 2, _cover(n, c[-1]))

    def reduce_expr(self, c: _Kids) -> ast.ReduceExpr:
        acc_type = c[7] if len(c) == 11 else None
        return ast.ReduceExpr(
            _cover(c[0], c[-1]),
            c[1],
            ast.Ident(c[3].span, c[3].value),
            ast.Ident(c[5].span, c[5].value),
            acc_type,
            c[-2],
            c[-1],
        )

    def loop_head(self, c: _Kids) -> _LoopHead:
        """``loop up to N as var, acc[: T] = init`` → (keyword, bound, var, acc, type, init)."""
        acc_type = c[9] if len(c) == 12 else None
        var = ast.Ident(c[5].span, c[5].value)
        acc = ast.Ident(c[7].span, c[7].value)
        return (c[0], c[3], var, acc, acc_type, c[-1])

    def _loop(
        self,
        head: _LoopHead,
        body: ast.Block,
        end: ast.Node,
        until: ast.Expr | None = None,
        else_fail: ast.Expr | None = None,
        else_value: ast.Expr | None = None,
    ) -> ast.LoopExpr:
        kw, bound, var, acc, acc_type, init = head
        return ast.LoopExpr(
            _cover(kw, end),
            bound,
            var,
            acc,
            acc_type,
            init,
            body,
            until,
            else_fail,
            else_value,
            kw.span,
        )

    def loop_expr(self, c: _Kids) -> ast.LoopExpr:
        return self._loop(c[0], c[1], c[1])

    def loop_until_fail(self, c: _Kids) -> ast.LoopExpr:
        return self._loop(c[0], c[1], c[6], until=c[3], else_fail=c[6])

    def loop_until_value(self, c: _Kids) -> ast.LoopExpr:
        return self._loop(c[0], c[1], c[5], until=c[3], else_value=c[5])

    # -- match ----------------------------------------------------------------------------------
    def match_expr(self, c: _Kids) -> ast.MatchExpr:
        return ast.MatchExpr(_cover(c[0], c[4]), c[1], list(c[3]), c[0].span)

    def arms_first(self, c: _Kids) -> _Acc:
        return _Acc([c[0]])

    def arms_next(self, c: _Kids) -> _Acc:
        return _comma_list(c, "an arm", "arms of a `match`")  # `"a" => 1,, "b" => 2`

    arms_comma = arms_next

    def match_arm(self, c: _Kids) -> ast.MatchArm:
        patterns: list[ast.Expr] = c[0]
        return match_arm(patterns, c[2])

    def pattern_first(self, c: _Kids) -> list[ast.Expr]:
        return [c[0]]

    def pattern_next(self, c: _Kids) -> list[ast.Expr]:
        out: list[ast.Expr] = c[0]
        out.append(c[2])
        return out

    def match_alt(self, c: _Kids) -> ast.Expr:
        t = c[0]
        if len(c) == 2:  # `-1`
            n = c[1]
            return ast.Unary(
                _cover(t, n), "-", ast.NumberLit(n.span, _number(n.value), str(n.value))
            )
        typ = t.type
        if typ == "STRING":
            lit: ast.StringLit = t.value
            if not lit.is_plain:
                raise SynErr(
                    "a `match` pattern cannot contain `${…}` interpolation",
                    lit.span,
                    hint="a pattern is a constant; compare with a computed text in "
                    "`if … then … else`",
                )
            return lit
        if typ == "NUMBER":
            return ast.NumberLit(t.span, _number(t.value), str(t.value))
        if typ == "DURATION":
            return ast.DurationLit(t.span, _duration_ms(t.value), t.value)
        if typ in ("TRUE", "FALSE"):
            return ast.BoolLit(t.span, typ == "TRUE")
        if typ == "NULL":
            return ast.NullLit(t.span)
        if t.value != "_":
            raise SynErr(
                f"a `match` pattern is a literal or `_`, found the name `{t.value}`",
                t.span,
                hint='patterns are constants (`"low"`, `1`, `true`, `null`) joined by `|`; '
                "compare with a variable's value in `if … then … else`",
            )
        return ast.Name(t.span, "_")

    def verify_expr(self, c: _Kids) -> ast.VerifyExpr:
        return ast.VerifyExpr(_cover(c[0], c[3]), c[2])

    def verify_items(self, c: _Kids) -> _Checks:
        return []

    def verify_check(self, c: _Kids) -> _Checks:
        out: _Checks = c[0]
        out.append(ast.VerifyCheck(_cover(c[1], c[4]), c[2], c[4]))
        return out

    def verify_judge(self, c: _Kids) -> _Checks:
        out: _Checks = c[0]
        out.append(ast.VerifyJudge(_cover(c[1], c[2]), c[2]))
        return out

    def agent_expr(self, c: _Kids) -> ast.AgentExpr:
        return ast.AgentExpr(_cover(c[0], c[6]), c[2], c[5], c[0].span)

    def clauses(self, c: _Kids) -> _Clauses:
        if not c:
            return []
        out: _Clauses = c[0]
        out.append(c[1])
        return out

    def clause(self, c: _Kids) -> ast.Clause:
        kw = c[0]
        kind = kw.value
        if kind == "tools":
            if c[1].type == "NONE":
                value: Any = None
            else:
                value = list(c[2])
        elif kind == "retry":
            value = _retry(c[1])
        elif kind == "budget":
            value = _budget(c[1])
        else:
            value = c[1]
        return ast.Clause(_cover(kw, c[-1]), kind, value, kw.span)

    def tool_refs_empty(self, c: _Kids) -> _Acc:
        return _Acc()

    def tool_refs_first(self, c: _Kids) -> _Acc:
        return _Acc(c)

    def tool_refs_next(self, c: _Kids) -> _Acc:
        return _comma_list(c, "a tool", "tools")

    tool_refs_comma = tool_refs_next

    def tool_ref(self, c: _Kids) -> ast.ToolRef:
        t = c[0]
        if t.type == "STRING":
            return ast.ToolRef(t.span, _string_value(t, "a tool pattern"), True)
        return ast.ToolRef(t.span, t.value, False)

    # list items are collected like tool references (comma-separated)
    items_empty = tool_refs_empty
    items_first = tool_refs_first

    def items_next(self, c: _Kids) -> _Acc:
        return _comma_list(c, "an item", "items of a list")

    items_comma = items_next

    # object entries are collected like the fields of a type
    entries_empty = ItemBuilder.fields_empty
    entries_first = ItemBuilder.fields_first
    entries_comma = ItemBuilder.fields_comma
    # a `parallel` block's branches are collected as entries, told as branches
    # (branches_next / branches_comma: ExprBuilder)
    branches_empty = ItemBuilder.fields_empty
    branches_first = ItemBuilder.fields_first
