"""Hints for the habits of other languages the generic "expected …, found …" would miss or
mis-word (docs/reference/expressions.md "Coming from another language"): ``a?.b``, a list
comprehension, ``elif``, ``===``, ``x++``, ``{ ...o }``, top-level ``def`` / ``function`` /
``interface`` / ``enum`` / ``from "…" import``, ``stage s(): T``, ``if c { 1 } else { 2 }`` as a
value, ``assert`` in a test, an unquoted test name, a ``loop`` without its state and a
``reduce xs as x from 0`` (the accumulator not named).

:func:`habit_hint` gives the hint for the token the parser stopped at; :func:`elif_word` finds
the ``elif`` whose ``{`` the parser read as an object (the error is then told at that word)."""

from __future__ import annotations

import re
from typing import Any

from agentflow.core.diagnostics import Replacement
from agentflow.core.spans import Span
from agentflow.grammar.habit_fixes import FixedHint
from agentflow.grammar.scanner import Scanner, Tok

__all__ = ["LAMBDA_HEAD", "elif_word", "habit_hint", "lambda_hint"]

#: a top-level word of another language → the hint naming the `.flow` declaration
_DECLARATIONS = {
    "def": "functions are declared with `fn`: `fn name(x: int) -> int = x + 1` "
    "(docs/reference/functions.md)",
    "function": "functions are declared with `fn`: `fn name(x: int) -> int = x + 1` "
    "(docs/reference/functions.md)",
    "func": "functions are declared with `fn`: `fn name(x: int) -> int = x + 1` "
    "(docs/reference/functions.md)",
    "interface": "an object type is declared with `type`: `type Name { field: text }`",
    "class": "an object type is declared with `type`: `type Name { field: text }`",
    "struct": "an object type is declared with `type`: `type Name { field: text }`",
    "enum": 'a choice of values is a union of literals: `type Color = "red" | "green"` '
    "(checked exhaustive by `match`)",
}

_SPREAD = re.compile(r"\.\.\.\s*([\w.]{1,40})\s*(?:,\s*([^{}\n]{1,60}?))?\s*\}")
_STAGE_TYPE = re.compile(r"\(\s*\)\s*(?::|->)\s*([^{}\n]{1,40}?)\s*\{")
_IF_BLOCKS = re.compile(r"\{\s*([^{}\n]{1,40}?)\s*\}\s*else\s*\{\s*([^{}\n]{1,40}?)\s*\}")
_COMPREHENSION = re.compile(
    r"\[\s*([^\[\]\n]{1,60}?)\s+for\s+([A-Za-z_]\w*)\s+in\s+(.{1,60}?)"
    r"(?:\s+if\s+([^\[\]\n]{1,60}?))?\s*\]\s*$"
)


def _type(v: Any) -> str | None:
    return v.type if isinstance(v, Tok) else None


def _text_after(sc: Scanner, tok: Tok) -> str:
    """The rest of ``tok``'s line after it."""
    k = tok.end - sc.ob
    stop = sc.text.find("\n", k)
    return sc.text[k : stop if stop >= 0 else len(sc.text)]


def _touches(sc: Scanner, before: Any, tok: Tok) -> bool:
    """Whether token ``before`` ends where ``tok`` starts (``==`` then ``=`` of ``===``)."""
    return isinstance(before, Tok) and before.end == tok.start


def _comprehension(sc: Scanner, tok: Tok) -> str:
    """``[x + 1 for x in xs]`` → ``map xs as x { x + 1 }`` (``filter`` first for an ``if``)."""
    k = tok.start - sc.ob
    start = sc.text.rfind("[", 0, k)
    stop = sc.text.find("\n", k)
    line = sc.text[start if start >= 0 else k : stop if stop >= 0 else len(sc.text)]
    m = _COMPREHENSION.match(line.rstrip().removesuffix(")").rstrip())
    head = "there are no list comprehensions in `.flow`: "
    if m is None:
        return (
            head
            + "write `map xs as x { … }` (a value per item; `filter xs as x where …` keeps some)"
        )
    value, x, xs, cond = m.groups()
    if cond and value.strip() == x:
        return head + f"write `filter {xs} as {x} where {cond}`"
    if cond:
        return head + f"write `map (filter {xs} as {x} where {cond}) as {x} {{ {value} }}`"
    return head + f"write `map {xs} as {x} {{ {value} }}`"


def _spread(sc: Scanner, tok: Tok) -> str:
    """``{ ...o, b: 2 }`` → ``merge(o, { b: 2 })``; ``[...xs, 1]`` → ``xs + [1]``."""
    head = "there is no spread (`...`) in `.flow`: "
    opener = sc.stack[-1].value if sc.stack else "{"
    if opener == "[":
        return head + "`xs + [1]` joins two lists (`+` concatenates them)"
    k = tok.start - sc.ob
    m = _SPREAD.match(sc.text, k)
    before = sc.text[sc.text.rfind("{", 0, k) + 1 : k].strip().rstrip(",").strip()
    o = m.group(1) if m else "o"
    rest = m.group(2) if m else None
    if before and not rest:  # `{ c: 3, ...o }`: the fields of `o` win
        return head + f'`merge({{ {before} }}, {o})` (docs/reference/functions.md "merge")'
    return (
        head + f"`merge({o}, {{ {rest or 'b: 2'} }})` gives the object `{o}` with the fields "
        'of the second set (docs/reference/functions.md "merge")'
    )


def habit_hint(tok: Any, expected: set[str], values: list[Any] | None, sc: Scanner) -> str | None:
    """The hint for a habit of another language at ``tok`` (the parser could take only the
    terminals ``expected``; ``values`` is the driver's value stack), or None."""
    if not isinstance(tok, Tok):
        return None
    vals = values or []
    prev: Tok | None = vals[-1] if vals and isinstance(vals[-1], Tok) else None
    typ, word = tok.type, tok.value if isinstance(tok.value, str) else None
    if typ == "QMARK" and "QMARK" not in expected and _text_after(sc, tok).startswith("."):
        return FixedHint(
            "there is no `?.`: `.` already reads through an optional (`a.b` is `null` when `a` "
            "is), so write `a.b`; `a.b ?? default` gives a value in its place",
            Replacement(tok.span, "", "Replace `?.` with `.`"),
        )
    if word == "for" and "RSQB" in expected:
        return _comprehension(sc, tok)
    if typ == "EQUALS" and _type(prev) in ("EQ", "NE") and _touches(sc, prev, tok):
        op = "==" if _type(prev) == "EQ" else "!="
        return FixedHint(
            f"there is no `{op}=` in `.flow`: `{op}` compares values (the types are checked)",
            Replacement(tok.span, "", f"Replace `{op}=` with `{op}`"),
        )
    if (
        typ == "EQUALS"
        and prev is not None
        and prev.type in ("PLUS", "MINUS", "STAR", "SLASH")
        and _touches(sc, prev, tok)
    ):
        name = vals[-2] if len(vals) > 1 and isinstance(vals[-2], Tok) else None
        x = name.value if name is not None and name.type == "NAME" else "x"
        return (
            f"there is no `{prev.value}=`: a `let` is bound once; name the new value "
            f"(`let {x}2 = {x} {prev.value} 1`), or fold a list with `reduce`"
        )
    if typ in ("PLUS", "MINUS", "MINUS_NL") and _type(prev) == typ and _touches(sc, prev, tok):
        name = vals[-2] if len(vals) > 1 and isinstance(vals[-2], Tok) else None
        x = name.value if name is not None and name.type == "NAME" else "x"
        return (
            f"there is no `{str(tok.value) * 2}`: a `let` is bound once; name the next value "
            f"(`let {x}2 = {x} {tok.value} 1`), or count with `reduce` or `loop`"
        )
    if typ == "STAR" and _type(prev) == "STAR" and _touches(sc, prev, tok):
        # `2 ** 3` of Python, JavaScript, Ruby: the standard library has no power function
        return "there is no `**` (nor a power function): multiply, `x * x` (or `x * x * x`)"
    if word in ("except", "rescue") and sc.text[: tok.start - sc.ob].rstrip().endswith("}"):
        # `try { … } except { … }` of Python, `rescue` of Ruby
        return f"a `try` is caught with `catch`, not `{word}`: `try {{ … }} catch {{ … }}`"
    if typ == "DOTDOT" and sc.text.startswith("...", tok.start - sc.ob):
        return _spread(sc, tok)
    if tok.bol and word is not None and "STAGE" in expected:
        if word in _DECLARATIONS:
            return _DECLARATIONS[word]
        if typ == "FROM":
            m = re.match(r"\s*(\"[^\"\n]*\")\s*import\s*(\{[^{}\n]*\})", _text_after(sc, tok))
            what, where = (m.group(2), m.group(1)) if m else ("{ T }", '"./file.flow"')
            return f"`import` comes first: `import {what} from {where}`"
    if (
        typ == "LPAR"
        and prev is not None
        and prev.type == "NAME"
        and len(vals) > 1
        and _type(vals[-2]) == "STAGE"
    ):
        m = _STAGE_TYPE.match(sc.text, tok.start - sc.ob)
        t = m.group(1) if m else "T"
        return (
            f"a stage takes no parameters (it reads `input` and the stages before it by name) "
            f"and its type follows `->`: `stage {prev.value} -> {t} {{ … }}`"
        )
    if typ == "LBRACE" and "THEN" in expected:
        m = _IF_BLOCKS.match(sc.text, tok.start - sc.ob)
        a, b = m.groups() if m else ("a", "b")
        return (
            f"a conditional value is written `if c then {a} else {b}`; `if c {{ … }}` is a "
            "statement (docs/reference/expressions.md)"
        )
    if word == "assert" and "EXPECT" in expected:
        rest = _text_after(sc, tok).strip() or "output == …"
        return f'a test checks with `expect`: `expect {rest}` (`expect fail "code"` for a failure)'
    if typ == "NAME" and _type(prev) == "TEST" and "STRING" in expected:
        return f'a test\'s name is a string: `test "{tok.value}" {{ … }}`'
    if "COMMA" in expected and _reduce_item(vals):
        return _reduce_form(sc, tok)
    if "COMMA" in expected and _loop_round(vals):
        # `loop up to 3 as i { … }`, `loop up to 3 as i from 0 { … }`
        r = vals[-1].value
        m = re.search(r"up\s+to\s+(\S+)\s+as\s+\w+\s*$", sc.text[: tok.start - sc.ob])
        n = m.group(1) if m else "N"
        start = _REDUCE_START.match(sc.text, tok.end - sc.ob) if typ != "LBRACE" else None
        return (
            f"a loop carries a state from round to round: `loop up to {n} as {r}, s = "
            f"{start.group(1) if start else 'start'} {{ … }} until cond else …` (the body's "
            "value is the next state)"
        )
    return None


#: `reduce XS as x` before the offending token, and a start value after a `from` (or `with`,
#: `=`, `starting at`…) that runs up to the body's `{`
_REDUCE_HEAD = re.compile(r"\breduce\s+(.{1,60}?)\s+as\s+([A-Za-z_]\w*)\s*$")
_REDUCE_START = re.compile(
    r"\s*(?:(?:starting\s+)?(?:from|with|at|=|init(?:ial)?)\s+)?([^{}\s][^{}\n]{0,39}?)\s*\{"
)


def _reduce_item(vals: list[Any]) -> bool:
    """Whether the value stack ends ``reduce XS as x`` (the accumulator not named)."""
    if len(vals) < 4 or _type(vals[-1]) != "NAME" or _type(vals[-2]) != "AS":
        return False
    return any(_type(v) == "REDUCE" for v in vals[-5:-2])


def _reduce_form(sc: Scanner, tok: Tok) -> str:
    """``reduce xs as x from 0 { … }`` (a ``from``, ``with``, ``=`` or nothing where the
    accumulator goes) → the form with the accumulator named: ``reduce xs as x, acc = 0 { … }``
    (docs/reference/control.md "reduce")."""
    k = tok.start - sc.ob
    head = _REDUCE_HEAD.search(sc.text[max(0, k - 200) : k])
    xs, x = head.groups() if head else ("xs", "x")
    start = _REDUCE_START.match(sc.text, k if tok.type == "LBRACE" else tok.end - sc.ob)
    init = start.group(1) if start and tok.type != "LBRACE" else "start"
    said = "" if tok.type == "LBRACE" else f" (not `{tok.value}`)"
    return (
        f"a `reduce` names its item, then its accumulator with the accumulator's start "
        f"value{said}: `reduce {xs} as {x}, acc = {init} {{ … }}` — the body reads `acc` and "
        f"`{x}`, and its value is the next `acc`"
    )


def _loop_round(vals: list[Any]) -> bool:
    """Whether the value stack ends ``loop up to N as r`` (the state not named)."""
    if len(vals) < 5 or _type(vals[-1]) != "NAME" or _type(vals[-2]) != "AS":
        return False
    return any(_type(v) == "LOOP" for v in vals[-7:-2]) and any(
        _type(v) == "TO" for v in vals[-6:-2]
    )


#: `} elif c {` of Python, `elsif` of Ruby and Perl, `elseif` of PHP and Lua
_ELIF = re.compile(r"(?:^\s*|\}\s*)(elif|elsif|elseif)\s")


def elif_word(sc: Scanner, tok: Any) -> tuple[str, Span, str] | None:
    """``(elif, its span, its condition)`` when the innermost open ``{`` (or ``tok``) is on a line reading
    ``} elif c {``: the ``elif`` was read as a name and its ``{`` as an object."""
    if not isinstance(tok, Tok):
        return None
    openers = [o for o in sc.stack if o is not tok and o.value == "{"]
    for anchor in ([openers[-1]] if openers else []) + [tok]:
        k = anchor.start - sc.ob
        if not 0 <= k <= len(sc.text):
            continue
        ls = sc.text.rfind("\n", 0, k) + 1
        found = list(_ELIF.finditer(sc.text[ls:k]))
        m = found[-1] if found else None
        if m is None:
            continue
        start = ls + m.start(1)
        column = start - ls + 1
        word = m.group(1)
        cond = sc.text[ls + m.end(1) : k].strip() if anchor is not tok else ""
        return (
            word,
            Span(
                anchor.file,
                anchor.line,
                column,
                anchor.line,
                column + len(word),
                start + sc.ob,
                start + sc.ob + len(word),
            ),
            (cond if cond and len(cond) <= 40 else "c"),
        )
    return None


#: `xs.map(x =>` before a lambda's arrow: the receiver, the method, the parameter
LAMBDA_HEAD = re.compile(
    r"([A-Za-z_][\w.\[\]]*)\.(map|filter|select|where|forEach|each|flatMap)\(\s*\(?\s*"
    r"([A-Za-z_]\w*)\s*\)?\s*$"
)


def lambda_hint(tok: Any, sc: Scanner) -> str:
    """``xs.map(x => x * 2)`` → ``map xs as x { x * 2 }`` (``filter``: ``filter xs as x where
    …``), from the text of the line around the arrow at ``tok``."""
    k = tok.start - sc.ob
    start = sc.text.rfind("\n", 0, k) + 1
    stop = sc.text.find("\n", k)
    m = LAMBDA_HEAD.search(sc.text[start:k])
    if m is None:
        return (
            "there are no lambdas (`x => …`) in `.flow`: `map xs as x { … }` gives a value per "
            "item, `filter xs as x where …` keeps some"
        )
    rest = sc.text[k + 2 : stop if stop >= 0 else len(sc.text)].strip()
    body = rest[:-1].strip() if rest.endswith(")") else "…"
    if len(body) > 60 or not body:
        body = "…"
    xs, method, x = m.groups()
    if method in ("filter", "where"):
        return f"there are no lambdas in `.flow`: write `filter {xs} as {x} where {body}`"
    return f"there are no lambdas in `.flow`: write `map {xs} as {x} {{ {body} }}`"
