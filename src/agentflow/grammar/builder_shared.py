"""What the AST builder's callbacks share (:mod:`agentflow.grammar.builder`): the types of a
reduction's children and of the values the rules build, the list a left-recursive rule
accumulates (:class:`_Acc`) with its separator checks (a comma, or a line break, between two
entries), spans covering two children, plain strings and numbers of tokens, and the
object-literal forms of ``budget { … }`` and ``retry { … }``.
"""

from __future__ import annotations

from typing import Any

from agentflow.core.spans import Span
from agentflow.core.vocabulary import BUDGET_LIMITS
from agentflow.grammar import ast
from agentflow.grammar.scanner import SynErr, Tok

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


def _cover(a: Any, b: Any) -> Span:
    """The span from the start of ``a`` to the end of ``b`` (each a Tok or a node)."""
    if type(a) is not Tok:
        a = a.span
    if type(b) is not Tok:
        b = b.span
    return Span(a.file, a.line, a.column, b.end_line, b.end_column, a.start, b.end)


#: what to write instead of an interpolated object key (`{ "${x}": 1 }`): keys are constants
COMPUTED_KEY_HINT = (
    "an object's keys are written in the program; a map keyed by computed values is built from "
    'the elements: `group_by(xs, "field")`, `count_by(xs, "field")`, or a list of '
    "`{ key: …, value: … }` entries"
)


def _string_value(tok: Tok, what: str, hint: str | None = None) -> str:
    lit = tok.value
    assert isinstance(lit, ast.StringLit)  # a STRING token's value in parse mode
    if not lit.is_plain:
        raise SynErr(f"{what} cannot contain `${{…}}` interpolation", lit.span, hint=hint)
    return lit.text


def _number(text: str) -> int | float:
    return float(text) if "." in text else int(text)


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
