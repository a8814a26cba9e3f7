"""Editor queries over one checked `.flow` document, independent of the LSP transport.

:class:`Analysis` wraps the source text and the :class:`~agentflow.compiler.checker.CheckResult`
of the *same* checker ``flowc check`` runs, and answers in code-point offsets and
:class:`~agentflow.core.spans.Span` values (the server converts them to LSP positions).  It is a
facade: each query is one line handing the analysis to the module of its feature.

- :meth:`Analysis.node_path` — the chain of AST nodes under an offset (:mod:`.locate`, with the
  lookups every feature shares);
- :meth:`Analysis.hover` — Markdown: kind, name and type of what is under the cursor, plus its
  doc comment (``///``) (:mod:`.hover`);
- :meth:`Analysis.definition` — where a name, type, tool, tool parameter, field, stage, agent or
  team is declared; :meth:`Analysis.references` — every span naming the same thing;
  :meth:`Analysis.references_for_rename` / :meth:`Analysis.rename_problem` — every span to
  rewrite when renaming a ``let`` (or loop variable), a stage, a ``use`` alias, a type, a user
  function or its parameter, and why a rename must be refused (:mod:`.navigation`); a user
  function's uses in a document that imports it (:meth:`Analysis.calls_of`, for the server's
  edits of the other open documents: :mod:`.user_functions`);
- :meth:`Analysis.fixes` — the quick fixes a diagnostic's hint states exactly (:mod:`.fixes`);
- :meth:`Analysis.completions` — context-sensitive completion items (docs/spec/LANGUAGE.md
  §2–8) (:mod:`.completion`);
- :meth:`Analysis.signature_help` — the signature of the call being typed (:mod:`.signature_help`);
- :meth:`Analysis.symbols` — the document outline (flow, types with fields, tools, uses, tests,
  stages) (:mod:`.symbols`).
"""

from __future__ import annotations

from typing import Any

from agentflow.compiler.api import check_source
from agentflow.compiler.checker import CheckResult, ToolSig
from agentflow.compiler.division_comments import division_comments
from agentflow.compiler.imports import Importer, check_parsed
from agentflow.core.diagnostics import Diagnostic
from agentflow.core.spans import Span
from agentflow.grammar import ast
from agentflow.lsp import (
    completion,
    fixes,
    hover,
    locate,
    navigation,
    signature_help,
    symbols,
    user_functions,
)
from agentflow.lsp.completion import Completion
from agentflow.lsp.fixes import Fix
from agentflow.lsp.navigation import IDENT_RE
from agentflow.lsp.signature_help import SignatureHint
from agentflow.lsp.symbols import DocSymbol

__all__ = ["Analysis", "Completion", "DocSymbol", "Fix", "analyze", "IDENT_RE"]


class Analysis:
    """Queries over ``text`` and its :class:`CheckResult` (see the module docstring)."""

    def __init__(self, text: str, result: CheckResult) -> None:
        self.text = text
        self.result = result
        self.module = result.module
        #: line-start offsets of the ``///`` lines, found on the first doc lookup
        self.doc_lines: set[int] | None = None
        #: the language server's epoch of its document when this analysis was made (it may be
        #: reused while the epoch is unchanged: ``FlowLanguageServer.current``)
        self.epoch = 0

    def reanalyze(self, text: str) -> Analysis:
        """A fresh analysis of ``text`` as the same file (an edited or patched version)."""
        return analyze(text, self.module.file)

    # -- shared lookups (locate) -----------------------------------------------------------------

    def node_path(self, offset: int) -> list[ast.Node]:
        """The nodes whose span contains ``offset`` (end inclusive), outermost first."""
        return locate.node_path(self, offset)

    def type_decls(self) -> dict[str, ast.TypeDecl | ast.ExternType]:
        """Declared type names → their first declaration."""
        return locate.type_decls(self)

    def doc_before(self, span: Span) -> str | None:
        """The ``///`` lines directly above the line of ``span``, joined."""
        return locate.doc_before(self, span)

    def type_summary(self, name: str) -> str:
        """``type N { f: T … }`` / ``type N = T`` / ``extern type N`` for a declared type."""
        return locate.type_summary(self, name)

    def tool_text(self, sig: ToolSig) -> str:
        """The tool's signature as declared (aliases unexpanded), else as resolved."""
        return locate.tool_text(self, sig)

    # -- features ------------------------------------------------------------------------------

    def hover(self, offset: int) -> tuple[str, Span] | None:
        """Markdown for what is under ``offset`` and the span it describes, or None."""
        return hover.hover(self, offset)

    def definition(self, offset: int) -> Span | None:
        """The span of the declaration of what is under ``offset`` (its name), or None."""
        return navigation.definition(self, offset)

    def references(self, offset: int, include_declaration: bool = True) -> list[Span] | None:
        """Every span naming what is under ``offset``, in source order, or None."""
        return navigation.references(self, offset, include_declaration)

    def rename_target(self, offset: int) -> tuple[str, str, Span] | None:
        """``(kind, name, span under the cursor)`` when a rename is possible there."""
        return navigation.rename_target(self, offset)

    def references_for_rename(self, offset: int) -> list[Span] | None:
        """Every span a rename of what is under ``offset`` rewrites, or None."""
        return navigation.references_for_rename(self, offset)

    def rename_problem(self, offset: int, new: str) -> str | None:
        """Why renaming what is under ``offset`` to ``new`` must be refused, or None."""
        return navigation.rename_problem(self, offset, new)

    def own_function(self, offset: int) -> str | None:
        """The name of the user function under ``offset`` when this file declares it (its
        importers name it too), else None."""
        target = user_functions.rename_target(self, offset)
        return target[1] if target is not None else None

    def function_home(self, offset: int) -> tuple[str, str] | None:
        """``(name, file declaring it)`` of the user function under ``offset``, or None."""
        return user_functions.home(self, offset)

    def calls_of(self, declared_in: str, name: str) -> list[Span]:
        """In this document (``declared_in`` or an importer of it): the spans naming the
        function ``name`` declared there (calls and ``import`` items, not its ``fn``)."""
        return user_functions.calls_in(self, declared_in, name)

    def function_clash(self, declared_in: str, name: str, new: str) -> str | None:
        """Why this document, importing the function ``name`` of ``declared_in``, refuses its
        rename to ``new``, or None."""
        return user_functions.clash_in(self, declared_in, name, new)

    def own_type(self, offset: int) -> str | None:
        """The name of the type under ``offset`` when this file declares it, else None."""
        return navigation.own_type(self, offset)

    def type_uses_of(self, declared_in: str, name: str) -> list[Span]:
        """In this document, an importer of ``declared_in``: the spans a rename of its type
        ``name`` rewrites (``import`` items, and uses where it is imported without ``as``)."""
        return navigation.type_uses_in(self, declared_in, name)

    def type_home(self, offset: int) -> tuple[str, str] | None:
        """``(name in its file, file declaring it)`` of the declared type under ``offset``."""
        return navigation.type_home(self, offset)

    def type_references_of(
        self, declared_in: str, name: str, include_declaration: bool = True
    ) -> list[Span]:
        """In this document (``declared_in`` or an importer of it): the spans naming its type
        ``name`` (references from another document)."""
        return navigation.type_references_in(self, declared_in, name, include_declaration)

    def type_clash(self, declared_in: str, name: str, new: str) -> str | None:
        """Why this document, importing the type ``name`` of ``declared_in``, refuses its
        rename to ``new``, or None."""
        return navigation.type_clash_in(self, declared_in, name, new)

    def own_field(self, offset: int) -> tuple[str, Span, tuple[str, int, int]] | None:
        """``(name, span, key of its declaration)`` of the field under ``offset`` when this
        file declares it, else None."""
        return navigation.own_field(self, offset)

    def field_type_name(self, key: tuple[str, int, int]) -> str | None:
        """The name of the ``type`` of this file declaring the field at ``key`` (what other
        files import to use it), None for an inline object type or an unknown key."""
        home = navigation.field_home(self, key)
        return home[1] if home is not None else None

    def field_references_of(self, declared_in: str, key: tuple[str, int, int]) -> list[Span]:
        """In this document (``declared_in`` or an importer of it): the uses of the field of
        ``declared_in`` declared at ``key`` (a rename's or references' edits elsewhere)."""
        return navigation.field_references_in(self, declared_in, key)

    def _semantic_change(self, kind: str, old: str, new: str, spans: list[Span]) -> str | None:
        return navigation.semantic_change(self, kind, old, new, spans)

    def fixes(self, d: Diagnostic) -> list[Fix]:
        """The mechanical edits the hint of diagnostic ``d`` (one of this analysis') states."""
        return fixes.fixes(self, d)

    def symbols(self) -> list[DocSymbol]:
        """The document outline in source order."""
        return symbols.symbols(self)

    def tests(self) -> list[tuple[str, Span]]:
        """``(name, span of the name)`` of every ``test`` block, in source order."""
        return symbols.tests(self)

    def signature_help(self, offset: int, text: str | None = None) -> SignatureHint | None:
        """The signature of the call whose arguments ``offset`` of ``text`` (default: the
        analysed text) is in, with the parameter being written, or None."""
        return signature_help.signature_help(self, self.text if text is None else text, offset)

    def completions(self, offset: int, text: str | None = None) -> list[Completion]:
        """Completion items at ``offset`` of ``text`` (default: the analysed text)."""
        return completion.completions(self, offset, text)


def analyze(text: str, file: str, parser: Any = None, importer: Importer | None = None) -> Analysis:
    """Check ``text`` with :func:`agentflow.compiler.api.check_source` and wrap the result.

    With ``parser`` (an :class:`agentflow.lsp.incremental.IncrementalParser` for this
    document), parsing reuses the unchanged items of the previous version and checking the
    stage checks nothing can have changed (its :class:`~agentflow.compiler.check_memo.StageMemo`);
    the result is the same. ``importer`` reads the files the document imports (the server's
    reads open documents' texts and keeps the checks of unchanged files)."""
    if parser is None:
        return Analysis(text, check_source(text, file))
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        module, diags = parser.parse(text)
        parser.memo.text = text
        diags = diags + division_comments(text, file)
        return Analysis(text, check_parsed(module, diags, importer, memo=parser.memo))
    finally:
        if was_enabled:
            gc.enable()
