"""The AST builder's items (:mod:`agentflow.grammar.builder`): the top-level declarations
(``flow``, ``input``, ``output``, ``deadline``, ``budget``, ``use``, ``import``, ``extern``,
``fn``, ``type``, ``stage``), ``test`` and ``eval`` blocks, type expressions, object types'
fields and their constraints (:class:`ItemBuilder`, a base of
:class:`~agentflow.grammar.builder.Builder`).
"""

from __future__ import annotations

from typing import Any, TypeVar

from agentflow.core.spans import Span
from agentflow.core.vocabulary import duration_ms as _duration_ms
from agentflow.grammar import ast
from agentflow.grammar.builder_shared import (
    _Acc,
    _Answers,
    _budget,
    _comma,
    _comma_list,
    _Constraints,
    _cover,
    _EvalItems,
    _Items,
    _Kids,
    _number,
    _Params,
    _sep_next,
    _string_value,
    _TestItems,
    _Threshold,
)
from agentflow.grammar.scanner import SynErr, Tok
from agentflow.grammar.syntax_errors import statements_on_one_line

__all__ = ["ItemBuilder"]

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


class ItemBuilder:
    """The callbacks of items' rules: declarations, ``test`` and ``eval`` blocks, types."""

    # -- items ----------------------------------------------------------------------------------

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


class _Always(list[ast.Expr | ast.StubFails]):
    """The answers of a stub whose sequence ends ``then always V`` (the builder's mark)."""
