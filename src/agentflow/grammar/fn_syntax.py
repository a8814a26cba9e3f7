"""The syntax errors of a ``fn`` declaration (docs/reference/programs.md "User functions"),
where the generic "expected …, found …" would not say what a function is: a body written as a
block (``fn f(x: int) -> int { x + 1 }``), no result type (``fn f(x: int) = …``, ``fn f(x: int)
{ … }``), a parameter without its type (``fn f(x) -> int = …``). Each gives the message, the
span (the token the parser stopped at) and a hint with the fix in the user's own names."""

from __future__ import annotations

import re
from typing import Any

from agentflow.core.spans import Span
from agentflow.grammar.scanner import Scanner, Tok

__all__ = ["fn_error"]

#: a body's text that is one expression we can move after `=` as written
_RETURN = re.compile(r"^return\s+")
#: the longest block body the hint copies
_BODY_MAX = 80


def _fn_head(values: list[Any] | None) -> int | None:
    """The index of the ``fn`` token of the declaration being parsed on the driver's value
    stack ``values`` (``fn NAME (`` after it), or None when the parser is not in one."""
    vals = values or []
    for i in range(len(vals) - 1, -1, -1):
        v = vals[i]
        if isinstance(v, Tok) and v.type == "FN":
            after = vals[i + 1 : i + 3]
            if [getattr(t, "type", None) for t in after] == ["NAME", "LPAR"]:
                return i
            return None
    return None


def _text(sc: Scanner, start: int, end: int) -> str:
    return sc.text[start - sc.ob : end - sc.ob]


def _block_body(sc: Scanner, brace: Tok) -> str | None:
    """The text inside the ``{ … }`` that starts at ``brace`` when it is one expression on one
    line (a leading ``return`` dropped), else None."""
    k = brace.end - sc.ob
    depth, j = 1, k
    while j < len(sc.text) and depth:
        ch = sc.text[j]
        depth += (ch == "{") - (ch == "}")
        j += 1
    if depth:
        return None
    body = _RETURN.sub("", sc.text[k : j - 1].strip())
    if not body or "\n" in body or len(body) > _BODY_MAX or body.startswith("let "):
        return None
    return body


def fn_error(
    tok: Any, expected: set[str], sc: Scanner, values: list[Any] | None
) -> tuple[str, Span, str] | None:
    """``(message, span, hint)`` for a ``fn`` declaration the parser stopped in at ``tok``
    (expecting the terminals ``expected``; ``values`` the driver's value stack), or None when
    the mistake is not one of a function's own."""
    at = _fn_head(values)
    if at is None or not isinstance(tok, Tok):
        return None
    vals = values or []
    fn, name = vals[at], vals[at + 1]
    head = _text(sc, fn.start, tok.start).rstrip()
    if tok.type == "LBRACE" and "EQUALS" in expected:
        # `fn f(x: int) -> int { x + 1 }`: a block, as stages have
        body = _block_body(sc, tok)
        fix = f"{head} = {body or '…'}"
        return (
            "a function's body is one expression after `=`, not a block",
            tok.span,
            f"write `{fix}`"
            + (
                ""
                if body
                else ": one expression (an `if … then … else` or a `match` to choose), "
                "no `let` or `return`; a computation of several steps is a `stage`"
            ),
        )
    if "ARROW" in expected and tok.type in ("LBRACE", "EQUALS"):
        # `fn f(x: int) = x + 1`, `fn f(x: int) { … }`: the result type is declared
        rest = "= …"
        if tok.type == "EQUALS":
            after = sc.text[tok.end - sc.ob :].split("\n", 1)[0].strip()
            rest = f"= {after}" if after and len(after) <= _BODY_MAX else rest
        else:
            body = _block_body(sc, tok)
            rest = f"= {body}" if body else rest
        return (
            f"function `{name.value}` has no result type",
            tok.span,
            f"write `{head} -> T {rest}`, `T` the type of its value (`int`, `text`, `bool`, a "
            "named type …): a function's parameters and result are typed, as a tool's are",
        )
    param = vals[-1]
    if (
        "COLON" in expected
        and tok.type in ("RPAR", "COMMA")
        and isinstance(param, Tok)
        and param.type == "NAME"
    ):
        # `fn f(x) -> int = …`, `fn f(x, y: int)`: a parameter without its type
        return (
            f"parameter `{param.value}` of function `{name.value}` has no type",
            param.span,
            f"write its type after a colon, `{param.value}: int` (or `text`, `bool`, a named "
            "type …): a function's parameters are typed, as a tool's are",
        )
    return None
