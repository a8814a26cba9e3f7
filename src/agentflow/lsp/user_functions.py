"""The language server on user functions (``fn``: docs/reference/programs.md "User functions"):
hover on a call's or a declaration's name shows the signature and the ``///`` doc, definition
goes from a call to the ``fn``, references list its calls and ``import`` items, a function
declared in the file is renamed with them, completion offers the functions in scope (and a
body's parameters), the outline lists them. A function's parameters are value bindings,
handled with the others (:mod:`.navigation`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentflow.compiler.check_types import written_type
from agentflow.compiler.check_user_functions import GRAMMAR_WORDS, FnSig
from agentflow.compiler.imports import file_key
from agentflow.core.functions import FUNCTIONS
from agentflow.core.spans import Span
from agentflow.core.vocabulary import PURE_EXPRESSION_WORDS, TOP_LEVEL_WORDS
from agentflow.grammar import ast
from agentflow.grammar.scanner import SynErr, Tok, lex
from agentflow.lsp import locate

if TYPE_CHECKING:
    from agentflow.lsp.analysis import Analysis


def _at(offset: int, s: Span) -> bool:
    return s.start <= offset <= s.end


def function_under(a: Analysis, offset: int) -> tuple[FnSig, Span] | None:
    """The user function whose name is under ``offset`` — in a call, its ``fn`` or an
    ``import`` item — and the span of that name, or None."""
    for node in reversed(locate.node_path(a, offset)):
        if isinstance(node, ast.ImportDecl):  # `import { rank } from "./lib.flow"`
            for name, local in node.pairs():
                for ident in (name, local):
                    if _at(offset, ident.span):
                        sig = a.result.functions.get(local.name)
                        return (sig, ident.span) if sig is not None else None
            return None
        if isinstance(node, ast.UserCall):
            sig = a.result.functions.get(node.name)
            if sig is not None and _at(offset, node.name_span):
                return sig, node.name_span
            return None
        if isinstance(node, ast.FnDecl):
            sig = a.result.functions.get(node.name.name)
            if sig is not None and sig.decl is node and _at(offset, node.name.span):
                return sig, node.name.span
            return None
    return None


def hover(a: Analysis, offset: int) -> tuple[str, Span] | None:
    """``(function) rank(s: Severity) -> int`` and the function's ``///`` doc, or None; for a
    call of a ``fn`` that does not parse, its header as written (:func:`broken_header`)."""
    found = function_under(a, offset)
    if found is None:
        call = next(
            (n for n in reversed(locate.node_path(a, offset)) if isinstance(n, ast.UserCall)),
            None,
        )
        if call is None or not _at(offset, call.name_span):
            return None
        header = broken_header(a, call.name)
        return (locate.fence(f"(function) fn {header}"), call.name_span) if header else None
    sig, span = found
    text = locate.fence(f"(function) fn {sig.signature}")
    if sig.decl.span.file != a.module.file:
        text += f"\n\nfrom `{sig.decl.span.file}`"
    return locate.with_doc(text, sig.decl.doc), span


def broken_header(a: Analysis, name: str) -> str | None:
    """``f(x: int, y: int) -> int``: the header of this file's ``fn name`` whose item does not
    parse (its body has a syntax error), as written up to its ``=``, or None when there is no
    such item or its header does not close."""
    for item in a.module.items:
        if not isinstance(item, ast.ErrorItem) or item.name != name:
            continue
        text = a.text[item.span.start : item.span.end]
        try:
            code = [t for t in lex(text) if t.type not in ("COMMENT", "DOC", "BLOCK", "NL")]
        except SynErr:
            return None
        if len(code) < 3 or code[0].value != "fn" or code[1].value != name:
            continue
        depth = 0
        for t in code[2:]:
            if t.type in ("LPAR", "LSQB", "LBRACE"):
                depth += 1
            elif t.type in ("RPAR", "RSQB", "RBRACE"):
                depth -= 1
            elif depth == 0 and t.type == "EQUALS":
                return " ".join(text[code[1].start : t.start].split())
        return None
    return None


def definition(a: Analysis, offset: int) -> Span | None:
    """The name of the ``fn`` a call under ``offset`` runs, or None."""
    found = function_under(a, offset)
    return found[0].decl.name.span if found is not None else None


def _imported(sig: FnSig, a: Analysis) -> bool:
    return sig.decl.span.file != a.module.file


def references(a: Analysis, offset: int, include_declaration: bool = True) -> list[Span] | None:
    """Every span naming the user function under ``offset`` in this file — its calls (in
    stages, tests and other functions' bodies), its name in an ``import`` item — and, with
    ``include_declaration``, its ``fn``'s name (in the imported file for an imported one); None
    when no function is under ``offset``."""
    found = function_under(a, offset)
    if found is None:
        return None
    sig = found[0]
    uses = _uses(a, sig)
    if include_declaration:
        uses.append(sig.decl.name.span)
    return locate.unique(uses)


def _uses(a: Analysis, sig: FnSig) -> list[Span]:
    """The calls of ``sig`` in the document and its name in the document's ``import`` items."""
    functions = a.result.functions
    uses: list[Span] = []
    for n in ast.walk(a.module):
        if isinstance(n, ast.UserCall) and functions.get(n.name) is sig:
            uses.append(n.name_span)
        elif isinstance(n, ast.ImportDecl):
            uses.extend(local.span for _, local in n.pairs() if functions.get(local.name) is sig)
    return uses


def home(a: Analysis, offset: int) -> tuple[str, str] | None:
    """``(name, file declaring it)`` of the user function under ``offset``, or None."""
    found = function_under(a, offset)
    return (found[0].name, found[0].decl.span.file) if found is not None else None


def rename_target(a: Analysis, offset: int) -> tuple[str, str, Span] | None:
    """``("function", name, span under the cursor)`` for a function declared in this file (an
    imported one is renamed in its own file), or None."""
    found = function_under(a, offset)
    if found is None or _imported(found[0], a):
        return None
    return "function", found[0].name, found[1]


def rename_problem(a: Analysis, offset: int, new: str) -> str | None:
    """Why the user function under ``offset`` cannot be renamed to ``new`` (an identifier, not
    a keyword), or None when it can, or when no function is under ``offset``: it is imported,
    or ``new`` is a library function, a word the grammar reads before ``(``, a tool or another
    user function (docs/reference/programs.md "User functions")."""
    found = function_under(a, offset)
    if found is None:
        return None
    sig = found[0]
    if _imported(sig, a):
        return f"`{sig.name}` is declared in `{sig.decl.span.file}`: rename it there"
    if new == sig.name:
        return None
    if new in GRAMMAR_WORDS:
        return f"`{new}(…)` reads as the language's `{new}`, never as a call of a function"
    if new in FUNCTIONS:
        return f"`{new}` is a library function"
    res = a.result
    if new in res.tool_decls or new in res.tools:
        return f"`{new}` is already the name of a tool"
    other = res.functions.get(new)
    if other is not None:
        where = other.decl.name.span
        return f"a function named `{new}` already exists ({where.file}:{where.line})"
    return None


def calls_in(a: Analysis, declared_in: str, name: str) -> list[Span]:
    """In the document of ``a`` — the file ``declared_in`` or one importing it — every span
    naming the function ``name`` declared there: its calls and ``import`` items, not its
    ``fn``; empty when the document does not know that function. What a rename in
    ``declared_in`` rewrites in an importer (a function is never renamed on import), and what
    references from one of those documents find in the others."""
    sig = a.result.functions.get(name)
    if sig is None or file_key(sig.decl.span.file) != file_key(declared_in):
        return []
    return [s for s in _uses(a, sig) if s.file == a.module.file]


def clash_in(a: Analysis, declared_in: str, name: str, new: str) -> str | None:
    """Why the function ``name`` of ``declared_in`` cannot be renamed ``new`` in the document
    of ``a``, an importer that names it (a function, tool or type named ``new`` there), or
    None."""
    if not calls_in(a, declared_in, name):
        return None
    res = a.result
    where = os.path.basename(a.module.file)
    if new in res.functions:
        return f"`{where}` imports `{name}` and already has a function named `{new}`"
    if new in res.tool_decls or new in res.tools:
        return f"`{where}` imports `{name}` and already has a tool named `{new}`"
    if new in res.type_decls:  # `import { rank, Level }` would name `Level` twice
        return f"`{where}` imports `{name}` and already has a type named `{new}`"
    return None


def completions(a: Analysis) -> list[tuple[str, str, str | None, str | None]]:
    """The user functions in scope as ``(label, kind, detail, doc)`` completion entries, each
    with its signature (a body's parameters: :func:`body_completions`)."""
    return [
        (name, "function", f"fn {sig.signature}", sig.decl.doc)
        for name, sig in a.result.functions.items()
    ]


#: the words a function body may use (docs/reference/programs.md "User functions": pure)
BODY_WORDS = PURE_EXPRESSION_WORDS

#: the tokens an expression may end with: a line starting after one is a new item
_ENDS_VALUE = frozenset({"NAME", "NUMBER", "STRING", "DURATION", "RPAR", "RSQB", "RBRACE"})


@dataclass(slots=True)
class Header:
    """A ``fn`` being written, as its tokens before the cursor give it: its name, its
    parameters as ``(name, type as written)``, and whether the cursor is in its body."""

    name: str
    params: list[tuple[str, str]]
    in_body: bool


def header_at(code: list[Tok], text: str, at_line_start: bool) -> Header | None:
    """The ``fn`` whose header or body the cursor is in, from ``code`` (the scanner's tokens
    before the cursor, line breaks left out), or None: read from the tokens, since a body being
    typed does not parse. A line that starts after a complete value at the top level is a new
    item, not the body's continuation."""
    start, depth = -1, 0
    for i, t in enumerate(code):
        if depth == 0 and t.bol and t.value in TOP_LEVEL_WORDS:
            start = i if t.value == "fn" else -1
        if t.type in ("LPAR", "LSQB", "LBRACE"):
            depth += 1
        elif t.type in ("RPAR", "RSQB", "RBRACE"):
            depth = max(0, depth - 1)
    if start < 0 or len(code) < start + 3 or code[start + 2].type != "LPAR":
        return None
    params: list[tuple[str, str]] = []
    i, depth = start + 3, 1
    while i < len(code) and depth > 0:
        t = code[i]
        if t.type in ("LPAR", "LSQB", "LBRACE"):
            depth += 1
        elif t.type in ("RPAR", "RSQB", "RBRACE"):
            depth -= 1
        elif depth == 1 and t.type == "COLON" and code[i - 1].type in ("NAME", "QMARK"):
            name = code[i - 1] if code[i - 1].type == "NAME" else code[i - 2]
            end = i + 1  # the type runs to the `,` or `)` closing this parameter
            inner = 0
            while end < len(code):
                e = code[end]
                if inner == 0 and e.type in ("COMMA", "RPAR"):
                    break
                inner += e.type in ("LPAR", "LSQB", "LBRACE", "LT")
                inner -= e.type in ("RPAR", "RSQB", "RBRACE", "GT")
                end += 1
            last = code[end - 1].end if end > i + 1 else t.end
            params.append((str(name.value), " ".join(text[t.end : last].split())))
        i += 1
    in_body = depth == 0 and any(t.type == "EQUALS" for t in code[i:])
    if in_body and at_line_start and code[-1].type in _ENDS_VALUE:
        return None  # `fn f(x: int) -> int = x` and a new line: the next item's place
    return Header(str(code[start + 1].value), params, in_body)


def body_completions(a: Analysis, head: Header) -> list[tuple[str, str, str | None, str | None]]:
    """What a function body may use, as ``(label, kind, detail, doc)`` completion entries: its
    parameters with their types, the other user functions with their signatures (it may not
    call itself: ``recursive-function``) and the words of a pure expression; the library's
    functions are the caller's to add."""
    out: list[tuple[str, str, str | None, str | None]] = [
        (name, "variable", written or None, None) for name, written in head.params
    ]
    out.extend(c for c in completions(a) if c[0] != head.name)
    out.extend((w, "keyword", None, None) for w in BODY_WORDS)
    return out


def outline_detail(a: Analysis, item: ast.FnDecl) -> str:
    """The outline's detail of a ``fn``: its parameters and result as written."""
    shown = ", ".join(f"{p.name.name}: {written_type(p.type)}" for p in item.params)
    return f"({shown}) -> {written_type(item.returns)}"
