"""Expressions as the user wrote them: the evaluator's printer (:func:`expr_text`, which run-time
messages quote and ``runtime/where.py`` matches), and the compiler's writings of durations
(compiler/durations.py) read back, so a message and a graph name the expression as written
(docs/reference/expressions.md, docs/decisions.md "Durations inside lists, objects and maps
(durdeep)").

The plan holds ``seconds(a) < seconds("5m")`` where the `.flow` says ``a < 5m``,
``from_seconds(max([seconds(a) - seconds(b), 0]))`` for ``a - b``, ``canonical(xs, {…}) ==
canonical(ys, {…})`` for ``xs == ys`` and ``unique(xs, seconds(xs))`` for ``unique(xs)``.
:func:`as_written` gives the expression those stand for (an AST :func:`expr_text` prints),
:func:`wrappers` the calls the compiler added, whose own failure (a duration over 100 years) is
the written expression's, and :func:`written_text` a plan's expression text with each writing
read back (graph titles, ``meta.lets``). A hand-written ``seconds(a) < seconds(b)`` is shown as
``a < b`` too: the same value. The compiler, the plan layer and the runtime all read it, so it
lives here, beside the AST.
"""

from __future__ import annotations

import dataclasses
import json

import regex

from agentflow.core.vocabulary import (
    DURATION_PATTERN,
    MINUS_PRECEDENCE,
    NOT_PRECEDENCE,
    PRECEDENCE,
    duration_ms,
)
from agentflow.errors import SourceError
from agentflow.grammar import ast
from agentflow.grammar.parser import parse_expression

__all__ = ["as_written", "expr_text", "written_text", "wrappers"]

_DURATION_TEXT = regex.compile(DURATION_PATTERN)

#: the operators the compiler writes through ``seconds``/``canonical`` (both operands)
_COMPARED = frozenset({"==", "!=", "<", "<=", ">", ">=", "in", "not in"})
#: library calls whose arguments the compiler wraps (compiler/durations.call_by_length)
_WRAPPED_CALLS = frozenset({"index_of", "overlap", "count_by", "group_by"})


def _written_duration(e: ast.Expr) -> ast.Expr:
    """A written duration (the plan holds ``"1m"``) as its literal, else ``e``."""
    if isinstance(e, ast.StringLit) and e.is_plain:
        text = e.parts[0] if e.parts else ""
        if isinstance(text, str) and _DURATION_TEXT.fullmatch(text):
            return ast.DurationLit(e.span, duration_ms(text), text)
    return e


def _unwrapped(e: ast.Expr) -> ast.Expr | None:
    """``x`` of ``seconds(x)`` or ``canonical(x[, shape literal])``, else None."""
    if not isinstance(e, ast.FuncCall) or not e.args:
        return None
    if e.name == "seconds" and len(e.args) == 1:
        return _written_duration(e.args[0])
    if e.name == "canonical" and len(e.args) == 1:
        return _written_duration(e.args[0])
    if e.name == "canonical" and len(e.args) == 2:
        shape = e.args[1]
        if isinstance(shape, ast.ObjectLit | ast.StringLit):
            return _literal_durations(e.args[0], shape)
    return None


def _literal_durations(e: ast.Expr, shape: ast.Expr) -> ast.Expr:
    """``e`` with the written durations of its literals where ``shape`` (``canonical``'s)
    places durations shown as written (``{t: "90s"}`` → ``{t: 90s}``)."""
    if isinstance(shape, ast.StringLit):
        return _written_duration(e)
    if not isinstance(shape, ast.ObjectLit) or len(shape.entries) != 1:
        return e
    key, inner = shape.entries[0].key, shape.entries[0].value
    if key == "items" and isinstance(e, ast.ListLit):
        return dataclasses.replace(e, items=[_literal_durations(x, inner) for x in e.items])
    if key == "fields" and isinstance(e, ast.ObjectLit) and isinstance(inner, ast.ObjectLit):
        where = {en.key: en.value for en in inner.entries}
        return dataclasses.replace(
            e,
            entries=[
                dataclasses.replace(en, value=_literal_durations(en.value, where[en.key]))
                if en.key in where
                else en
                for en in e.entries
            ],
        )
    if key == "values" and isinstance(e, ast.ObjectLit):
        entries = [
            dataclasses.replace(en, value=_literal_durations(en.value, inner)) for en in e.entries
        ]
        return dataclasses.replace(e, entries=entries)
    return e


def _same(a: object, b: object) -> bool:
    """Structural equality of two ASTs (spans aside)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if not isinstance(a, ast.Node) or not isinstance(b, ast.Node):
        return a == b
    if type(a) is not type(b):
        return False
    return all(
        _same(getattr(a, f.name), getattr(b, f.name))
        for f in dataclasses.fields(a)
        if not f.name.endswith("span")
    )


def _difference(node: ast.FuncCall) -> ast.Expr | None:
    """``a - b - …`` for ``from_seconds(max([seconds(a) - seconds(b) - …, 0]))``."""
    if node.name != "from_seconds" or len(node.args) != 1:
        return None
    inner = node.args[0]
    if not (isinstance(inner, ast.FuncCall) and inner.name == "max" and len(inner.args) == 1):
        return None
    items = inner.args[0]
    if not (isinstance(items, ast.ListLit) and len(items.items) == 2):
        return None
    zero = items.items[1]
    if not (isinstance(zero, ast.NumberLit) and zero.value == 0):
        return None
    terms: list[ast.Expr] = []
    chain = items.items[0]
    while isinstance(chain, ast.Binary) and chain.op == "-":
        terms.append(chain.right)
        chain = chain.left
    terms.append(chain)
    if len(terms) < 2:
        return None
    operands: list[ast.Expr] = []
    for t in reversed(terms):
        if not (isinstance(t, ast.FuncCall) and t.name == "seconds" and len(t.args) == 1):
            return None  # left-associative: the first operand may be a `-` itself
        operands.append(_written_duration(t.args[0]))
    out = operands[0]
    for o in operands[1:]:
        out = ast.Binary(node.span, "-", out, o, node.span)
    return out


def as_written(node: ast.Expr) -> ast.Expr | None:
    """The expression ``node`` is the compiler's writing of (see the module docstring), its
    operands as they are (nested writings are read back when printed); None when ``node`` is
    not one."""
    if isinstance(node, ast.Binary) and node.op in _COMPARED:
        left, right = _unwrapped(node.left), _unwrapped(node.right)
        if left is not None and right is not None:
            return dataclasses.replace(node, left=left, right=right)
        return None
    if not isinstance(node, ast.FuncCall):
        return None
    diff = _difference(node)
    if diff is not None:
        return diff
    args = node.args
    if node.name in _WRAPPED_CALLS and args:
        first = _unwrapped(args[0])
        if first is None:
            return None
        rest = list(args[1:])
        if node.name in ("index_of", "overlap") and len(rest) == 1:
            second = _unwrapped(rest[0])
            if second is None:
                return None
            rest = [second]
        return dataclasses.replace(node, args=[first, *rest])
    if node.name == "unique" and len(args) == 2:
        keys = _unwrapped(args[1])
        if keys is not None and _same(keys, _written_duration(args[0])):
            return dataclasses.replace(node, args=[args[0]])
    return None


def wrappers(node: ast.Expr) -> list[ast.Expr]:
    """The calls the compiler added in ``node`` (when :func:`as_written` reads it back): the
    ``seconds``/``canonical`` around its operands or arguments, those of a difference's terms;
    a failure of one of them is a failure of the expression as written."""
    if isinstance(node, ast.Binary):
        return [node.left, node.right] if as_written(node) is not None else []
    if not isinstance(node, ast.FuncCall) or as_written(node) is None:
        return []
    if _difference(node) is not None:
        found: list[ast.Expr] = []
        inner = node.args[0]
        assert isinstance(inner, ast.FuncCall) and isinstance(inner.args[0], ast.ListLit)
        chain = inner.args[0].items[0]
        while isinstance(chain, ast.Binary) and chain.op == "-":
            found.append(chain.right)
            chain = chain.left
        return [*found, chain]
    return [a for a in node.args if _unwrapped(a) is not None]


def written_text(text: str) -> str:
    """``text``, a plan's expression (a template's inside or a condition), with each of the
    compiler's writings of durations in it replaced by the expression as written
    (``seconds(input.w) < seconds("5m")`` → ``input.w < 5m``), inside interpolations too; the
    rest character for character. ``text`` itself when nothing is (or it does not parse)."""
    if "seconds(" not in text and "canonical(" not in text:
        return text
    try:
        root = parse_expression(text, "<plan>")
    except SourceError:
        return text
    found: list[tuple[int, int, str]] = []
    todo: list[ast.Node] = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Binary | ast.FuncCall) and as_written(node) is not None:
            span = node.span
            if 0 <= span.start < span.end <= len(text):
                found.append((span.start, span.end, expr_text(node)))
                continue  # printed whole, the writings inside it too
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, ast.Node):
                    todo.append(v)
    for start, end, shown in sorted(found, reverse=True):
        text = text[:start] + shown + text[end:]
    return text


# ---------------------------------------------------------------------------------------------
# Text of expressions (run-time messages, graph titles)


def expr_text(node: ast.Expr | None) -> str:
    """A compact source-like rendering of an expression (paths exactly as written; the
    compiler's writings of durations as the user wrote them: runtime/written.py). An effect
    is shown short: an agent as ``agent(alias)``, a tool call with its arguments, ``ask "…"``
    (the graph's titles: compiler/lower_match.py)."""
    if node is None:
        return ""
    if isinstance(node, ast.Binary | ast.FuncCall):
        node = as_written(node) or node
    if isinstance(node, ast.Name):
        return node.name
    if isinstance(node, ast.Member):
        return f"{_operand_text(node.obj)}.{node.name}"
    if isinstance(node, ast.Index):
        return f"{_operand_text(node.obj)}[{expr_text(node.index)}]"
    if isinstance(node, ast.ProjectionItem):
        return ""
    if isinstance(node, ast.Projection):
        rest = expr_text(node.path) if node.path is not None else ""
        return f"{expr_text(node.base)}[*]{rest}"
    if isinstance(node, ast.NumberLit):
        return repr(node.value)
    if isinstance(node, ast.StringLit):
        return json.dumps(node.text, ensure_ascii=False) if node.is_plain else '"…"'
    if isinstance(node, ast.BoolLit):
        return "true" if node.value else "false"
    if isinstance(node, ast.NullLit):
        return "null"
    if isinstance(node, ast.DurationLit):
        return node.text
    if isinstance(node, ast.Binary):
        p = _PREC.get(node.op, 0)
        # left-associative; comparisons (5) and ranges (6) do not chain
        left = _grouped(node.left, p + 1 if p in (5, 6) else p)
        return f"{left} {node.op} {_grouped(node.right, p + 1)}"
    if isinstance(node, ast.Unary):
        if node.op == "not":
            return f"not {_grouped(node.operand, _NOT_PREC)}"
        return f"{node.op}{_grouped(node.operand, _MINUS_PREC + 1)}"
    if isinstance(node, ast.RangeExpr):
        return f"{_grouped(node.low, 7)}..{_grouped(node.high, 7)}"
    if isinstance(node, ast.ListLit):
        return "[" + ", ".join(expr_text(i) for i in node.items) + "]"
    if isinstance(node, ast.ObjectLit):
        return "{" + ", ".join(f"{e.key}: {expr_text(e.value)}" for e in node.entries) + "}"
    if isinstance(node, ast.FuncCall | ast.UserCall):
        return f"{node.name}(" + ", ".join(expr_text(a) for a in node.args) + ")"
    if isinstance(node, ast.CondExpr):
        then = _grouped(node.then, 1)  # the `then` arm is one operator chain
        return f"if {expr_text(node.cond)} then {then} else {expr_text(node.else_)}"
    if isinstance(node, ast.AgentExpr):  # as the graph names its step: the block left out
        return f"agent({expr_text(node.target)})"
    if isinstance(node, ast.Call) and isinstance(node.callee, ast.Name):
        args = ", ".join(f"{a.name}: {expr_text(a.value)}" for a in node.args)
        return f"{node.callee.name}({args})"
    if isinstance(node, ast.CallOptions):
        return expr_text(node.call)
    if isinstance(node, ast.AskExpr):
        return f"ask {expr_text(node.question)}"
    if isinstance(node, ast.MatchExpr):
        arms = ", ".join(
            f"{' | '.join(expr_text(p) for p in arm.patterns) or '_'} => {expr_text(arm.value)}"
            for arm in node.arms
        )
        return f"match {_grouped(node.subject, 1)} {{ {arms} }}"
    return type(node).__name__


#: Binding strength of the operators (core.vocabulary.PRECEDENCE, the parser's).
_PREC = PRECEDENCE
_NOT_PREC = NOT_PRECEDENCE
_MINUS_PREC = MINUS_PRECEDENCE


def _binding(node: ast.Expr) -> int:
    """How tightly ``node`` binds as printed (an operand binding less needs parentheses)."""
    if isinstance(node, ast.Binary | ast.FuncCall):
        node = as_written(node) or node
    if isinstance(node, ast.Binary):
        return _PREC.get(node.op, 0)
    if isinstance(node, ast.RangeExpr):
        return _PREC[".."]
    if isinstance(node, ast.Unary):
        return _NOT_PREC if node.op == "not" else _MINUS_PREC
    if isinstance(node, ast.CondExpr):
        return 0
    return 10


def _grouped(node: ast.Expr, needs: int) -> str:
    """``expr_text(node)`` as an operand that must bind at least ``needs``: parenthesized when it
    binds less (``1 / (input.n - 1)``, not ``1 / input.n - 1``)."""
    text = expr_text(node)
    return f"({text})" if _binding(node) < needs else text


def _operand_text(node: ast.Expr) -> str:
    """``expr_text`` of the object of a member/index, parenthesized when it is an operation
    (``(x ?? {a: null}).a``, not ``x ?? {a: null}.a``)."""
    text = expr_text(node)
    if isinstance(node, ast.Binary | ast.Unary | ast.RangeExpr | ast.CondExpr):
        return f"({text})"
    return text
