"""`flowc lsp`: the `.flow` language server (pygls 2, stdio).

Features (LSP 3.17):

- diagnostics on open and change — debounced (:data:`DEBOUNCE_S`, overridable with the
  ``debounce_ms`` initialization option or ``FLOWC_LSP_DEBOUNCE_MS``) while a check of the
  document is under way, else at once, from the same checker as
  ``flowc check`` (:func:`agentflow.compiler.api.check_source`), with notes as related
  information and the hint appended to the message; a result for a stale version is dropped;
- hover, go to definition, find references, completion (trigger characters ``.`` and ``:``),
  signature help in a call's arguments (user and library functions, tools),
  document symbols, workspace symbols (the workspace's `.flow` files on disk too), prepare-rename
  and rename (``let``/loop variables, stages, ``use`` aliases,
  types, user functions and their parameters; the references and rename of a type or user
  function reach the files that import it, open or on disk under the workspace folders:
  :meth:`FlowLanguageServer.disk_uses`), whole-document formatting (``flowc fmt``);
- ``quickfix`` code actions for the diagnostics whose hint states an exact edit ("did you mean
  `X`?", ``tools none``, ``_name``, a missing ``use agent``), see
  :meth:`agentflow.lsp.analysis.Analysis.fixes`;
- imported files and the project's ``flow.toml`` (the one ``flowc check`` reads, with the same
  ``unknown-agent-profile`` and ``stale-generated-module`` checks, and its ``invalid-config``
  errors published on the flow.toml itself): a change on disk checks the
  documents that read them again — from the client's ``workspace/didChangeWatchedFiles`` (registered
  when it supports that) and a poll of those files (``watch_interval_ms``), see
  :mod:`agentflow.lsp.watch`;
- positions in the negotiated ``positionEncoding`` (UTF-16 by default; UTF-8 and UTF-32 when the
  client prefers them), see :mod:`agentflow.lsp.positions`.

The editor queries live in :mod:`agentflow.lsp.analysis`; this module registers the request
handlers (:func:`create_server`) and serves stdio.  The server's state — documents, checks on
worker threads, watched files, publishing — is :mod:`agentflow.lsp.documents`; the hardened
JSON-RPC protocol :mod:`agentflow.lsp.protocol`; the graph command :mod:`agentflow.lsp.graph`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import from_fs_path
from pygls.workspace import TextDocument

from agentflow.compiler.fmt import FormatError, format_source
from agentflow.compiler.imports import file_key
from agentflow.core.spans import Span
from agentflow.lsp.analysis import Analysis
from agentflow.lsp.documents import DEBOUNCE_S, FlowLanguageServer
from agentflow.lsp.graph import GRAPH_COMMAND
from agentflow.lsp.positions import LineIndex
from agentflow.lsp.stdio import CheckedStdin, log_to_stderr
from agentflow.lsp.workspace_files import workspace_roots, workspace_symbols

__all__ = ["FlowLanguageServer", "create_server", "serve_stdio", "DEBOUNCE_S"]


_SYMBOL_KINDS = {
    "flow": lsp.SymbolKind.Module,
    "type": lsp.SymbolKind.Struct,
    "field": lsp.SymbolKind.Field,
    "tool": lsp.SymbolKind.Function,
    "function": lsp.SymbolKind.Function,
    "agent": lsp.SymbolKind.Object,
    "team": lsp.SymbolKind.Object,
    "stage": lsp.SymbolKind.Function,
    "let": lsp.SymbolKind.Variable,
    "test": lsp.SymbolKind.Method,
    "eval": lsp.SymbolKind.Namespace,
    "scorer": lsp.SymbolKind.Property,
}
_COMPLETION_KINDS = {
    "field": lsp.CompletionItemKind.Field,
    "property": lsp.CompletionItemKind.Property,
    "type": lsp.CompletionItemKind.Struct,
    "tool": lsp.CompletionItemKind.Function,
    "function": lsp.CompletionItemKind.Function,
    "keyword": lsp.CompletionItemKind.Keyword,
    "variable": lsp.CompletionItemKind.Variable,
    "stage": lsp.CompletionItemKind.Function,
    "agent": lsp.CompletionItemKind.Module,
}


def _unique_locations(found: list[lsp.Location]) -> list[lsp.Location]:
    """``found`` without repeats, in order."""
    seen: set[tuple[str, int, int, int, int]] = set()
    out: list[lsp.Location] = []
    for loc in found:
        r = loc.range
        key = (loc.uri, r.start.line, r.start.character, r.end.line, r.end.character)
        if key not in seen:
            seen.add(key)
            out.append(loc)
    return out


def create_server() -> FlowLanguageServer:
    """Build the server with every feature registered (not started)."""
    server = FlowLanguageServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: FlowLanguageServer, params: lsp.InitializeParams) -> None:
        opts = params.initialization_options
        if isinstance(opts, dict) and isinstance(opts.get("debounce_ms"), (int, float)):
            ls.debounce_s = max(0.0, float(opts["debounce_ms"]) / 1000.0)
        if isinstance(opts, dict) and isinstance(opts.get("watch_interval_ms"), (int, float)):
            ls.watch_s = max(0.0, float(opts["watch_interval_ms"]) / 1000.0)

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: FlowLanguageServer, params: lsp.InitializedParams) -> None:
        ls.start_watching()
        caps = ls.client_capabilities.workspace
        watched = caps.did_change_watched_files if caps is not None else None
        if watched is not None and watched.dynamic_registration:
            await ls.client_register_capability_async(
                lsp.RegistrationParams(
                    registrations=[
                        lsp.Registration(
                            id="flowc-watched-files",
                            method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=lsp.DidChangeWatchedFilesRegistrationOptions(
                                watchers=[
                                    lsp.FileSystemWatcher(glob_pattern="**/*.flow"),
                                    lsp.FileSystemWatcher(glob_pattern="**/flow.toml"),
                                ]
                            ),
                        )
                    ]
                )
            )

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(
        ls: FlowLanguageServer, params: lsp.DidChangeWatchedFilesParams
    ) -> None:
        for change in params.changes:
            path = file_key(ls.file_of(change.uri))
            if path.suffix == ".flow":
                ls.disk.forget(path)  # a file made, changed or deleted: walk and read again
            if path.suffix == ".flow" or path.name == "flow.toml" or ls.generated(path):
                ls.watch.note(path)
                ls.file_changed(path)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: FlowLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, delay=0)
        ls.imported_changed(params.text_document.uri, delay=0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: FlowLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)
        ls.imported_changed(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: FlowLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.disk.forget(file_key(ls.file_of(params.text_document.uri)))
        ls.schedule(params.text_document.uri, delay=0)
        ls.imported_changed(params.text_document.uri, delay=0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: FlowLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.states.pop(uri, None)
        ls.parsers.pop(uri, None)
        ls._reads.pop(uri, None)
        ls._generated.pop(uri, None)
        ls.show_config(uri, [], {})  # its flow.toml's errors, unless another document shows them
        ls.imported_changed(uri, delay=0)  # importers read the file on disk again
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: FlowLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
        got = await ls.analysis_at(params.text_document.uri, params.position)
        if got is None:
            return None
        analysis, index, offset = got
        found = analysis.hover(offset)
        if found is None:
            return None
        markdown, span = found
        return lsp.Hover(
            contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown),
            range=ls.range_of(span, index),
        )

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    async def definition(
        ls: FlowLanguageServer, params: lsp.DefinitionParams
    ) -> lsp.Location | None:
        uri = params.text_document.uri
        got = await ls.analysis_at(uri, params.position)
        if got is None:
            return None
        analysis, index, offset = got
        span = analysis.definition(offset)
        return ls.location_of(span, uri, index) if span is not None else None

    @server.feature(
        lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[".", ":"])
    )
    async def completion(
        ls: FlowLanguageServer, params: lsp.CompletionParams
    ) -> lsp.CompletionList | None:
        uri = params.text_document.uri
        doc = ls.document(uri)
        if doc is None:
            return None
        text = doc.source
        state = ls.states.get(uri)  # the last check (the text being typed may not parse)
        analysis = state.analysis if state is not None else await ls.analysis_of(uri, text)
        index = LineIndex(text, ls.encoding)
        offset = index.offset(params.position.line, params.position.character)
        items = []
        seen: set[str] = set()
        for c in analysis.completions(offset, text):
            if c.label in seen:
                continue
            seen.add(c.label)
            items.append(
                lsp.CompletionItem(
                    label=c.label,
                    kind=_COMPLETION_KINDS.get(c.kind),
                    detail=c.detail,
                    documentation=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=c.doc)
                    if c.doc
                    else None,
                )
            )
        return lsp.CompletionList(is_incomplete=False, items=items)

    @server.feature(
        lsp.TEXT_DOCUMENT_SIGNATURE_HELP,
        lsp.SignatureHelpOptions(trigger_characters=["(", ","], retrigger_characters=[","]),
    )
    async def signature_help(
        ls: FlowLanguageServer, params: lsp.SignatureHelpParams
    ) -> lsp.SignatureHelp | None:
        """The signature of the user function, library function or tool being called at the
        cursor (:mod:`agentflow.lsp.signature_help`), from the last check (the text being typed
        may not parse)."""
        uri = params.text_document.uri
        doc = ls.document(uri)
        if doc is None:
            return None
        text = doc.source
        state = ls.states.get(uri)
        analysis = state.analysis if state is not None else await ls.analysis_of(uri, text)
        index = LineIndex(text, ls.encoding)
        at = params.position
        hint = analysis.signature_help(index.offset(at.line, at.character), text)
        if hint is None:
            return None
        info = lsp.SignatureInformation(
            label=hint.label,
            documentation=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=hint.doc)
            if hint.doc
            else None,
            parameters=[lsp.ParameterInformation(label=p) for p in hint.params],
            active_parameter=hint.active,
        )
        return lsp.SignatureHelp([info], active_signature=0, active_parameter=hint.active)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def document_symbol(
        ls: FlowLanguageServer, params: lsp.DocumentSymbolParams
    ) -> list[lsp.DocumentSymbol]:
        got = await ls.analysis(params.text_document.uri)
        if got is None:
            return []
        analysis, index = got

        def conv(s: Any) -> lsp.DocumentSymbol:
            return lsp.DocumentSymbol(
                name=s.name,
                kind=_SYMBOL_KINDS.get(s.kind, lsp.SymbolKind.Variable),
                range=ls.range_of(s.span, index),
                selection_range=ls.range_of(s.name_span, index),
                detail=s.detail,
                children=[conv(c) for c in s.children] or None,
            )

        return [conv(s) for s in analysis.symbols()]

    @server.feature(lsp.WORKSPACE_SYMBOL)
    async def workspace_symbol(
        ls: FlowLanguageServer, params: lsp.WorkspaceSymbolParams
    ) -> list[lsp.SymbolInformation]:
        """The declarations matching the query in the open documents and the workspace's
        `.flow` files (:func:`agentflow.lsp.workspace_files.workspace_symbols`)."""
        docs: dict[str, TextDocument] = ls.workspace.text_documents
        opened = {file_key(ls.file_of(u)): d.source for u, d in list(docs.items())}
        loop = asyncio.get_running_loop()
        roots = workspace_roots(ls.workspace)
        found = await loop.run_in_executor(
            ls._worker, workspace_symbols, roots, opened, params.query, ls.disk
        )
        indexes: dict[Path, LineIndex] = {}
        out = []
        for path, text, kind, name, start, end in found:
            index = indexes.setdefault(path, LineIndex(text, ls.encoding))
            where = lsp.Range(
                lsp.Position(*index.position(start)), lsp.Position(*index.position(end))
            )
            uri = from_fs_path(str(path)) or str(path)
            location = lsp.Location(uri, where)
            out.append(lsp.SymbolInformation(location, name, _SYMBOL_KINDS[kind]))
        return out

    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    async def code_lens(ls: FlowLanguageServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        """A "run test" lens on each ``test`` block: the client's ``agentflow.runTest`` command
        (``flowc test FILE -k NAME``) with ``[uri, name]``."""
        got = await ls.analysis(params.text_document.uri)
        if got is None:
            return []
        analysis, index = got
        return [
            lsp.CodeLens(
                range=ls.range_of(span, index),
                command=lsp.Command(
                    title="\u25b6 run test",
                    command=RUN_TEST_COMMAND,
                    arguments=[params.text_document.uri, name],
                ),
            )
            for name, span in analysis.tests()
        ]

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    async def prepare_rename(
        ls: FlowLanguageServer, params: lsp.PrepareRenameParams
    ) -> lsp.PrepareRenamePlaceholder | None:
        got = await ls.analysis_at(params.text_document.uri, params.position)
        if got is None:
            return None
        analysis, index, offset = got
        target = analysis.rename_target(offset)
        if target is None:
            return None
        _kind, name, span = target
        return lsp.PrepareRenamePlaceholder(range=ls.range_of(span, index), placeholder=name)

    @server.feature(lsp.TEXT_DOCUMENT_RENAME, lsp.RenameOptions(prepare_provider=True))
    async def rename(ls: FlowLanguageServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit | None:
        uri = params.text_document.uri
        got = await ls.analysis_at(uri, params.position)
        if got is None:
            return None
        analysis, index, offset = got
        problem = analysis.rename_problem(offset, params.new_name)
        if problem is not None:
            raise JsonRpcInvalidParams(f"cannot rename: {problem}")
        new = params.new_name
        spans = analysis.references_for_rename(offset) or []
        changes = {uri: [lsp.TextEdit(ls.range_of(s, index), new) for s in spans]}
        left_out: list[Path] = []  # importers on disk that do not parse
        name = analysis.own_function(offset)
        if name is not None and new != name:  # the files importing it follow
            home = ls.file_of(uri)
            for other, imported, other_index, found in await ls.function_uses(
                uri, name, home, left_out
            ):
                problem = imported.function_clash(ls.file_of(uri), name, new)
                if problem is not None:
                    raise JsonRpcInvalidParams(f"cannot rename: {problem}")
                changes[other] = [lsp.TextEdit(ls.range_of(s, other_index), new) for s in found]
        type_name = analysis.own_type(offset)
        if type_name is not None and new != type_name:  # its import items (uses without `as`)
            home, old = ls.file_of(uri), type_name
            for other, imported, other_index, found in await ls.importer_uses(
                uri, home, lambda a: a.type_uses_of(home, old), old, left_out
            ):
                problem = imported.type_clash(home, old, new)
                if problem is not None:
                    raise JsonRpcInvalidParams(f"cannot rename: {problem}")
                changes[other] = [lsp.TextEdit(ls.range_of(s, other_index), new) for s in found]
        field = analysis.own_field(offset)
        owner = analysis.field_type_name(field[2]) if field is not None else None
        if field is not None and owner is not None and new != field[0]:
            # a field of a `type` other files import: their uses of it follow
            home, key = ls.file_of(uri), field[2]
            for other, _imported, other_index, found in await ls.importer_uses(
                uri, home, lambda a: a.field_references_of(home, key), owner, left_out
            ):
                changes[other] = [lsp.TextEdit(ls.range_of(s, other_index), new) for s in found]
        if left_out:  # the user is told which files keep the old name
            old_name = name or type_name or (field[0] if field is not None else None)
            shown = ", ".join(f"`{p.name}`" for p in left_out)
            ls.window_show_message(
                lsp.ShowMessageParams(
                    type=lsp.MessageType.Warning,
                    message=f"rename of `{old_name}`: {shown} left out (it does not parse): "
                    f"rename it there once it does",
                )
            )
        return lsp.WorkspaceEdit(changes=changes)

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    async def references(
        ls: FlowLanguageServer, params: lsp.ReferenceParams
    ) -> list[lsp.Location] | None:
        uri = params.text_document.uri
        got = await ls.analysis_at(uri, params.position)
        if got is None:
            return None
        analysis, index, offset = got
        spans = analysis.references(offset, params.context.include_declaration)
        if spans is None:
            return None
        found = [ls.location_of(s, uri, index) for s in spans]
        more: list[tuple[str, Analysis, LineIndex, list[Span]]] = []
        fn = analysis.function_home(offset)
        type_home = analysis.type_home(offset) if fn is None else None
        if fn is not None:  # its calls in its file and in the files importing it
            more = await ls.function_uses(uri, *fn)
        elif type_home is not None:  # its uses in its file and in the files importing it
            tname, thome = type_home
            more = await ls.importer_uses(
                uri,
                thome,
                lambda a: a.type_references_of(thome, tname, params.context.include_declaration),
                tname,
            )
        else:  # a field of a `type` other files import: its uses there
            field = analysis.own_field(offset)
            owner = analysis.field_type_name(field[2]) if field is not None else None
            if field is not None and owner is not None:
                home, key = ls.file_of(uri), field[2]
                more = await ls.importer_uses(
                    uri, home, lambda a: a.field_references_of(home, key), owner
                )
        for other, _imported, other_index, spans_there in more:
            found.extend(ls.location_of(s, other, other_index) for s in spans_there)
        return _unique_locations(found)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
    )
    async def code_action(
        ls: FlowLanguageServer, params: lsp.CodeActionParams
    ) -> list[lsp.CodeAction] | None:
        uri = params.text_document.uri
        got = await ls.analysis(uri)
        if got is None:
            return None
        only = params.context.only
        if only and not any(str(getattr(k, "value", k)) in ("", "quickfix") for k in only):
            return []  # only other kinds (refactor, source…) were asked for
        analysis, index = got
        return ls.quick_fixes(uri, analysis, index, params.range, params.context.diagnostics)

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    async def formatting(
        ls: FlowLanguageServer, params: lsp.DocumentFormattingParams
    ) -> list[lsp.TextEdit] | None:
        uri = params.text_document.uri
        doc = ls.document(uri)
        if doc is None:
            return None
        text = doc.source
        loop = asyncio.get_running_loop()
        try:  # on the worker thread, like checking: a huge document blocks nothing else
            new = await loop.run_in_executor(ls._worker, format_source, text, ls.file_of(uri))
        except FormatError as e:
            if e.span is None:  # not a syntax error (the diagnostics say those): a refusal
                ls.window_show_message(
                    lsp.ShowMessageParams(type=lsp.MessageType.Error, message=e.message)
                )
            return None
        if new == text:
            return []
        index = LineIndex(text, ls.encoding)
        end = index.position(len(text))
        return [lsp.TextEdit(lsp.Range(lsp.Position(0, 0), lsp.Position(*end)), new)]

    @server.command(GRAPH_COMMAND)
    def graph_command(ls: FlowLanguageServer, *args: Any) -> dict[str, Any]:
        return ls.graph(*args)

    return server


#: the client command of the "run test" code lens: ``arguments: [uri, test name]`` (the VS Code
#: extension runs ``flowc test FILE -k NAME`` in a terminal)
RUN_TEST_COMMAND = "agentflow.runTest"


def serve_stdio() -> None:
    """Run the language server on stdin/stdout until the client exits; a malformed header is
    one line on stderr and the next message is served (:class:`CheckedStdin`)."""
    log_to_stderr()
    create_server().start_io(stdin=CheckedStdin(sys.stdin.buffer))  # type: ignore[arg-type]
