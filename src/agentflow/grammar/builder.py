"""The AST builder: Lark transformer callbacks that build :mod:`agentflow.grammar.ast` nodes,
one call per LALR reduction (docs/spec/LANGUAGE.md §1–8).

:class:`Builder` has one method per rule (or rule alias) of :file:`flow.lark`; each receives the
children of the reduction (:class:`~agentflow.grammar.scanner.Tok` or values built before) and
returns a node.  Binary operators arrive as a flat sequence and are arranged by precedence
climbing (:func:`_climb`, §4), which keeps the number of LALR reductions per operand small.
Errors that the grammar cannot express (chained comparisons, a comma where a line break is
needed, too long expressions) are raised here as :class:`~agentflow.grammar.scanner.SynErr`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from agentflow.core.functions import FUNCTIONS
from agentflow.core.spans import Span
from agentflow.core.vocabulary import (
    BUDGET_LIMITS,
    MAX_OPERATORS,
    MAX_PREFIX,
    NOT_PRECEDENCE,
    PRECEDENCE,
)
from agentflow.core.vocabulary import duration_ms as _duration_ms
from agentflow.grammar import ast
from agentflow.grammar.scanner import SynErr, Tok
from agentflow.grammar.syntax_errors import statements_on_one_line

__all__ = ["Builder"]

#: The children of one reduction, in source order: the rule's tokens (:class:`Tok`) and the
#: values its sub-rules built.  What sits at each index depends on the alternative that was
#: reduced (see :file:`flow.lark`), which a static type cannot follow; each callback returns a
#: precise type.
_Kids = list[Any]
_Items = list[ast.Item]
_Params = list[ast.Param]
_TestItems = list[ast.TestInput | ast.TestStub | ast.TestExpect | ast.TestReplay]
_Answers = list[ast.Expr | ast.StubFails]
_EvalItems = list[ast.EvalDataset | ast.EvalExpect | ast.EvalScorer]
_Constraints = list[ast.Constraint]
_Stmts = list[ast.Stmt]
_Idents = list[ast.Ident]
_Checks = list[ast.VerifyCheck | ast.VerifyJudge]
_Clauses = list[ast.Clause]
_Args = list[ast.Expr | ast.Argument]
#: ``N`` or ``N%`` after ``threshold``: (the fraction, its span)
_Threshold = tuple[int | float, Span]
#: ``tolerate N`` / ``tolerate P%``: (number, is a percentage, span)
_Tolerance = tuple[int | float, bool, Span]
#: a map's ``limit`` and ``tolerate`` options
_MapOptions = tuple[ast.Expr | None, _Tolerance | None]
#: ``ask``'s ``expect T``, ``default V``, ``else fail M`` and its last child (a token or a node)
_AskTail = tuple[ast.TypeExpr | None, ast.Expr | None, ast.Expr | None, Any]
#: ``loop up to N as var, acc[: T] = init``: (keyword, bound, var, acc, type, init)
_LoopHead = tuple[Tok, ast.Expr, ast.Ident, ast.Ident, ast.TypeExpr | None, ast.Expr]
#: an operator between operands: (spelling, first token, last token)
_Op = tuple[str, Tok, Tok]


class _Acc(list[Any]):
    """A list being accumulated by a left-recursive rule; ``comma`` tells whether the last
    thing added was a separating comma."""

    __slots__ = ("comma",)

    def __init__(self, *a: Any) -> None:
        super().__init__(*a)
        self.comma = False


class _Not:
    """A prefix ``not`` waiting for precedence climbing."""

    __slots__ = ("tok", "operand")

    def __init__(self, tok: Tok, operand: ast.Expr | _Not) -> None:
        self.tok = tok
        self.operand = operand


_PREC = PRECEDENCE
_NOT_PREC = NOT_PRECEDENCE


def _cover(a: Any, b: Any) -> Span:
    """The span from the start of ``a`` to the end of ``b`` (each a Tok or a node)."""
    if type(a) is not Tok:
        a = a.span
    if type(b) is not Tok:
        b = b.span
    return Span(a.file, a.line, a.column, b.end_line, b.end_column, a.start, b.end)


def _operand_span(x: Any) -> Span:
    if isinstance(x, _Not):
        return x.tok.span.to(_operand_span(x.operand))
    out: Span = x.span
    return out


def _climb(seq: list[Any]) -> ast.Expr:
    """Arrange ``[operand, (op, tok, tok2), operand, …]`` by precedence
    (docs/spec/LANGUAGE.md §4)."""
    if len(seq) > 2 * MAX_OPERATORS:
        raise SynErr(
            f"expression too long (more than {MAX_OPERATORS} operators); split it with `let`",
            _operand_span(seq[0]),
        )
    pos = 0
    n = len(seq)

    def level(p: int) -> ast.Expr:
        nonlocal pos
        x = seq[pos]
        if isinstance(x, _Not):
            if p > _NOT_PREC:
                raise SynErr(
                    "`not` needs parentheses here: write `(not …)`",
                    x.tok.span,
                )
            seq[pos] = x.operand
            inner = level(_NOT_PREC)
            left: ast.Expr = ast.Unary(x.tok.span.to(inner.span), "not", inner)
        else:
            pos += 1
            left = x
        while pos < n:
            op, t1, t2 = seq[pos]
            q = _PREC[op]
            if q < p:
                break
            pos += 1
            right = level(q + 1)
            if q in (5, 6) and pos < n and _PREC[seq[pos][0]] == q:
                what = "comparisons" if q == 5 else "ranges"
                nxt = seq[pos]
                raise SynErr(
                    f"{what} do not chain: combine them with `and` or add parentheses",
                    nxt[1].span.to(nxt[2].span),
                )
            op_span = t1.span.to(t2.span) if t2 is not t1 else t1.span
            if op == "..":
                left = ast.RangeExpr(left.span.to(right.span), left, right)
            else:
                left = ast.Binary(left.span.to(right.span), op, left, right, op_span)
        return left

    return level(0)


def _string_value(tok: Tok, what: str) -> str:
    lit = tok.value
    assert isinstance(lit, ast.StringLit)  # a STRING token's value in parse mode
    if not lit.is_plain:
        raise SynErr(f"{what} cannot contain `${{…}}` interpolation", lit.span)
    return lit.text


def _push_projection(
    p: ast.Projection, build: Callable[[ast.Expr], ast.Expr], end_span: Span
) -> ast.Projection:
    """Extend an open projection's per-element path with ``build(inner)``."""
    inner = p.path
    if isinstance(inner, ast.Projection) and not inner.closed:
        p.path = _push_projection(inner, build, end_span)
    else:
        if inner is None:
            inner = ast.ProjectionItem(p.span)
        p.path = build(inner)
    p.span = p.span.to(end_span)
    return p


def _number(text: str) -> int | float:
    return float(text) if "." in text else int(text)


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


def _repeated_comma(span: Span, what: str, whats: str) -> SynErr:
    """A second comma between two items of a comma-separated list, or one before the first
    (``[1,,2]``, ``f(a,,b)``, ``{ a: 1,, b: 2 }``, ``[,1]``): the syntax error at that comma.
    ``what`` names one item (``an argument``), ``whats`` several (``arguments``)."""
    return SynErr(
        f"expected {what} before `,`",
        span,
        hint=f"one comma separates two {whats}: remove this one",
    )


def _comma_list(c: _Kids, what: str, whats: str) -> _Acc:
    """``list , item`` (three children) or ``list ,`` (two) of a comma-separated list: the item
    appended, or the comma noted; a comma after a comma (or before any item) is the syntax error
    of :func:`_repeated_comma` (never dropped silently)."""
    acc: _Acc = c[0]
    if acc.comma or not acc:
        raise _repeated_comma(c[1].span, what, whats)
    acc.comma = len(c) == 2
    if len(c) == 3:
        acc.append(c[2])
    return acc


def _sep_check(acc: _Acc, new: Any, what: str) -> None:
    """Entries without a comma must be on a new line (docs/spec/LANGUAGE.md §1)."""
    if acc and not acc.comma and acc[-1].span.end_line == new.span.line:
        raise SynErr(f"expected `,` or a line break between {what}", new.span, hint=None)


def _sep_next(c: _Kids, what: str) -> _Acc:
    """Append the entry ``c[1]`` to the list ``c[0]``, checking its separation from the last one
    (:func:`_sep_check`; ``what`` names the entries in the message)."""
    acc, new = c
    _sep_check(acc, new, what)
    acc.append(new)
    acc.comma = False
    out: _Acc = acc
    return out


def _comma(c: _Kids) -> _Acc:
    """A separating comma after an entry (a second comma, or one before any entry, is an error)."""
    return _comma_list(c, "an entry", "entries")


_I = TypeVar("_I", bound=ast.Item)


def _lined(item: _I) -> _I:
    """``item``, once it has parsed, unless an expression statement in it starts on the line of
    the statement before it (docs/spec/LANGUAGE.md §1): then that syntax error.  Raised at the
    item's reduction, so an error later in the item (with its own hint) is the one reported,
    and the items before it stay on the value stack for recovery."""
    err = statements_on_one_line(item)
    if err is not None:
        raise err
    return item


class Builder:
    """Lark transformer callbacks; each receives the children of one reduction."""

    # -- entry points / items -------------------------------------------------------------------

    def expr_only(self, c: _Kids) -> ast.Expr:
        out: ast.Expr = c[0]
        return out

    def module(self, c: _Kids) -> _Items:
        out: _Items = c[0]
        return out

    def items(self, c: _Kids) -> _Items:
        if not c:
            return []
        out: _Items = c[0]
        out.append(c[1])
        return out

    def flow_header(self, c: _Kids) -> ast.FlowHeader:
        desc = _string_value(c[2], "a flow description") if len(c) > 2 else None
        return ast.FlowHeader(_cover(c[0], c[-1]), ast.Ident(c[1].span, c[1].value), desc)

    def input_decl(self, c: _Kids) -> ast.InputDecl:
        return ast.InputDecl(_cover(c[0], c[1]), c[1])

    def output_decl(self, c: _Kids) -> ast.OutputDecl:
        return ast.OutputDecl(_cover(c[0], c[1]), c[1])

    def deadline_decl(self, c: _Kids) -> ast.DeadlineDecl:
        d = c[1]
        return ast.DeadlineDecl(
            _cover(c[0], d), ast.DurationLit(d.span, _duration_ms(d.value), d.value)
        )

    def budget_decl(self, c: _Kids) -> ast.BudgetDecl:
        return ast.BudgetDecl(_cover(c[0], c[1]), _budget(c[1]))

    def use_decl(self, c: _Kids) -> ast.UseDecl:
        target = c[2]
        return ast.UseDecl(
            _cover(c[0], c[4]),
            c[1].value,
            _string_value(target, "a `use` name"),
            target.span,
            ast.Ident(c[4].span, c[4].value),
        )

    def import_decl(self, c: _Kids) -> ast.ImportDecl:
        path = c[5]
        pairs: list[tuple[ast.Ident, ast.Ident | None]] = c[2]
        return ast.ImportDecl(
            _cover(c[0], path),
            [n for n, _ in pairs],
            _string_value(path, "an import path"),
            path.span,
            [a for _, a in pairs] if any(a is not None for _, a in pairs) else [],
        )

    def import_names(self, c: _Kids) -> list[tuple[ast.Ident, ast.Ident | None]]:
        return _Acc(c) if len(c) == 1 else _comma_list(c, "a name", "imported names")

    def import_name(self, c: _Kids) -> tuple[ast.Ident, ast.Ident | None]:
        name = ast.Ident(c[0].span, c[0].value)
        if len(c) == 1:
            return (name, None)
        return (name, ast.Ident(c[2].span, c[2].value))  # `Ticket as BillingTicket`

    def extern_tool(self, c: _Kids) -> ast.ExternTool:
        params = c[4] if len(c) == 8 else []
        return ast.ExternTool(
            _cover(c[0], c[-1]),
            ast.Ident(c[2].span, c[2].value),
            list(params),
            c[-1],
            doc=c[0].doc,
        )

    def extern_tool_as(self, c: _Kids) -> ast.ExternTool:
        # EXTERN TOOL STRING AS NAME LPAR [params] RPAR ARROW type
        params = c[6] if len(c) == 10 else []
        target = c[2]
        return ast.ExternTool(
            _cover(c[0], c[-1]),
            ast.Ident(c[4].span, c[4].value),
            list(params),
            c[-1],
            doc=c[0].doc,
            catalog=_string_value(target, "a tool name"),
            catalog_span=target.span,
        )

    def fn_decl(self, c: _Kids) -> ast.FnDecl:
        # FN NAME LPAR [params] RPAR ARROW type EQUALS expr
        params = c[3] if len(c) == 9 else []
        return ast.FnDecl(
            _cover(c[0], c[-1]),
            ast.Ident(c[1].span, c[1].value),
            list(params),
            c[-3],
            c[-1],
            doc=c[0].doc,
        )

    def param_omittable(self, c: _Kids) -> ast.Param:
        return ast.Param(_cover(c[0], c[3]), ast.Ident(c[0].span, c[0].value), c[3], omittable=True)

    def params(self, c: _Kids) -> _Params:
        return _Acc(c) if len(c) == 1 else _comma_list(c, "a parameter", "parameters")

    def param(self, c: _Kids) -> ast.Param:
        return ast.Param(_cover(c[0], c[2]), ast.Ident(c[0].span, c[0].value), c[2])

    def extern_type(self, c: _Kids) -> ast.ExternType:
        return ast.ExternType(_cover(c[0], c[2]), ast.Ident(c[2].span, c[2].value), doc=c[0].doc)

    def type_decl(self, c: _Kids) -> ast.TypeDecl:
        return ast.TypeDecl(
            _cover(c[0], c[2]), ast.Ident(c[1].span, c[1].value), c[2], None, doc=c[0].doc
        )

    def type_alias(self, c: _Kids) -> ast.TypeDecl:
        return ast.TypeDecl(
            _cover(c[0], c[3]), ast.Ident(c[1].span, c[1].value), None, c[3], doc=c[0].doc
        )

    def stage_decl(self, c: _Kids) -> ast.StageDecl:
        returns = c[3] if len(c) == 5 else None
        return _lined(
            ast.StageDecl(
                _cover(c[0], c[-1]), ast.Ident(c[1].span, c[1].value), returns, c[-1], doc=c[0].doc
            )
        )

    def test_decl(self, c: _Kids) -> ast.TestDecl:
        name = _string_value(c[1], "a test name")
        if len(c) == 5:
            return _lined(ast.TestDecl(_cover(c[0], c[-1]), name, c[1].span, c[3]))
        case = ast.Ident(c[5].span, c[5].value)
        return _lined(ast.TestDecl(_cover(c[0], c[-1]), name, c[1].span, c[7], c[3], case))

    def test_items(self, c: _Kids) -> _TestItems:
        if not c:
            return []
        out: _TestItems = c[0]
        out.append(c[1])
        return out

    def test_input(self, c: _Kids) -> ast.TestInput:
        return ast.TestInput(_cover(c[0], c[1]), c[1])

    def _stub(self, c: _Kids, kind: str) -> ast.TestStub:
        values = c[4] if isinstance(c[4], list) else [c[4]]
        return ast.TestStub(
            _cover(c[0], values[-1]),
            kind,
            ast.Ident(c[2].span, c[2].value),
            values[0],
            values=list(values),
            always=isinstance(values, _Always),
        )

    def stub_answers_all(self, c: _Kids) -> _Answers:
        out: _Answers = c[0]
        return out

    def stub_answers_always(self, c: _Kids) -> _Always:
        return _Always([*c[0], c[3]])

    def stub_all(self, c: _Kids) -> _Answers:
        out: _Answers = c[0]
        return out

    def stub_then_always(self, c: _Kids) -> _Always:
        return _Always([*c[0], c[3]])

    def stub_answers(self, c: _Kids) -> _Answers:
        if len(c) == 1:
            return [c[0]]
        out: _Answers = c[0]
        out.append(c[2])
        return out

    def stub_ask(self, c: _Kids) -> ast.TestStub:
        return self._stub(c, "ask")

    def stub_step(self, c: _Kids) -> ast.TestStub:
        return self._stub(c, "step")

    def stub_step_branch(self, c: _Kids) -> ast.TestStub:
        # STUB STEP NAME DOT NAME RETURNS opexpr: a branch of a `parallel` block
        out = self._stub([*c[:3], c[5], c[6]], "step")
        out.branch = ast.Ident(c[4].span, c[4].value)
        return out

    def test_replay(self, c: _Kids) -> ast.TestReplay:
        path = _string_value(c[1], "a cassette path")
        return ast.TestReplay(_cover(c[0], c[1]), path, c[1].span)

    def _seq_stub(self, c: _Kids, kind: str) -> ast.TestStub:
        values = c[3]
        last = values[-1]
        first = values[0]
        only_fails = len(values) == 1 and isinstance(first, ast.StubFails)
        return ast.TestStub(
            _cover(c[0], last),
            kind,
            ast.Ident(c[2].span, c[2].value),
            None if isinstance(first, ast.StubFails) else first,
            first.code if only_fails else None,
            first.code_span if only_fails else None,
            values=list(values),
            always=isinstance(values, _Always),
        )

    def _stub_fails(self, fails: Tok, string: Tok) -> ast.StubFails:
        code = _string_value(string, "an error code")
        return ast.StubFails(_cover(fails, string), code, string.span)

    def stub_first(self, c: _Kids) -> _Answers:
        return [c[1]]

    def stub_first_fails(self, c: _Kids) -> _Answers:
        return [self._stub_fails(c[0], c[1])]

    def stub_then(self, c: _Kids) -> _Answers:
        out: _Answers = c[0]
        out.append(c[2])
        return out

    def stub_then_fails(self, c: _Kids) -> _Answers:
        out: _Answers = c[0]
        out.append(self._stub_fails(c[2], c[3]))
        return out

    def stub_agent(self, c: _Kids) -> ast.TestStub:
        return self._seq_stub(c, "agent")

    def stub_stage(self, c: _Kids) -> ast.TestStub:
        return self._seq_stub(c, "stage")

    def stub_tool(self, c: _Kids) -> ast.TestStub:
        return self._seq_stub(c, "tool")

    def expect_fail(self, c: _Kids) -> ast.TestExpect:
        code = _string_value(c[2], "an error code")
        return ast.TestExpect(_cover(c[0], c[2]), None, code, c[2].span)

    def expect_true(self, c: _Kids) -> ast.TestExpect:
        return ast.TestExpect(_cover(c[0], c[1]), c[1])

    # -- eval blocks ----------------------------------------------------------------------------

    def eval_decl(self, c: _Kids) -> ast.EvalDecl:
        name = _string_value(c[1], "an eval name")
        return _lined(ast.EvalDecl(_cover(c[0], c[-1]), name, c[1].span, c[3]))

    def eval_items(self, c: _Kids) -> _EvalItems:
        if not c:
            return []
        out: _EvalItems = c[0]
        out.append(c[1])
        return out

    def eval_dataset(self, c: _Kids) -> ast.EvalDataset:
        path = _string_value(c[1], "a dataset path")
        return ast.EvalDataset(_cover(c[0], c[1]), path, c[1].span)

    def eval_expect(self, c: _Kids) -> ast.EvalExpect:
        return ast.EvalExpect(_cover(c[0], c[1]), c[1])

    def eval_score(self, c: _Kids) -> ast.EvalScorer:
        return self._scorer(c, "score", c[3], c[5] if len(c) == 6 else None)

    def eval_judge(self, c: _Kids) -> ast.EvalScorer:
        return self._scorer(c, "judge", c[2], c[4] if len(c) == 5 else None)

    def _scorer(
        self, c: _Kids, kind: str, expr: ast.Expr, threshold: _Threshold | None
    ) -> ast.EvalScorer:
        start = c[0].span
        end = threshold[1] if threshold is not None else expr.span
        span = Span(
            start.file, start.line, start.column, end.end_line, end.end_column, start.start, end.end
        )
        value, value_span = threshold if threshold is not None else (None, None)
        return ast.EvalScorer(span, kind, ast.Ident(c[1].span, c[1].value), expr, value, value_span)

    def threshold(self, c: _Kids) -> _Threshold:
        """``N`` or ``N%`` → (the fraction, its span)."""
        value = _number(c[0].value)
        return (value / 100 if len(c) == 2 else value, _cover(c[0], c[-1]))

    # -- types ----------------------------------------------------------------------------------

    def type(self, c: _Kids) -> ast.TypeExpr:
        out: ast.TypeExpr = c[0]
        return out

    def union_type(self, c: _Kids) -> ast.UnionType:
        left, right = c[0], c[2]
        if isinstance(left, ast.UnionType):
            members = left.members + [right]
        else:
            members = [left, right]
        return ast.UnionType(_cover(left, right), members)

    def array_type(self, c: _Kids) -> ast.ArrayType:
        return ast.ArrayType(_cover(c[0], c[2]), c[0])

    def optional_type(self, c: _Kids) -> ast.OptionalType:
        return ast.OptionalType(_cover(c[0], c[1]), c[0])

    def named_type(self, c: _Kids) -> ast.NamedType:
        return ast.NamedType(c[0].span, c[0].value)

    def map_type(self, c: _Kids) -> ast.MapType:
        return ast.MapType(_cover(c[0], c[3]), c[2])

    def generic_type(self, c: _Kids) -> ast.GenericType:
        return ast.GenericType(_cover(c[0], c[3]), c[0].value, c[2], c[0].span)

    def literal_type(self, c: _Kids) -> ast.LiteralType:
        t = c[0]
        typ = t.type
        if typ == "STRING":
            value: Any = _string_value(t, "a literal type")
        elif typ == "NUMBER":
            value = _number(t.value)
        else:
            value = {"TRUE": True, "FALSE": False, "NULL": None}[typ]
        return ast.LiteralType(t.span, value)

    def paren_type(self, c: _Kids) -> ast.TypeExpr:
        out: ast.TypeExpr = c[1]
        return out

    def object_type(self, c: _Kids) -> ast.ObjectType:
        return ast.ObjectType(_cover(c[0], c[2]), list(c[1]))

    def fields_empty(self, c: _Kids) -> _Acc:
        return _Acc()

    def fields_first(self, c: _Kids) -> _Acc:
        return _Acc(c)

    def fields_next(self, c: _Kids) -> _Acc:
        return _sep_next(c, "fields")

    def fields_comma(self, c: _Kids) -> _Acc:
        return _comma(c)

    def field(self, c: _Kids) -> ast.FieldDecl:
        name = c[0]
        constraints = c[3] if len(c) == 4 else []
        end = constraints[-1] if constraints else c[2]
        return ast.FieldDecl(
            _cover(name, end),
            ast.Ident(name.span, name.value),
            c[2],
            constraints,
            doc=name.doc,
        )

    def constraints(self, c: _Kids) -> _Constraints:
        if len(c) == 1:
            return [c[0]]
        out: _Constraints = c[0]
        out.append(c[1])
        return out

    def constraint(self, c: _Kids) -> ast.Constraint:
        args = []
        if len(c) == 5:
            for a in c[3]:
                if isinstance(a, ast.Argument):
                    raise SynErr("constraint arguments are written without names", a.span)
                args.append(a)
        return ast.Constraint(_cover(c[0], c[-1]), ast.Ident(c[1].span, c[1].value), args)

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
            return ast.Unary(_cover(t, n), "-", ast.NumberLit(n.span, _number(n.value)))
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
            return ast.NumberLit(t.span, _number(t.value))
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

    # -- operators ------------------------------------------------------------------------------

    def opexpr_single(self, c: _Kids) -> ast.Expr:
        x = c[0]
        if type(x) is _Not:
            return _climb([x])
        out: ast.Expr = x
        return out

    def climb(self, c: _Kids) -> ast.Expr:
        return _climb(c[0])

    def opseq_first(self, c: _Kids) -> _Kids:
        return c

    def opseq_next(self, c: _Kids) -> _Kids:
        seq = c[0]
        seq.append(c[1])
        seq.append(c[2])
        out: _Kids = seq
        return out

    def operand_not(self, c: _Kids) -> _Not:
        inner = c[1]
        depth = 1
        x = inner
        while isinstance(x, _Not):
            depth += 1
            x = x.operand
        if depth > MAX_PREFIX:
            raise SynErr("too many `not` in a row", c[0].span)
        return _Not(c[0], inner)

    def binop(self, c: _Kids) -> _Op:
        t = c[0]
        if len(c) == 2:
            return ("not in", t, c[1])
        return (t.value, t, t)

    def neg(self, c: _Kids) -> ast.Unary:
        operand = c[1]
        if isinstance(operand, ast.Unary) and operand.op == "-":
            depth = 1
            x: ast.Expr = operand
            while isinstance(x, ast.Unary) and x.op == "-":
                depth += 1
                x = x.operand
            if depth > MAX_PREFIX:
                raise SynErr("too many `-` in a row", c[0].span)
        return ast.Unary(_cover(c[0], operand), "-", operand)

    # -- postfix --------------------------------------------------------------------------------

    def member(self, c: _Kids) -> ast.Expr:
        obj, name = c[0], c[2]
        nspan = name.span
        if isinstance(obj, ast.Projection) and not obj.closed:
            return _push_projection(
                obj, lambda inner: ast.Member(inner.span.to(nspan), inner, name.value, nspan), nspan
            )
        return ast.Member(obj.span.to(nspan), obj, name.value, nspan)

    def index(self, c: _Kids) -> ast.Expr:
        obj, idx, close = c[0], c[2], c[3].span
        if isinstance(obj, ast.Projection) and not obj.closed:
            return _push_projection(
                obj, lambda inner: ast.Index(inner.span.to(close), inner, idx), close
            )
        return ast.Index(obj.span.to(close), obj, idx)

    def project(self, c: _Kids) -> ast.Projection:
        obj, close = c[0], c[3].span
        if isinstance(obj, ast.Projection) and not obj.closed:

            def build(inner: ast.Expr) -> ast.Expr:
                return ast.Projection(inner.span.to(close), inner, None)

            return _push_projection(obj, build, close)
        return ast.Projection(obj.span.to(close), obj, None)

    def call(self, c: _Kids) -> ast.Expr:
        callee = c[0]
        close = c[-1].span
        named: list[ast.Argument] = []
        positional: list[ast.Expr] = []
        if len(c) == 4:
            for a in c[2]:
                (named if isinstance(a, ast.Argument) else positional).append(a)
        if isinstance(callee, ast.Name) and positional and not named and callee.name in FUNCTIONS:
            # `join(xs, ", ")`: a library function (docs/reference/functions.md); named arguments
            # make a tool call, even of a tool with a library function's name
            return ast.FuncCall(callee.span.to(close), callee.name, callee.span, positional)
        if isinstance(callee, ast.Name) and positional and not named:
            # `rank(x)`: a user function's call (or a mistake the checker explains)
            return ast.UserCall(callee.span.to(close), callee.name, callee.span, positional)
        return ast.Call(callee.span.to(close), callee, named, positional)

    def args(self, c: _Kids) -> _Args:
        return _Acc(c) if len(c) == 1 else _comma_list(c, "an argument", "arguments")

    def named_arg(self, c: _Kids) -> ast.Argument:
        return ast.Argument(_cover(c[0], c[2]), c[0].value, c[0].span, c[2])

    # -- atoms ----------------------------------------------------------------------------------

    def name(self, c: _Kids) -> ast.Name:
        t = c[0]
        return ast.Name(t.span, t.value)

    def number(self, c: _Kids) -> ast.NumberLit:
        t = c[0]
        return ast.NumberLit(t.span, _number(t.value))

    def duration(self, c: _Kids) -> ast.DurationLit:
        t = c[0]
        return ast.DurationLit(t.span, _duration_ms(t.value), t.value)

    def string(self, c: _Kids) -> ast.StringLit:
        out: ast.StringLit = c[0].value
        return out

    def true(self, c: _Kids) -> ast.BoolLit:
        return ast.BoolLit(c[0].span, True)

    def false(self, c: _Kids) -> ast.BoolLit:
        return ast.BoolLit(c[0].span, False)

    def null(self, c: _Kids) -> ast.NullLit:
        return ast.NullLit(c[0].span)

    def list(self, c: _Kids) -> ast.ListLit:
        return ast.ListLit(_cover(c[0], c[2]), list(c[1]))

    # list items are collected like tool references (comma-separated)
    items_empty = tool_refs_empty
    items_first = tool_refs_first

    def items_next(self, c: _Kids) -> _Acc:
        return _comma_list(c, "an item", "items of a list")

    items_comma = items_next

    def object(self, c: _Kids) -> ast.ObjectLit:
        return ast.ObjectLit(_cover(c[0], c[2]), list(c[1]))

    # object entries are collected like the fields of a type
    entries_empty = fields_empty
    entries_first = fields_first
    entries_comma = fields_comma

    def entries_next(self, c: _Kids) -> _Acc:
        return _sep_next(c, "object entries")

    # a `parallel` block's branches are collected as entries, told as branches
    branches_empty = fields_empty
    branches_first = fields_first

    def branches_next(self, c: _Kids) -> _Acc:
        return _sep_next(c, "branches")

    def branches_comma(self, c: _Kids) -> _Acc:
        return _comma_list(c, "a branch", "branches")

    def entry(self, c: _Kids) -> ast.ObjectEntry:
        k = c[0]
        key = _string_value(k, "an object key") if k.type == "STRING" else k.value
        return ast.ObjectEntry(_cover(k, c[2]), key, k.span, c[2])

    def paren(self, c: _Kids) -> ast.Expr:
        e = c[1]
        if isinstance(e, ast.Projection):
            e.closed = True
        out: ast.Expr = e
        return out


def _budget(obj: ast.ObjectLit) -> ast.BudgetSpec:
    """``budget { inferences: N, tokens: N, cost: X }`` from its object-literal form; an unknown
    key is a syntax error naming the three (their values are checked by the checker)."""
    for e in obj.entries:
        if e.key not in BUDGET_LIMITS:
            raise SynErr(
                f"unknown budget limit `{e.key}`: expected `inferences`, `tokens` or `cost`",
                e.key_span,
            )
    return ast.BudgetSpec(obj.span, list(obj.entries))


def _retry(obj: ast.ObjectLit) -> ast.RetrySpec:
    """``retry { attempts: N, on: [code, …] }`` from its object-literal form
    (docs/spec/LANGUAGE.md §8)."""
    attempts = None
    on = None
    for e in obj.entries:
        if e.key == "attempts":
            attempts = e.value
        elif e.key == "on":
            if not isinstance(e.value, ast.ListLit):
                raise SynErr("`on` takes a list of error codes: `on: [transient]`", e.value.span)
            on = []
            for item in e.value.items:
                if not isinstance(item, ast.Name):
                    raise SynErr(
                        "an error code is a bare name such as `timeout`, `rate_limit` or "
                        "`transient`",
                        item.span,
                    )
                on.append(ast.Ident(item.span, item.name))
        else:
            raise SynErr(
                f"unknown retry setting `{e.key}`: expected `attempts` or `on`", e.key_span
            )
    return ast.RetrySpec(obj.span, attempts, on)


class _Always(list[ast.Expr | ast.StubFails]):
    """The answers of a stub whose sequence ends ``then always V`` (the builder's mark)."""
