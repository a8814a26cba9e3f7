"""The language server on user functions (``fn``: docs/reference/programs.md "User functions"):
hover on a call's or a declaration's name shows the signature and the ``///`` doc, definition
goes from a call to the ``fn``, completion offers the functions in scope (and a body's
parameters), the outline lists them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentflow.compiler.check_types import written_type
from agentflow.compiler.check_user_functions import FnSig
from agentflow.core.spans import Span
from agentflow.grammar import ast
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
    """``(function) rank(s: Severity) -> int`` and the function's ``///`` doc, or None."""
    found = function_under(a, offset)
    if found is None:
        return None
    sig, span = found
    text = locate.fence(f"(function) fn {sig.signature}")
    if sig.decl.span.file != a.module.file:
        text += f"\n\nfrom `{sig.decl.span.file}`"
    return locate.with_doc(text, sig.decl.doc), span


def definition(a: Analysis, offset: int) -> Span | None:
    """The name of the ``fn`` a call under ``offset`` runs, or None."""
    found = function_under(a, offset)
    return found[0].decl.name.span if found is not None else None


def completions(a: Analysis, offset: int) -> list[tuple[str, str, str | None, str | None]]:
    """The user functions in scope as ``(label, kind, detail, doc)`` completion entries, each
    with its signature; inside a body, its parameters with their types."""
    out: list[tuple[str, str, str | None, str | None]] = [
        (name, "function", f"fn {sig.signature}", sig.decl.doc)
        for name, sig in a.result.functions.items()
    ]
    for item in a.module.items:
        if isinstance(item, ast.FnDecl) and _at(offset, item.span):
            for p in item.params:
                out.append((p.name.name, "variable", written_type(p.type), None))
    return out


def outline_detail(a: Analysis, item: ast.FnDecl) -> str:
    """The outline's detail of a ``fn``: its parameters and result as written."""
    shown = ", ".join(f"{p.name.name}: {written_type(p.type)}" for p in item.params)
    return f"({shown}) -> {written_type(item.returns)}"
