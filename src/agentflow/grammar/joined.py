"""Two statements on one line, and the loop words of other languages (docs/reference/
statements.md "Expression statements", docs/spec/LANGUAGE.md §1–8).

An expression statement starts a line; one written where the statement before it ends is
reported here as "expected the end of the statement, found …", with a hint for a clause written in
the wrong place (``f(…) timeout 1s``, ``map … { … } tolerate 1``), a misspelt keyword or two values
side by side. :mod:`.syntax_errors` words every other syntax error and re-exports these.
"""

from __future__ import annotations

import json
from typing import Any

from agentflow.core import diagnostics as diag
from agentflow.core.spans import Span
from agentflow.core.vocabulary import AGENT_CLAUSES, CALL_CLAUSES
from agentflow.core.vocabulary import KEYWORD_TERMINALS as KEYWORDS
from agentflow.grammar import ast
from agentflow.grammar.foreign_words import OPERATOR_HINTS
from agentflow.grammar.operand_words import operand_word_error, operand_word_name
from agentflow.grammar.scanner import SynErr

__all__ = [
    "LOOP_WAYS",
    "LOOP_WORDS",
    "joined_statement",
    "loop_hint",
    "misspelt_keyword_before",
    "statements_on_one_line",
]

#: loop keywords of other languages (`.flow` iterates with map, filter, reduce and `loop up to`)
LOOP_WORDS = ("for", "foreach", "while")

#: how `.flow` iterates, the hint of a loop of another language
LOOP_WAYS = (
    "`map xs as x { … }` gives a value per item, `filter xs as x where …` keeps some, "
    "`reduce xs as x, acc = start { … }` folds them, "
    "`loop up to n as i, s = start { … } until cond else …` repeats"
)


def loop_hint(word: str) -> str:
    """The hint for a loop of another language written with ``word`` (``for``, ``while``):
    the ways `.flow` iterates."""
    return f"there is no `{word}` loop: {LOOP_WAYS}"


#: the keyword that starts a statement or an expression of each kind, for "found `…`"
_LEADING_WORDS: dict[type, str] = {
    ast.LetStmt: "let",
    ast.ReturnStmt: "return",
    ast.FailStmt: "fail",
    ast.RequireStmt: "require",
    ast.SleepStmt: "sleep",
    ast.IfStmt: "if",
    ast.CondExpr: "if",
    ast.AgentExpr: "agent",
    ast.FilterExpr: "filter",
    ast.LoopExpr: "loop",
    ast.ReduceExpr: "reduce",
    ast.AskExpr: "ask",
    ast.VerifyExpr: "verify",
    ast.TryExpr: "try",
    ast.MatchExpr: "match",
    ast.ListLit: "[",
    ast.ObjectLit: "{",
}


def _word_span(span: Span, word: str) -> Span:
    """The span of ``word`` written at the start of ``span``."""
    n = len(word)
    return Span(
        span.file, span.line, span.column, span.line, span.column + n, span.start, span.start + n
    )


def _leading(node: Any) -> tuple[str, Span, str | None]:
    """What a statement starts with, in words for "found …": ``(words, its span, the name
    when it is a name)``."""
    while True:
        if isinstance(node, ast.ExprStmt):
            node = node.expr
        elif isinstance(node, ast.Binary | ast.RangeExpr):
            node = node.left if isinstance(node, ast.Binary) else node.low
        elif isinstance(node, ast.Member | ast.Index):
            node = node.obj
        elif isinstance(node, ast.Projection):
            node = node.base
        elif isinstance(node, ast.Call):
            node = node.callee
        elif isinstance(node, ast.CatchExpr):
            node = node.guarded
        else:
            break
    if isinstance(node, ast.Name):
        return f"the name `{node.name}`", node.span, node.name
    if isinstance(node, ast.FuncCall):
        return f"the name `{node.name}`", node.name_span, node.name
    if isinstance(node, ast.NumberLit):
        return f"the number `{node.value}`", node.span, None
    if isinstance(node, ast.DurationLit):
        return f"the duration `{node.text}`", node.span, None
    if isinstance(node, ast.StringLit):
        return "a string", node.span, None
    if isinstance(node, ast.BoolLit | ast.NullLit):
        word = "null" if isinstance(node, ast.NullLit) else str(node.value).lower()
        return f"`{word}`", node.span, None
    if isinstance(node, ast.MapExpr):
        word = "parallel" if node.parallel else "map"
    elif isinstance(node, ast.Unary):
        word = "not" if node.op == "not" else "-"
    else:
        word = next((w for t, w in _LEADING_WORDS.items() if isinstance(node, t)), "")
    if not word:
        return "another statement", node.span, None
    return f"`{word}`", _word_span(node.span, word), None


def _trailing(stmt: ast.Stmt) -> ast.Expr | None:
    """The expression a statement ends with (what a clause written after it was meant for)."""
    if isinstance(stmt, ast.LetStmt | ast.ReturnStmt):
        e: ast.Expr | None = stmt.value
    elif isinstance(stmt, ast.ExprStmt):
        e = stmt.expr
    else:
        return None
    while isinstance(e, ast.Binary):
        e = e.right
    return e


#: the words of a unit of time → (`.flow`'s unit, how many of it one is)
_UNIT_WORDS = {
    **dict.fromkeys(("ms", "msec", "msecs", "millis", "millisecond", "milliseconds"), ("ms", 1)),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), ("s", 1)),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), ("m", 1)),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), ("h", 1)),
    **dict.fromkeys(("d", "day", "days"), ("h", 24)),
}


def unit_word_hint(number: str, word: str) -> str | None:
    """The hint of a duration spelt with a word (``20 minutes`` → ``20m``, ``2 days`` →
    ``48h``), or None when ``word`` names no unit of time."""
    unit = _UNIT_WORDS.get(word.lower())
    if unit is None or not number.isdigit():
        return None
    written = f"{int(number) * unit[1]}{unit[0]}"
    return (
        f"a duration is written with its unit against the number: `{written}` "
        f"(not `{number} {word}`; the units are `ms`, `s`, `m`, `h`)"
    )


def _unit_word_after(prev: ast.Stmt, word: str) -> str | None:
    """The duration-word hint when ``prev`` ends with a whole number and the next statement is
    a unit word (``sleep 5 minutes``, ``f(x) timeout 10 seconds``), else None."""
    for node in ast.walk(prev):
        if (
            isinstance(node, ast.NumberLit)
            and isinstance(node.value, int)
            and node.span.end == prev.span.end
        ):
            return unit_word_hint(str(node.value), word)
    return None


def _misplaced_clause(word: str, before: ast.Expr | None) -> str | None:
    """The hint for a clause (``tolerate``, ``limit``, ``timeout``, ``retry``) written after the
    expression ``before`` instead of where it goes."""
    if isinstance(before, ast.MapExpr) and word in ("tolerate", "limit"):
        head = "parallel map" if before.parallel else "map"
        example = "tolerate 1" if word == "tolerate" else "limit 4"
        return f"`{word}` goes before the body: `{head} xs as x {example} {{ … }}`"
    if isinstance(before, ast.ParallelExpr) and word == "tolerate":
        return (
            "a `parallel` block has no `tolerate`: keep a branch's failure as a value in that "
            "branch, with `catch` (`parallel { a: f(x) catch { fallback }, … }`); the other "
            "branches still run"
        )
    if isinstance(before, ast.AgentExpr) and word in AGENT_CLAUSES:
        return f"`{word}` is a clause of the agent block: write it inside its braces, `agent(…) {{ … {word} … }}`"
    if word in ("timeout", "retry"):
        return (
            f"`{word}` is a clause of a tool call, right after it on the line where it ends "
            f"(`let x = tool(arg: v) {CALL_CLAUSES[word]}`), or of an `agent` block, inside "
            "its braces"
        )
    if word == "tolerate":
        return "`tolerate` is an option of `map`, before its body: `map xs as x tolerate 1 { … }`"
    return None


def _misspelt_keyword(e: ast.Expr | None) -> bool:
    """Whether ``e`` is a name that is a misspelt keyword (``retrun 1``, ``paralel map …``): the
    checker's `unknown-name` says "did you mean `return`?" at it, which says more than an error
    at what follows."""
    return (
        isinstance(e, ast.Name)
        and e.name not in KEYWORDS
        and diag.did_you_mean(e.name, list(KEYWORDS)) is not None
    )


def _is_sleep(e: ast.Expr | None) -> bool:
    """Whether ``e`` is the name ``sleep`` (the statement written where a value goes)."""
    return isinstance(e, ast.Name) and e.name == "sleep"


def statements_on_one_line(item: ast.Item) -> SynErr | None:
    """The error for the first expression statement of ``item`` that starts on the line where
    the statement before it ends (an expression statement starts a line: docs/reference/
    statements.md "Expression statements", docs/decisions.md), or None: "expected the end of the statement, found …", at the first token of the
    statement, with a hint for a clause written in the wrong place (``f(…) timeout 1s``,
    ``map … { … } tolerate 1``) or for two values side by side."""
    first: tuple[ast.Stmt, ast.Stmt] | None = None
    for node in ast.walk(item):
        if not isinstance(node, ast.Block):
            continue
        stmts = node.stmts
        for k in range(1, len(stmts)):
            prev, stmt = stmts[k - 1], stmts[k]
            if (
                isinstance(stmt, ast.ExprStmt)
                and prev.span.end_line == stmt.span.line
                and (
                    _leading(prev)[2] in LOOP_WORDS  # `for x in xs { }` on one line
                    or not _misspelt_keyword(_trailing(prev))
                )
            ):
                if first is None or stmt.span.start < first[1].span.start:
                    first = (prev, stmt)
                break
    if first is None:
        return None
    return joined_statement(*first)


def misspelt_keyword_before(prev: ast.Stmt) -> ast.Name | None:
    """The name ``prev`` ends with when it is a misspelt keyword (``retrun``, ``paralel``), or
    None: an expression statement on the line of such a ``prev`` parses, and the checker
    decides which mistake it is — `unknown-name` at the name when it is not defined, else
    :func:`joined_statement` (a defined name, ``let x = a b``, drops no value silently)."""
    e = _trailing(prev)
    return e if isinstance(e, ast.Name) and _misspelt_keyword(e) else None


def joined_statement(prev: ast.Stmt, stmt: ast.Stmt) -> SynErr:
    """The error for the statement ``stmt`` that starts on the line where ``prev`` ends:
    "expected the end of the statement, found …" at its first token, with a hint for a clause
    written in the wrong place or for two values side by side (``there is no `for` loop`` for
    a loop written on one line)."""
    loop_word = _leading(prev)
    if loop_word[2] in LOOP_WORDS:  # `for x in xs { }`, `while c { }` on one line
        return SynErr(
            f"there is no `{loop_word[2]}` loop in `.flow`",
            loop_word[1],
            hint=loop_hint(loop_word[2]),
        )
    value = prev.value if isinstance(prev, ast.LetStmt | ast.ReturnStmt) else None
    operand = operand_word_name(prev.expr if isinstance(prev, ast.ExprStmt) else value)
    if operand is not None:  # `let n = 1 + ask "x" …`: `ask` was read as a name
        return operand_word_error(operand.name, operand.span)
    words, span, name = _leading(stmt)
    hint = None
    if name is not None:
        hint = _misplaced_clause(name, _trailing(prev)) or OPERATOR_HINTS.get(name)
    word = (
        prev.expr.name if isinstance(prev, ast.ExprStmt) and isinstance(prev.expr, ast.Name) else ""
    )
    if hint is None and name is not None:  # `sleep 5 minutes`: a unit of time in a word
        hint = _unit_word_after(prev, name)
    if hint is None and _is_sleep(_trailing(prev)):
        # `let x = sleep 5m`: `sleep` is a statement of its own, with no value
        hint = "`sleep` is a statement with no value: write it on a line of its own (`sleep 5m`)"
    if hint is None and word in CALL_CLAUSES:  # `timeout 10s` on a line of its own
        hint = (
            f"a tool call's `{word}` goes right after the call, on the line where it ends: "
            f"`let x = tool(arg: v) {CALL_CLAUSES[word]}`; an agent's, inside its block"
        )
    before = _trailing(prev)
    if name == "expect" and isinstance(before, ast.AskExpr) and before.expect is None:
        # `ask "Go?" default false expect bool`: the clauses are in a fixed order
        late = "default" if before.default is not None else "else"
        q = before.question
        asked = q.parts[0] if isinstance(q, ast.StringLit) and len(q.parts) == 1 else None
        shown = json.dumps(asked) if isinstance(asked, str) and len(asked) <= 40 else '"…"'
        tail = 'else fail "…"'
        typ = "T"
        d = before.default
        if isinstance(d, ast.BoolLit):
            typ, tail = "bool", f"default {str(d.value).lower()}"
        elif isinstance(d, ast.NumberLit):
            typ, tail = ("int" if isinstance(d.value, int) else "number"), f"default {d.value}"
        elif d is not None:
            tail = "default …"
        return SynErr(
            f"an `ask`'s `expect` comes before its `{late}`",
            span,
            hint=(
                'the clauses of `ask` are in this order: `ask "…" expect T`, then `default v` '
                f'or `else fail "…"`: `ask {shown} expect {typ} {tail}`'
            ),
        )
    if hint is None:
        hint = (
            "a line holds one statement: start a new line for the next one, or join the "
            "values with an operator (`a + b`, `a and b`)"
        )
    return SynErr(
        f"expected the end of the statement (a line break), found {words}", span, hint=hint
    )
