"""The syntax errors of a ``fn`` declaration (docs/reference/programs.md "User functions"),
where the generic "expected …, found …" would not say what a function is: a body written as a
block (``fn f(x: int) -> int { x + 1 }``), no result type (``fn f(x: int) = …``, ``fn f(x: int)
{ … }``), a parameter without its type (``fn f(x) -> int = …``) — the one slip an ``extern
tool`` declaration shares (``extern tool t(x) -> int``, docs/reference/tools.md). Each gives the
message, the span (the parameter, or the token the parser stopped at) and a hint with the fix
in the user's own names."""

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


#: the tokens of an ``extern tool`` declaration's head up to its ``(``, by form
_TOOL_HEADS = (
    ["EXTERN", "TOOL", "NAME", "LPAR"],
    ["EXTERN", "TOOL", "STRING", "AS", "NAME", "LPAR"],
)


def _tool_head(values: list[Any]) -> tuple[Tok, int] | None:
    """``(name, index of its "(")`` of the ``extern tool`` whose parameters the parser is in on
    the driver's value stack ``values`` (``extern tool NAME (`` or ``extern tool "…" as NAME
    (``), or None."""
    for i in range(len(values) - 1, -1, -1):
        v = values[i]
        if isinstance(v, Tok) and v.type == "EXTERN":
            kinds = [getattr(t, "type", None) for t in values[i : i + 6]]
            for head in _TOOL_HEADS:
                if kinds[: len(head)] == head:
                    lpar = i + len(head) - 1
                    name: Tok = values[lpar - 1]
                    return name, lpar
            return None
    return None


def _untyped_param(
    tok: Any, expected: set[str], values: list[Any], lpar: int
) -> tuple[Tok, str] | None:
    """``(the parameter's name, what it is written as with a type)`` when the parser stopped at
    the ``)`` or ``,`` right after a parameter's name (``x`` or ``x?``) waiting for ``:``, the
    parameter one of the list opened at ``values[lpar]`` (not a field of an object type in it:
    ``(x: {a, b: int})``)."""
    if "COLON" not in expected or tok.type not in ("RPAR", "COMMA"):
        return None
    at = len(values) - 1
    if at > lpar and getattr(values[at], "type", None) == "QMARK":
        at -= 1
    param = values[at]
    # the first parameter right after `(`, or a later one after `params ,`
    if at not in (lpar + 1, lpar + 3) or not (isinstance(param, Tok) and param.type == "NAME"):
        return None
    if at == lpar + 3 and getattr(values[lpar + 2], "type", None) != "COMMA":
        return None
    return param, f"{param.value}{'?' if at < len(values) - 1 else ''}: int"


def _text(sc: Scanner, start: int, end: int) -> str:
    return sc.text[start - sc.ob : end - sc.ob]


def _block_body(sc: Scanner, brace: Tok) -> str | None:
    """The text inside the ``{ … }`` that starts at ``brace`` when it is one expression on one
    line (a leading ``return`` dropped), else None."""
    text = _block_text(sc, brace)
    if text is None:
        return None
    body = _RETURN.sub("", text.strip())
    if not body or "\n" in body or len(body) > _BODY_MAX or body.startswith("let "):
        return None
    return body


#: one statement of a block body the hint can fold into one expression
_LET = re.compile(r"^let\s+([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]+)?=\s*(.+)$")
#: a string literal (its `${…}` included) and a name, as the folding reads an expression
_STRING_OR_NAME = re.compile(r'"(?:\\.|[^"\\])*"|[A-Za-z_][A-Za-z0-9_]*')
#: an expression that needs no parentheses where a name stood
_ATOM = re.compile(r'^(?:[A-Za-z_][A-Za-z0-9_.]*|[0-9][0-9_.]*|"(?:\\.|[^"\\])*")$')


def _block_text(sc: Scanner, brace: Tok) -> str | None:
    """The text inside the ``{ … }`` that starts at ``brace``, or None when it is not closed."""
    k = brace.end - sc.ob
    depth, j = 1, k
    while j < len(sc.text) and depth:
        ch = sc.text[j]
        depth += (ch == "{") - (ch == "}")
        j += 1
    return None if depth else sc.text[k : j - 1]


def _substitute(expr: str, name: str, value: str) -> str | None:
    """``expr`` with each read of the variable ``name`` replaced by ``value`` (parenthesized
    unless an atom); None when ``name`` occurs inside a string (an interpolation the fold
    would have to rewrite)."""
    out: list[str] = []
    at = 0
    wrapped = value if _ATOM.match(value) else f"({value})"
    for m in _STRING_OR_NAME.finditer(expr):
        word = m.group(0)
        if word.startswith('"'):
            if re.search(rf"\b{re.escape(name)}\b", word):
                return None
            continue
        before = expr[: m.start()].rstrip()
        after = expr[m.end() :].lstrip()
        if word != name or before.endswith(".") or (after.startswith(":")):
            continue  # a field (`t.y`), an object key (`{ y: 1 }`), another name
        out.append(expr[at : m.start()])
        out.append(value if expr.strip() == name else wrapped)
        at = m.end()
    out.append(expr[at:])
    return "".join(out)


def _folded(block: str) -> str | None:
    """A block body of ``let``s and a final ``return``, one statement a line, as the one
    expression it computes (each ``let``'s value written where it is read): ``let y = x * 2``
    then ``return y + 1`` is ``(x * 2) + 1``. None for any other block (an ``if``, a comment,
    a statement over several lines) or a result longer than the hint shows."""
    lines = [ln.strip() for ln in block.strip().split("\n") if ln.strip()]
    if len(lines) < 2 or any("//" in ln for ln in lines):
        return None
    ret = _RETURN.match(lines[-1])
    if ret is None:
        return None
    lets: list[tuple[str, str]] = []
    for ln in lines[:-1]:
        m = _LET.match(ln)
        if m is None:
            return None
        lets.append((m.group(1), m.group(2).strip()))
    result = lines[-1][ret.end() :].strip()
    for i in range(len(lets) - 1, -1, -1):
        name, value = lets[i]
        folded = _substitute(result, name, value)
        if folded is None:
            return None
        result = folded
    return result if result and len(result) <= _BODY_MAX else None


def _block_hint(head: str, block: str | None) -> str:
    """The hint for a block body that is not one expression: the declaration with the block
    folded into one expression when it can be, else what a function's body may hold, in the
    names of the declaration ``head`` (``fn f(x: int) -> int``)."""
    folded = _folded(block) if block is not None else None
    if folded is not None:
        return (
            f"write `{head} = {folded}`: a function's body is one expression, each `let`'s "
            "value written where it is read"
        )
    params = re.findall(r"[(,]\s*([A-Za-z_][A-Za-z0-9_]*)\s*\??\s*:", head)
    of = f" of {_listing([f'`{p}`' for p in params])}" if params else ""
    return (
        f"write the value after `=` as one expression{of}: literals, operators, "
        "`if c then a else b`, `match`, calls of library and user functions; no `let` (write "
        "its value where it is read), no `return`, no tool call or agent; a computation of "
        "several steps is a `stage`"
    )


def _listing(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _line_from(sc: Scanner, start: int) -> str:
    """The text of the line from offset ``start`` (a scanner's) to its end, stripped."""
    return sc.text[start - sc.ob :].split("\n", 1)[0].strip()


def _after_equals(
    tok: Tok, expected: set[str], sc: Scanner, vals: list[Any], at: int
) -> tuple[str, Span, str] | None:
    """The slips of a ``fn`` declaration's head and body the parser stopped in at ``tok``
    (``vals[at]`` its ``fn``): ``: int`` for ``-> int``, a block after ``=``, ``= return x``."""
    fn = vals[at]
    if tok.type == "COLON" and "ARROW" in expected:
        # `fn f(x: int): int = x` of Python and TypeScript
        head = _text(sc, fn.start, tok.start).rstrip()
        rest = _line_from(sc, tok.end)
        fix = f"{head} -> {rest}" if rest and len(rest) <= _BODY_MAX else f"{head} -> T = …"
        return (
            "a function's result type is written after `->`, not `:`",
            tok.span,
            f"write `{fix}`",
        )
    eq = next(
        (
            i
            for i in range(at + 2, len(vals))
            if isinstance(vals[i], Tok) and vals[i].type == "EQUALS"
        ),
        None,
    )
    if eq is None:
        return None
    head = _text(sc, fn.start, vals[eq].start).rstrip()
    if tok.type == "RETURN" and eq == len(vals) - 1:
        # `fn f(x: int) -> int = return x`
        body = _line_from(sc, tok.end)
        fix = body if body and len(body) <= _BODY_MAX else "…"
        return (
            "a function's body is one expression, without `return`",
            tok.span,
            f"write `{head} = {fix}`: the expression after `=` is the function's value",
        )
    brace = vals[eq + 1] if eq + 1 < len(vals) else None
    if not (isinstance(brace, Tok) and brace.type == "LBRACE"):
        return None
    inside = vals[eq + 2 :]
    if inside and not (
        len(inside) == 1
        and isinstance(inside[0], Tok)
        and inside[0].type == "NAME"
        and "COLON" in expected
    ):
        return None
    # `fn f(x: int) -> int = { let y = x + 1  return y }`: a block, read as an object
    block = _block_body(sc, brace)
    return (
        "a function's body is one expression after `=`, not a block",
        brace.span,
        f"write `{head} = {block}`" if block else _block_hint(head, _block_text(sc, brace)),
    )


def fn_error(
    tok: Any, expected: set[str], sc: Scanner, values: list[Any] | None
) -> tuple[str, Span, str] | None:
    """``(message, span, hint)`` for a ``fn`` declaration the parser stopped in at ``tok``
    (expecting the terminals ``expected``; ``values`` the driver's value stack) — or for an
    ``extern tool`` parameter without its type — or None when the mistake is not one of a
    function's own."""
    if not isinstance(tok, Tok):
        return None
    vals = values or []
    at = _fn_head(values)
    if at is None:
        declared = _tool_head(vals)
        untyped = None if declared is None else _untyped_param(tok, expected, vals, declared[1])
        if declared is None or untyped is None:
            return None
        tool = declared[0]
        # `extern tool t(x) -> int`: as a function's, a tool's parameters are typed
        param, typed = untyped
        return (
            f"parameter `{param.value}` of tool `{tool.value}` has no type",
            param.span,
            f"write its type after a colon, `{typed}` (or `text`, `bool`, a named type, `json` "
            "…): a tool's parameters are typed, and each call's arguments are checked against "
            "them; `flowc tools --extern` prints the declaration typed from the tool's own "
            "schema",
        )
    fn, name = vals[at], vals[at + 1]
    head = _text(sc, fn.start, tok.start).rstrip()
    after_eq = _after_equals(tok, expected, sc, vals, at)
    if after_eq is not None:
        return after_eq
    if tok.type == "LBRACE" and "EQUALS" in expected:
        # `fn f(x: int) -> int { x + 1 }`: a block, as stages have
        body = _block_body(sc, tok)
        return (
            "a function's body is one expression after `=`, not a block",
            tok.span,
            f"write `{head} = {body}`" if body else _block_hint(head, _block_text(sc, tok)),
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
    untyped = _untyped_param(tok, expected, vals, at + 2)
    if untyped is not None:
        # `fn f(x) -> int = …`, `fn f(x, y: int)`: a parameter without its type
        param, typed = untyped
        return (
            f"parameter `{param.value}` of function `{name.value}` has no type",
            param.span,
            f"write its type after a colon, `{typed}` (or `text`, `bool`, a named "
            "type …): a function's parameters are typed, as a tool's are",
        )
    return None
