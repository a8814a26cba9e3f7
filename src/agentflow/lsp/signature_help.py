"""Signature help (LSP ``textDocument/signatureHelp``): while the arguments of a call are typed,
the signature of what is called — a user function (``fn``), a library function
(docs/reference/functions.md) or a tool — with the parameter being written highlighted.

The call is found from the scanner's tokens before the cursor, not from the tree: a call being
typed (``rank(input.``) does not parse. Inside a string's ``${…}`` only the interpolation's code
is lexed (the string around it is unterminated before the cursor). The innermost open ``(``
right after a name is the call; the commas at its level count the arguments written, and
``name:`` in the current one (a tool's named argument) names the parameter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentflow.core.functions import FUNCTIONS
from agentflow.grammar.scanner import SynErr, Tok, lex
from agentflow.lsp import locate

if TYPE_CHECKING:
    from agentflow.lsp.analysis import Analysis

__all__ = ["SignatureHint", "signature_help"]

_TRIVIA = frozenset({"COMMENT", "DOC", "BLOCK", "NL"})
_OPEN = frozenset({"LPAR", "LSQB", "LBRACE"})
_CLOSE = frozenset({"RPAR", "RSQB", "RBRACE"})


@dataclass(slots=True)
class SignatureHint:
    """A signature to show: its ``label`` (``rank(s: Severity) -> int``), each parameter's
    label (a substring of ``label``), the index of the parameter being written (None past
    the last) and the doc (Markdown) of what is called."""

    label: str
    params: list[str]
    active: int | None
    doc: str | None


def signature_help(a: Analysis, text: str, offset: int) -> SignatureHint | None:
    """The signature of the call whose arguments ``offset`` of ``text`` is in, or None (not in
    a call's parentheses, an unknown callee, the cursor in a string's text or a comment).
    Inside a string's ``${…}`` the call is looked for in the interpolation's own code
    (:func:`.locate.code_start`), strings nested in its arguments included."""
    start = locate.code_start(text, offset)
    if start is None:
        return None
    try:
        toks = [t for t in lex(text[:offset], pos=start) if t.type not in _TRIVIA]
    except SynErr:
        return None
    found = _open_call(toks)
    if found is None:
        return None
    name, commas, named = found
    got = _signature(a, name)
    if got is None:
        return None
    label, doc = got
    params = _param_labels(label, name)
    if named is not None:
        active = next(
            (i for i, p in enumerate(params) if p.split(":")[0].rstrip("?") == named), None
        )
    else:
        active = commas if commas < len(params) else None
    return SignatureHint(label, params, active, doc)


def _open_call(toks: list[Tok]) -> tuple[str, int, str | None] | None:
    """``(callee, commas before the cursor at its level, name of a named argument being
    written)`` of the innermost call open at the end of ``toks``, or None."""
    depth, commas, named = 0, 0, None
    for i in range(len(toks) - 1, -1, -1):
        t = toks[i]
        if t.type in _CLOSE:
            depth += 1
        elif t.type in _OPEN:
            if depth > 0:
                depth -= 1
                continue
            before = toks[i - 1] if i > 0 else None
            if (
                t.type == "LPAR"
                and before is not None
                and _is_name(str(before.value))
                and (before.type == "NAME" or before.end == t.start)
            ):
                return str(before.value), commas, named
            commas, named = 0, None  # a list, object or group inside the call: go out
        elif depth == 0 and t.type == "COMMA":
            commas += 1
        elif (
            depth == 0
            and t.type == "COLON"
            and commas == 0
            and named is None
            and i > 0
            and _is_name(str(toks[i - 1].value))
        ):
            named = str(toks[i - 1].value)
    return None


def _is_name(word: str) -> bool:
    """Whether ``word`` is spelt like a name."""
    return word.isidentifier()


def _signature(a: Analysis, name: str) -> tuple[str, str | None] | None:
    """``(label, doc)`` of what a call of ``name`` runs in the document of ``a``: its user
    function, else its library function, else its tool."""
    res = a.result
    fn = res.functions.get(name)
    if fn is not None:
        return fn.signature, fn.decl.doc
    spec = FUNCTIONS.get(name)
    if spec is not None:
        return spec.signature, spec.summary
    sig = res.tool_decls.get(name) or res.tools.get(name)
    if sig is not None:
        return locate.tool_text(a, sig), getattr(sig.decl, "doc", None)
    return None


def _param_labels(label: str, name: str) -> list[str]:
    """The parameters of signature ``label`` as written in it (``s: Severity``), split at the
    commas of its parameter list's own level (not inside brackets or a string literal type)."""
    start = label.find("(", label.find(name) + len(name))
    if start < 0:
        return []
    out: list[str] = []
    depth, begin, quoted = 0, start + 1, False
    for i in range(start + 1, len(label)):
        c = label[i]
        if c == '"' and label[i - 1] != "\\":
            quoted = not quoted
        elif quoted:
            continue
        elif c in "([{<":
            depth += 1
        elif c in ")]}>" and not (c == ">" and label[i - 1] == "-"):
            if depth == 0:
                part = label[begin:i].strip()
                if part:
                    out.append(part)
                return out
            depth -= 1
        elif c == "," and depth == 0:
            out.append(label[begin:i].strip())
            begin = i + 1
    return out
