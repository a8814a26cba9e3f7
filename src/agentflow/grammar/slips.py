"""Syntax slips told in the user's terms where the generic "expected …, found …" would speak of
the grammar (the parser read the text as something else): a ``parallel map`` with its ``limit``
before ``map``, a ``parallel`` branch without its name (docs/reference/control.md), the
patterns of a ``match`` (no arm, a pattern that is not a literal, ``||`` or ``|,``, arms
without commas; docs/reference/expressions.md "match"), and a comma before the first item of an
``import`` or a call's arguments or a function's parameters, and a reserved word where a name
is bound (``let if = 1``). Each gives the message, the span of the token the slip is at and a
hint with the fix. :func:`bound_keyword` is a word that starts an expression, bound as a name
earlier and read where the parse stops (``let filter = 1`` … ``filter + 1``): a
``reserved-name`` at the binding."""

from __future__ import annotations

import re
from typing import Any

from agentflow.core.spans import Span
from agentflow.core.vocabulary import EXPRESSION_WORDS, KEYWORD_TERMINALS, RESERVED_WORDS
from agentflow.grammar import ast
from agentflow.grammar.scanner import Scanner, SynErr, Tok

__all__ = ["bound_keyword", "slip_error"]

#: the terminals that start a `match` pattern (`match_alt` of grammar/flow.lark)
_PATTERN_STARTS = {"STRING", "NUMBER", "MINUS", "DURATION", "TRUE", "FALSE", "NULL", "NAME"}
#: the terminals that start an expression and never a pattern
_EXPRESSION_ONLY = {"LSQB", "LPAR", "IF", "MAP", "NOT"}

_ARM = 'a `match` arm is `pattern => value`: `"low" => 1`, `"a" | "b" => 2`, `_ => 0`'
_PATTERN = (
    'a pattern is a literal (`"low"`, `1`, `-1`, `5m`, `true`, `null`), literals joined by '
    '`|` (`"a" | "b"`), or `_` for every other value'
)

Slip = tuple[str, Span, str]


def _type(v: Any) -> str | None:
    return v.type if isinstance(v, Tok) else None


def _match_brace(values: list[Any]) -> int | None:
    """The index on the driver's value stack ``values`` of the ``{`` of the ``match`` whose
    arms the parser is in (``match subject {``), or None."""
    for i in range(len(values) - 1, 1, -1):
        if _type(values[i]) == "LBRACE":
            if _type(values[i - 2]) == "MATCH" and not isinstance(values[i - 1], Tok):
                return i
            return None
    return None


def _in_patterns(expected: set[str], values: list[Any]) -> int | None:
    """The index of the ``match``'s ``{`` when the parser waits for a pattern there."""
    if not _PATTERN_STARTS <= expected or expected & _EXPRESSION_ONLY:
        return None
    return _match_brace(values)


def _pattern_slip(tok: Tok, expected: set[str], values: list[Any], found: str) -> Slip | None:
    """The slips of a ``match``'s patterns: no arm, ``||``, ``|,``, a pattern that is not a
    literal (``[1] =>``)."""
    brace = _in_patterns(expected, values)
    if brace is None:
        return None
    last = _type(values[-1])
    if tok.type == "RBRACE" and brace == len(values) - 1:
        return ("a `match` needs at least one arm", tok.span, _ARM)
    if last == "PIPE" and tok.type == "PIPE":
        return (
            "patterns are joined with one `|`, found `||`",
            tok.span,
            "write `1 | 2 => …`: one `|` joins the patterns of an arm (`.flow` has no `||`; "
            "`or` joins two conditions)",
        )
    if last == "PIPE":
        return (
            f"expected a pattern after `|`, found {found}",
            tok.span,
            "`|` joins two patterns of one arm (`1 | 2 => …`) and `,` ends the arm: write the "
            "pattern after `|`, or drop the `|`",
        )
    return (f"expected a pattern, found {found}", tok.span, f"{_PATTERN}; {_ARM}")


def _previous_line(sc: Scanner, tok: Tok) -> str:
    """The last non-blank line before ``tok``, stripped of blanks and a ``//`` comment."""
    before = sc.text[: tok.start - sc.ob].rstrip()
    line = before.rsplit("\n", 1)[-1]
    return re.sub(r"\s*//.*$", "", line).strip()


def _arms_without_comma(
    tok: Tok, expected: set[str], values: list[Any], sc: Scanner
) -> Slip | None:
    """An arm on the line after the last without a comma between them (docs/decisions.md
    "The arms of a `match` are separated by commas")."""
    if not {"COMMA", "RBRACE"} <= expected:
        return None
    if not tok.bol and not _ARM_AHEAD.match(sc.text, tok.start - sc.ob):
        return None
    brace = _match_brace_before(values, sc)
    if brace is None:
        return None
    if not tok.bol:  # `match s { "a" => "x" _ => "y" }`: two arms on one line
        return (
            "expected `,` between two arms of a `match`",
            tok.span,
            f"put a comma before `{sc.text[tok.start - sc.ob : tok.end - sc.ob]}`: the arms of a `match` are separated by `,` "
            '(`"a" => "x", _ => "y"`), on one line or on lines of their own',
        )
    prev = _previous_line(sc, tok)
    return (
        "expected `,` between two arms of a `match`",
        tok.span,
        f"end the arm before with a comma (`{prev},`): the arms of a `match` are separated by "
        "`,`, on one line or on lines of their own",
    )


#: the rest of a line that is an arm (`_ => "y"`, `"b" | "c" => 2`): a pattern, then `=>`
_ARM_AHEAD = re.compile(r"[^,{}()\[\]\n=]*=>")


def _match_brace_before(values: list[Any], sc: Scanner) -> int | None:
    """The index of the ``{`` of the ``match`` whose arm's value the parser just read (``match
    subject { … pattern => value``), that ``{`` the innermost bracket open, or None."""
    for i in range(len(values) - 1, 1, -1):
        if _type(values[i]) == "FATARROW":
            brace = _match_brace(values[:i])
            if brace is not None and sc.stack and sc.stack[-1] is values[brace]:
                return brace
            return None
    return None


def _parallel_slip(tok: Tok, expected: set[str], values: list[Any], sc: Scanner) -> Slip | None:
    """``parallel limit 2 map xs as x { … }`` (``limit`` goes after ``as x``) and a branch of a
    ``parallel`` block without its name (``parallel { f(…), g(…) }``)."""
    kinds = [_type(v) for v in values[-3:]]
    if (
        kinds[:2] == ["PARALLEL", "LIMIT"]
        and kinds[2] is None
        and tok.type in ("NAME", "MAP")
        and tok.value == "map"
    ):
        limit = values[-2]
        n = sc.text[limit.end - sc.ob : tok.start - sc.ob].strip()
        rest = sc.text[tok.end - sc.ob :].split("\n", 1)[0]
        m = re.match(r"\s*(.+?)\s+as\s+([A-Za-z_][A-Za-z0-9_]*)", rest)
        head = f"{m.group(1)} as {m.group(2)}" if m else "xs as x"
        return (
            "the `limit` of a `parallel map` is written after `as NAME`, before the body",
            limit.span,
            f"write `parallel map {head} limit {n} {{ … }}` (docs/reference/control.md); "
            "`parallel limit N { a: …, b: … }` is the block of named branches",
        )
    if "COLON" not in expected or tok.type == "COLON" or not values:
        return None
    name = values[-1]
    if _type(name) != "NAME":
        return None
    i = len(values) - 2
    if i >= 0 and not isinstance(values[i], Tok):
        i -= 1  # the branches before this one
    if i < 1 or _type(values[i]) != "LBRACE":
        return None
    opener = [_type(v) for v in values[max(0, i - 3) : i]]
    if opener[-1:] != ["PARALLEL"] and opener[-3:-1] != ["PARALLEL", "LIMIT"]:
        return None
    return (
        "a branch of a `parallel` block has a name: `name: expression`",
        name.span,
        "write `parallel { a: f(…), b: g(…) }`: the block's value is an object with one field "
        "per branch, by its name",
    )


def _leading_comma(tok: Tok, values: list[Any]) -> Slip | None:
    """``import { , A }``, ``f(,1)``, ``fn f(, x: int)``: a comma before the first item, with
    the hint a list's ``[,1]`` gets; ``(,1)``, a comma first in parentheses around an
    expression, with what parentheses hold."""
    if tok.type != "COMMA" or len(values) < 2:
        return None
    last, before = _type(values[-1]), values[-2]
    what: tuple[str, str] | None = None
    if last == "LBRACE" and _type(before) == "IMPORT":
        what = ("a name", "imported names")
    elif last in ("LPAR", "LPAR_NL") and isinstance(before, ast.Expr):
        what = ("an argument", "arguments")  # the callee before `(`
    elif last == "LPAR" and _type(before) == "NAME" and len(values) >= 3:
        if _type(values[-3]) == "FN" or (_type(values[-3]) == "TOOL"):
            what = ("a parameter", "parameters")
    elif last in ("LPAR", "LPAR_NL") and _type(before) != "NAME":
        # `let x = (,1)`: parentheses around an expression, after an operator or a keyword
        return (
            "expected an expression before `,`",
            tok.span,
            "parentheses hold one expression, `(a + b)`: remove this comma (`.flow` has no "
            "tuples; several values are a list, `[1, 2]`, or an object, `{ a: 1, b: 2 }`)",
        )
    if what is None:
        return None
    return (
        f"expected {what[0]} before `,`",
        tok.span,
        f"one comma separates two {what[1]}: remove this one",
    )


def _reserved_as_name(tok: Tok, expected: set[str], values: list[Any]) -> Slip | None:
    """``let if = 1``, ``fn in(x: int)``, ``map xs as not { … }``: a reserved word where a name
    is bound, told as the checker's ``reserved-name`` tells a contextual keyword there (the same
    message and hint; still a ``syntax-error``: the parser reads the word as its keyword)."""
    if tok.value not in RESERVED_WORDS or "NAME" not in expected or not values:
        return None
    last = _type(values[-1])
    after_as = last == "COMMA" and len(values) >= 3 and _type(values[-3]) == "AS"
    if last not in ("LET", "FN", "AS") and not after_as:
        return None
    return (
        f"`{tok.value}` is a reserved word, never a name",
        tok.span,
        f"name it otherwise (`my_{tok.value}`); a word of the language is still fine as a "
        f"field or key (`x.{tok.value}`, `{{ {tok.value}: 1 }}`)",
    )


#: the start of an item whose body binds names (``let``, a parameter, a ``map`` item)
_ITEM_START = re.compile(r"^(?:stage|fn|test|eval|flow)\b", re.M)


def _binding_of(word: str, sc: Scanner, use: Tok, called: bool) -> tuple[Span, str] | None:
    """Where ``word`` is last bound as a name before the token ``use``, and what it names
    there: in the item ``use`` is in, ``let word =`` / ``let word:`` and ``as word`` /
    ``as x, word`` (``a variable``) or a parameter of ``fn f(word: T)`` (``a parameter``);
    anywhere before, ``stage word`` (``a stage``: later stages read its value by its name)
    and, when ``use`` is called (``agent(word)``), ``use agent "…" as word`` (``an agent
    alias``). None when it is bound nowhere so."""
    before = use.start - sc.ob
    text = sc.text
    starts = [m.start() for m in _ITEM_START.finditer(text, 0, before)]
    item = starts[-1] if starts else 0
    w = re.escape(word)
    found: list[tuple[int, int, str]] = []
    for m in re.finditer(rf"\blet\s+({w})\s*[=:]|\bas\s+(?:\w+\s*,\s*)?({w})\b", text[:before]):
        g = 1 if m.group(1) is not None else 2
        if m.start() >= item:
            found.append((m.start(g), m.end(g), "a variable"))
    head = re.compile(r"\bfn\s+\w+\s*\(([^()]*)\)").match(text, item)
    if head is not None:
        for m in re.finditer(rf"(?:^|,)\s*({w})\s*:", head.group(1)):
            found.append((head.start(1) + m.start(1), head.start(1) + m.end(1), "a parameter"))
    for m in re.finditer(rf"^stage[ \t]+({w})\b", text[:item], re.M):
        found.append((m.start(1), m.end(1), "a stage"))
    if called:
        for m in re.finditer(rf"\buse\s+(?:agent|team)\s+\"[^\"\n]*\"\s+as\s+({w})\b", text):
            if m.end() <= before:
                found.append((m.start(1), m.end(1), "an agent alias"))
    if not found:
        return None
    i, j, what = max(found)
    ls = text.rfind("\n", 0, i) + 1
    return sc.span_at(i, j, use.line - text.count("\n", i, before), ls), what


def bound_keyword(
    tok: Any, sc: Scanner, values: list[Any] | None, msg: str, notes: list[tuple[str, Span]]
) -> SynErr | None:
    """``let filter = 1`` then ``return filter + 1``: the parse fails (at ``tok``, with the
    message ``msg``) right after a word that starts an expression (``filter``, ``parallel``,
    ``map``) which an earlier ``let``, parameter or ``as`` bound as a name. Told as the
    checker's ``reserved-name`` (which never sees a body that does not parse) at the binding,
    with ``notes`` and a note on where the parser stopped; None otherwise."""
    if not values or not isinstance(values[-1], Tok) or not isinstance(tok, Tok):
        return None
    word = values[-1].value
    if not isinstance(word, str) or KEYWORD_TERMINALS.get(word) != values[-1].type:
        return None
    if word in RESERVED_WORDS or word not in EXPRESSION_WORDS:
        return None  # a reserved word is refused where it is bound (`_reserved_as_name`)
    called = len(values) >= 2 and _type(values[-2]) in ("LPAR", "LPAR_NL")
    bound = _binding_of(word, sc, values[-1], called)
    if bound is None:
        return None
    return SynErr(
        f"`{word}` is a word of the language: where a value is read, `{word}` starts its "
        f"construct, so {bound[1]} of that name could never be read",
        bound[0],
        resume=tok.end - sc.ob,
        depth=len(sc.stack),
        hint=f"name it otherwise (`my_{word}`); a word of the language is still fine as a "
        f"field or key (`x.{word}`, `{{ {word}: 1 }}`)",
        notes=[*notes, (f"the parser stopped here: {msg}", tok.span)],
        code="reserved-name",
    )


def slip_error(
    tok: Any, expected: set[str], sc: Scanner, values: list[Any] | None, found: str
) -> Slip | None:
    """``(message, span, hint)`` for a slip of :mod:`this module's <.slips>` list the parser
    stopped at ``tok`` (expecting the terminals ``expected``; ``values`` the driver's value
    stack; ``found`` the words for ``tok``), or None."""
    if not isinstance(tok, Tok):
        return None
    vals = values or []
    return (
        _reserved_as_name(tok, expected, vals)
        or _leading_comma(tok, vals)
        or _parallel_slip(tok, expected, vals, sc)
        or _pattern_slip(tok, expected, vals, found)
        or _arms_without_comma(tok, expected, vals, sc)
    )
