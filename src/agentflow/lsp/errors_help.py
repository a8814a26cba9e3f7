"""The language server on errors as values (docs/reference/errors-as-values.md): the completions
of ``map … as x [limit n] tolerate N``, ``… catch [on [codes]] [as err] { … }`` and
``try { … } catch …`` — the words where the grammar takes them and the catchable error codes
inside ``on [ ]`` — and the hover text of the built-in types ``Outcome<T>``, ``Error`` and
``ErrorPlace``.

Completion reads the raw scanner tokens before the cursor (``grammar.scanner.lex``, comments and
line breaks left out), as the rest of :mod:`agentflow.lsp.analysis` does; it returns
``(label, kind, detail)`` triples, which the analysis turns into its ``Completion`` items.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentflow.compiler.check_errors import (
    ERROR_OBJECT,
    ERROR_PLACE,
    FailureCause,
    agent_error_codes,
    possible_error_codes,
)
from agentflow.compiler.types import type_str
from agentflow.core.vocabulary import (
    ERROR_CODES,
    ERROR_PLACE_TYPE,
    ERROR_TYPE,
    HARD_STOP_CODES,
    OUTCOME_TYPE,
    STATEMENT_WORDS,
)
from agentflow.grammar import ast

if TYPE_CHECKING:
    from agentflow.core.spans import Span
    from agentflow.lsp.analysis import Analysis

__all__ = [
    "after_expression",
    "code_completions",
    "code_hover",
    "completions",
    "open_on_list",
    "type_summary",
]

Item = tuple[str, str, str | None]
#: A completion item with its documentation: ``(label, kind, detail, doc)``.
DocItem = tuple[str, str, str | None, str | None]

_CLOSERS = {")": "(", "]": "[", "}": "{"}
#: words that start a statement: a map header never reaches back past them
_STATEMENT_STARTS = frozenset({*STATEMENT_WORDS, "else", "try", "catch"})
#: tokens that end an expression (a `catch` may follow them)
_EXPR_END = frozenset(
    {"NAME", "STRING", "NUMBER", "DURATION", "RPAR", "RSQB", "TRUE", "FALSE", "NULL"}
)


def _opener(code: list[Any], close: int) -> int | None:
    """The index of the bracket ``code[close]`` closes, or None when unbalanced."""
    want = _CLOSERS[code[close].value]
    depth = 0
    for i in range(close, -1, -1):
        v = code[i].value
        if v in _CLOSERS:
            depth += 1
        elif v in ("(", "[", "{"):
            depth -= 1
            if depth == 0:
                return i if v == want else None
    return None


def _codes(listed: set[str]) -> list[Item]:
    """The catchable run-time error codes not listed yet, with their summaries."""
    return [
        (code, "constant", entry.summary)
        for code, entry in ERROR_CODES.items()
        if code not in HARD_STOP_CODES and code not in listed
    ]


def stub_fail_codes(code: list[Any]) -> list[Item] | None:
    """The codes to offer after ``fails`` in a test's stub (the cursor follows ``code``'s last
    token), each as a string ``"timeout"`` with its meaning: for ``stub agent|stage`` the codes an
    agent call can fail with (:func:`agentflow.compiler.check_errors.agent_error_codes`, what the
    checker accepts there), for ``stub tool`` every catchable code. None: not after ``fails``."""
    if not code or code[-1].value != "fails":
        return None
    kind = next(
        (code[i + 1].value for i in range(len(code) - 2, -1, -1) if code[i].value == "stub"),
        None,
    )
    if kind in ("agent", "stage"):
        return [(f'"{c}"', "constant", ERROR_CODES[c].summary) for c in agent_error_codes()]
    if kind == "tool":
        return [(f'"{c}"', kind_, detail) for c, kind_, detail in _codes(set())]
    return None


def open_on_list(code: list[Any]) -> set[str] | None:
    """The codes already written when the cursor is inside ``catch on [ … ]``, else None."""
    depth = 0
    for i in range(len(code) - 1, -1, -1):
        v = code[i].value
        if v in _CLOSERS:
            depth += 1
        elif v in ("(", "[", "{"):
            if depth == 0:
                if (
                    v == "["
                    and i >= 2
                    and code[i - 1].value == "on"
                    and code[i - 2].value == "catch"
                ):
                    return {t.value for t in code[i + 1 :] if t.value != ","}
                return None
            depth -= 1
    return None


def _map_header(code: list[Any]) -> tuple[bool, bool] | None:
    """When the cursor is in a map's header after ``as x`` (before its body ``{``): whether it
    has a ``limit`` and a ``tolerate`` already; else None."""
    depth = 0
    for i in range(len(code) - 1, -1, -1):
        v = code[i].value
        if v in _CLOSERS:
            depth += 1
        elif v in ("(", "[", "{"):
            if depth == 0:
                return None
            depth -= 1
            if depth == 0 and v == "{":
                return None  # a finished block: a map's body, or a statement's
        elif depth == 0 and v in _STATEMENT_STARTS:
            return None
        elif depth == 0 and v == "map" and code[i].type != "NAME":
            rest = [t.value for t in code[i + 1 :]]
            if "as" not in rest or rest.index("as") + 1 >= len(rest):
                return None
            return "limit" in rest, "tolerate" in rest
    return None


def completions(code: list[Any]) -> list[Item] | None:
    """What only errors as values may follow the tokens ``code`` (the code before the cursor),
    or None when the context is not theirs:

    - inside ``catch on [ … ]``: the catchable error codes not written yet;
    - after ``catch``: ``on`` and ``as``; after ``catch on [ … ]``: ``as``;
    - in a map's header after ``as x`` or ``limit n``: ``limit`` (when absent) and ``tolerate``.
    """
    if not code:
        return None
    listed = open_on_list(code)
    if listed is not None:
        if code[-1].value in ("[", ","):
            return _codes(listed)
        return []
    prev = code[-1].value
    if prev == "catch":
        return [
            ("on", "keyword", "catch on [code, …]: only these codes"),
            ("as", "keyword", "catch as err: the failure as an Error"),
        ]
    if prev == "]":
        start = _opener(code, len(code) - 1)
        if start is not None and start >= 2 and code[start - 1].value == "on":
            if code[start - 2].value == "catch":
                return [("as", "keyword", "catch … as err: the failure as an Error")]
    header = _map_header(code)
    if header is not None and code[-1].type in _EXPR_END and code[-1].value != "as":
        has_limit, has_tolerate = header
        if has_tolerate:
            return None
        out: list[Item] = []
        if not has_limit:
            out.append(("limit", "keyword", "limit n: at most n items at a time"))
        out.append(("tolerate", "keyword", "tolerate N | P%: yield Outcome<T>[]"))
        return out
    return None


def after_expression(code: list[Any]) -> list[Item]:
    """``catch`` when the tokens ``code`` end a guarded expression or a ``try`` block; empty
    otherwise (a statement's start, after an operator, after a block that is no ``try``)."""
    if not code:
        return []
    last = code[-1]
    item: Item = ("catch", "keyword", "catch [on [codes]] [as err] { fallback }")
    if last.value == "}":
        start = _opener(code, len(code) - 1)
        if start is not None and start >= 1 and code[start - 1].value == "try":
            return [item]
        return []
    if last.type in _EXPR_END and last.value not in ("as", "catch"):
        if len(code) >= 2 and code[-2].value in ("let", "as", ".", "stage", "type", "tool"):
            return []  # a name being declared or a member, not a finished expression
        return [item]
    return []


def type_summary(name: str) -> str | None:
    """The hover text of a built-in type of errors as values, or None for any other name."""
    if name == ERROR_TYPE:
        obj = ERROR_OBJECT
    elif name == ERROR_PLACE_TYPE:
        obj = ERROR_PLACE
    elif name == OUTCOME_TYPE:
        return (
            f"type {OUTCOME_TYPE}<T> {{\n  ok: bool\n  value: T?\n  error: {ERROR_TYPE}?\n}}"
            "  (built-in: a map item's value or error)"
        )
    else:
        return None
    shown = []
    for k, f in obj.fields.items():
        t = "(a run-time error code)" if k == "code" else type_str(f.type)
        shown.append(f"  {k}: {t}")
    body = "\n".join(shown)
    return f"type {name} {{\n{body}\n}}  (built-in)"


# ---------------------------------------------------------------------------------------------
# The codes of `catch on [ … ]` for what is guarded


def _guarding(module: ast.Module, offset: int) -> ast.CatchExpr | ast.TryExpr | None:
    """The innermost ``catch``/``try`` whose ``on [ … ]`` (between ``catch`` and the fallback's
    ``{``) holds ``offset``, or None."""
    best: ast.CatchExpr | ast.TryExpr | None = None
    for n in ast.walk(module):
        if isinstance(n, ast.CatchExpr | ast.TryExpr) and n.keyword_span is not None:
            if n.keyword_span.end <= offset <= n.body.span.start:
                if best is None or n.span.start >= best.span.start:
                    best = n
    return best


def _guarded_node(e: ast.CatchExpr | ast.TryExpr) -> ast.Node:
    return e.block if isinstance(e, ast.TryExpr) else e.guarded


def _line(span: Span) -> str:
    return f" (line {span.line})" if span.line else ""


def code_completions(
    a: Analysis, text: str, start: int, end: int, listed: set[str]
) -> list[DocItem]:
    """The codes to offer at ``start`` (the word being typed runs to ``end``) inside
    ``catch on [ … ]`` of ``text``, not ``listed`` yet: the codes the guarded expression can fail
    with (:func:`agentflow.compiler.check_errors.possible_error_codes`, the analysis behind
    ``impossible-error-code``), most likely first, each with its meaning from the registry
    (``ERROR_CODES``) and why it can occur here as its doc; every catchable code where the
    analysis cannot tell (a sub-plan) or the source around the cursor does not parse."""
    # a placeholder code where the cursor is lets `on [x, ` parse; a half-typed `on [` at the end
    # of a line is closed too (`on [failed] { }`)
    texts: list[str | None] = [None] if a.text == text else []
    texts += [text[:start] + "failed" + text[end:], text[:start] + "failed] { }" + text[end:]]
    for patched in texts:
        analysis = a if patched is None else a.reanalyze(patched)
        catch = _guarding(analysis.module, start)
        if catch is None:
            continue
        possible = possible_error_codes(_guarded_node(catch), analysis.result.functions)
        if possible is None:
            break
        return [
            (c.code, "constant", ERROR_CODES[c.code].summary, c.reason + _line(c.span))
            for c in possible
            if c.code not in listed
        ]
    return [(label, kind, detail, None) for label, kind, detail in _codes(listed)]


def code_hover(a: Analysis, offset: int) -> tuple[str, Span] | None:
    """The hover of an error code written in ``catch on [ … ]`` at ``offset``: its meaning from
    the registry and why the guarded expression can fail with it (or that it cannot, or stops
    the run); None elsewhere and for a name that is no error code (``unknown-error-code``)."""
    for n in ast.walk(a.module):
        if not isinstance(n, ast.CatchExpr | ast.TryExpr) or not n.codes:
            continue
        for ident in n.codes:
            if not ident.span.start <= offset <= ident.span.end or ident.name not in ERROR_CODES:
                continue
            head = f"```flow\n(error code) {ident.name}\n```\n\n{ERROR_CODES[ident.name].summary}"
            if ident.name in HARD_STOP_CODES:
                return f"{head}\n\nIt stops the run: no `catch` handles it.", ident.span
            possible = possible_error_codes(_guarded_node(n), a.result.functions)
            if possible is None:
                why = "Here: what is guarded runs a sub-plan, which may fail with any code."
            else:
                cause: FailureCause | None = next(
                    (c for c in possible if c.code == ident.name), None
                )
                why = (
                    f"Here: {cause.reason}{_line(cause.span)}."
                    if cause is not None
                    else "What is guarded cannot fail with it."
                )
            return f"{head}\n\n{why}", ident.span
    return None
