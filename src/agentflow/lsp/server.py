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

The editor queries live in :mod:`agentflow.lsp.analysis`; this module is transport only.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from agentflow.compiler.api import check_source
from agentflow.compiler.fmt import FormatError, format_source
from agentflow.compiler.imports import Importer, file_key, read_source
from agentflow.compiler.lowering import LoweringError, lower
from agentflow.compiler.project import generated_modules, project_diagnostics
from agentflow.core.diagnostics import Diagnostic
from agentflow.core.spans import Span
from agentflow.core.version import __version__
from agentflow.errors import PlanLoadError
from agentflow.ir.graph import render
from agentflow.ir.loader import load_plan_data
from agentflow.lsp.analysis import Analysis, analyze
from agentflow.lsp.incremental import IncrementalParser
from agentflow.lsp.positions import LineIndex
from agentflow.lsp.stdio import CheckedStdin, log_to_stderr
from agentflow.lsp.watch import WATCH_INTERVAL_S, FileWatch, config_candidates
from agentflow.lsp.workspace_files import (
    DiskFiles,
    importing_files,
    workspace_roots,
    workspace_symbols,
)
from agentflow.runtime.config_check import config_diagnostics
from agentflow.stdlib import PRELUDE

__all__ = ["FlowLanguageServer", "create_server", "serve_stdio", "DEBOUNCE_S"]

#: default delay between the last change and the check (seconds)
DEBOUNCE_S = float(os.environ.get("FLOWC_LSP_DEBOUNCE_MS", "10")) / 1000.0


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


_log = logging.getLogger(__name__)

#: returned by :meth:`_FlowProtocol.structure_message` for a message already answered/dropped
_HANDLED = object()
#: what a client may send before `initialize` (everything else: -32002 or dropped)
_BEFORE_INIT = frozenset({lsp.INITIALIZE, lsp.EXIT, None})


class _NoDeserializeTraceback(logging.Filter):
    """Drop pygls' "Unable to deserialize message" tracebacks: :class:`_FlowProtocol` answers
    (or logs one line for) such messages itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unable to deserialize message")


class _FlowProtocol(LanguageServerProtocol):
    """pygls' protocol, hardened (JSON-RPC 2.0 §5):

    - a request whose params do not deserialize (negative or oversized positions, wrong
      types, ``params: null``) gets a ``-32602 InvalidParams`` error instead of no reply;
      a malformed notification is dropped with a one-line warning;
    - an expected request error (a :class:`JsonRpcException` raised by a handler, e.g. a
      refused rename) is answered without a traceback on stderr."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rpc_logger = logging.getLogger("pygls.protocol.json_rpc")
        if not any(isinstance(f, _NoDeserializeTraceback) for f in rpc_logger.filters):
            rpc_logger.addFilter(_NoDeserializeTraceback())

    def structure_message(self, data: dict[str, Any]) -> Any:
        if not isinstance(data, dict) or "jsonrpc" not in data:
            return data
        try:
            return super().structure_message(data)
        except Exception:  # noqa: BLE001 - any malformed message is answered as one
            method = data.get("method")
            if "id" in data and "method" in data:
                msg_id = data["id"]
                if isinstance(msg_id, bool) or not isinstance(msg_id, (int, str)):
                    msg_id = None
                err = JsonRpcInvalidParams(f"invalid params for {method!r}")
                self._send_response(msg_id, error=err.to_response_error())
            else:
                _log.warning("dropping a malformed message (method %r)", method)
            return _HANDLED

    def handle_message(self, message: Any) -> None:
        if message is _HANDLED:
            return
        method = getattr(message, "method", None)
        if getattr(self, "_shutdown", False) and method is not None and method != lsp.EXIT:
            # after `shutdown` (pygls' private flag, pinned by tests/lsp/test_lsp_robustness.py)
            # pygls drops every message; LSP 3.17 wants requests answered with InvalidRequest
            msg_id = getattr(message, "id", None)
            if msg_id is not None:
                self._send_response(
                    msg_id,
                    error=JsonRpcInvalidRequest(
                        f"{method!r} after `shutdown`: only `exit` is accepted now"
                    ).to_response_error(),
                )
            return  # a notification after `shutdown` is dropped
        if method == lsp.INITIALIZE:
            self._flow_initialized = True
        elif not getattr(self, "_flow_initialized", False) and method not in _BEFORE_INIT:
            msg_id = getattr(message, "id", None)
            if msg_id is not None:  # a request: JSON-RPC error -32002 (LSP "ServerNotInitialized")
                self._send_response(
                    msg_id,
                    error=JsonRpcServerNotInitialized(
                        f"{method!r} before `initialize`"
                    ).to_response_error(),
                )
            return  # a notification before `initialize` is dropped (LSP 3.17 §initialize)
        super().handle_message(message)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        if not future.cancelled():
            exc = future.exception()
            if isinstance(exc, JsonRpcException):
                self._request_futures.pop(msg_id, None)
                self._send_response(msg_id, error=exc.to_response_error())
                return
            if exc is not None:  # a server bug: -32603 and one log line, never a traceback
                self._request_futures.pop(msg_id, None)
                _log.error("request %r failed: %s: %s", msg_id, type(exc).__name__, exc)
                err = JsonRpcInternalError(f"internal error: {type(exc).__name__}: {exc}")
                self._send_response(msg_id, error=err.to_response_error())
                return
        super()._send_handler_result(future, msg_id=msg_id)


@dataclass(slots=True)
class _DocState:
    """The last analysis of one open document."""

    text: str
    version: int | None
    analysis: Analysis


class FlowLanguageServer(LanguageServer):
    """The `.flow` language server: a pygls ``LanguageServer`` with per-document analyses and a
    debounced checker task per document."""

    def __init__(self) -> None:
        super().__init__("flowc", __version__, protocol_cls=_FlowProtocol)
        self.debounce_s = DEBOUNCE_S
        self.states: dict[str, _DocState] = {}
        self.parsers: dict[str, IncrementalParser] = {}
        self.pending: dict[str, asyncio.Task[None]] = {}
        # Checking runs on worker threads, never on the event loop, one check per document at a
        # time: a huge document keeps its own requests waiting for its check, but no other
        # document's request and no notification.
        self._worker = ThreadPoolExecutor(max_workers=4, thread_name_prefix="flowc-check")
        self._inflight: dict[str, tuple[str, asyncio.Future[Analysis | None]]] = {}
        self._locks: dict[str, threading.Lock] = {}
        #: per document, a number that changes whenever its analyses may no longer be reused:
        #: another text parsed (the incremental parser shifts the spans of the items it reuses,
        #: in place) or a file it reads changed (:meth:`invalidate`)
        self._epoch: dict[str, int] = {}
        self._epoch_lock = threading.Lock()
        #: per document, the files its last analysis imported (directly or not), by path
        self._reads: dict[str, frozenset[Path]] = {}
        #: per document, the ``[gen] python`` modules of its flow.toml (its last analysis)
        self._generated: dict[str, frozenset[Path]] = {}
        #: per document, the flow.toml URI its ``invalid-config`` errors were published on
        self._config_shown: dict[str, str] = {}
        #: the checks of imported files, by path, shared by the documents' checks (a file's
        #: entry is dropped when it changes: :meth:`imported_changed`)
        self.import_cache: dict[Path, Any] = {}
        #: time between two looks at the files the open documents' checks read (seconds; 0:
        #: never — the client's file events only)
        self.watch_s = WATCH_INTERVAL_S
        self.watch = FileWatch()
        self._watch_task: asyncio.Task[None] | None = None
        #: the workspace's `.flow` files on disk and their texts, kept between references,
        #: renames and workspace symbols (forgotten on file events and saves)
        self.disk = DiskFiles()

    # -- helpers -------------------------------------------------------------------------------

    @property
    def encoding(self) -> str:
        enc = self.workspace.position_encoding
        return str(getattr(enc, "value", enc) or "utf-16")

    def document(self, uri: str) -> TextDocument | None:
        """The open document ``uri``, or None: never a file read from disk (pygls'
        ``get_text_document`` would read an unopened URI's file)."""
        if not isinstance(uri, str):
            return None
        # pygls leaves the property unannotated
        documents: dict[str, TextDocument] = self.workspace.text_documents
        return documents.get(unquote(uri))

    def file_of(self, uri: str) -> str:
        return to_fs_path(uri) or uri

    def analyze(self, uri: str, text: str) -> Analysis:
        """Check ``text`` as the document ``uri`` (incremental parse, same result as
        ``flowc check``)."""
        parser = self.parsers.get(uri)
        if parser is None:
            parser = self.parsers[uri] = IncrementalParser(self.file_of(uri))
        for path in config_candidates(parser.file):  # stamped before they are read
            self.watch.baseline(path)
        generated = frozenset(file_key(p) for p in generated_modules(parser.file))
        for path in generated:
            self.watch.baseline(path)
        self._generated[uri] = generated
        start = self._epoch.get(uri, 0)
        a = analyze(text, parser.file, parser, Importer(self.read_imported, self.import_cache))
        with self._epoch_lock:
            now = self._epoch.get(uri, 0) + 1
            self._epoch[uri] = now
            # invalidated while it ran (a file it read changed): not to be reused
            a.epoch = now if now == start + 1 else -1
        imports = a.result.imports
        self._reads[uri] = frozenset(imports.paths.values()) if imports is not None else frozenset()
        # what `flowc check` adds from the project's flow.toml (compiler/project.py)
        extra = project_diagnostics(parser.file, text, a.result)
        if extra:
            a.result.diagnostics = sorted(
                [*a.result.diagnostics, *extra], key=lambda d: d.sort_key()
            )
        return a

    def read_imported(self, path: Path) -> str:
        """The text of an imported file: the open document's, else the file's on disk."""
        doc = self.document(from_fs_path(str(path)) or "")
        if doc is not None:
            return doc.source
        self.watch.baseline(path)  # before reading: a change after the read is a change
        return read_source(path)

    def imported_changed(self, uri: str, delay: float | None = None) -> None:
        """Document ``uri`` changed (opened, edited, saved): its cached check as an imported
        file is dropped, and every open document that imports it (directly or not) is checked
        again."""
        path = file_key(self.file_of(uri))
        Importer(self.read_imported, self.import_cache).forget(path)
        for other in list(self.workspace.text_documents):
            if other == uri:
                continue
            reads = self._reads.get(other)
            # a document not analysed yet is being checked for the first time: it may have
            # read the file before the change, so it is checked again too
            if reads is None or path in reads:
                self.invalidate(other)
                self.schedule(other, delay=delay)

    def invalidate(self, uri: str) -> None:
        """The analyses of ``uri`` made so far — the last one and one under way — read a file
        that changed: none is reused (its text is unchanged, its analysis is not current)."""
        with self._epoch_lock:
            self._epoch[uri] = self._epoch.get(uri, 0) + 1
        self.states.pop(uri, None)
        self._inflight.pop(uri, None)

    def current(self, uri: str, analysis: Analysis) -> bool:
        """Whether ``analysis`` of ``uri`` may be reused: nothing was parsed for ``uri`` since
        (its spans are where they were) and no file it read changed."""
        return analysis.epoch == self._epoch.get(uri, 0)

    # -- files on disk -----------------------------------------------------------------------

    def watched_paths(self) -> set[Path]:
        """The files the open documents' checks read besides their own text: the files they
        import (directly or not) that are not open, where their ``flow.toml`` is or could
        appear (:func:`agentflow.lsp.watch.config_candidates`), and the ``[gen] python``
        modules it lists."""
        out: set[Path] = set()
        for uri in list(self.workspace.text_documents):
            out.update(config_candidates(self.file_of(uri)))
            out.update(self._reads.get(uri, ()))
            out.update(self._generated.get(uri, ()))
        return {p for p in out if self.document(from_fs_path(str(p)) or "") is None}

    def file_changed(self, path: Path) -> None:
        """``path`` changed on disk: a ``flow.toml`` checks every open document again; a
        ``[gen] python`` module, the documents whose flow.toml lists it; a `.flow` file that
        is not open checks the open documents that import it again (an open one is its
        buffer, whatever the disk holds)."""
        if path.name == "flow.toml":
            for uri in list(self.workspace.text_documents):
                self.invalidate(uri)
                self.schedule(uri, delay=0)
            return
        generated = [u for u, mods in self._generated.items() if path in mods]
        for uri in generated:  # a module of [gen] python: its flows' stale check again
            if self.document(uri) is not None:
                self.invalidate(uri)
                self.schedule(uri, delay=0)
        if generated:
            return
        uri = from_fs_path(str(path)) or ""
        if path.suffix == ".flow" and self.document(uri) is None:
            self.imported_changed(uri, delay=0)

    def generated(self, path: Path) -> bool:
        """Whether ``path`` is a ``[gen] python`` module of an open document's flow.toml."""
        return any(path in mods for mods in list(self._generated.values()))

    def look_at_files(self) -> None:
        """One look at :meth:`watched_paths`: each that changed since the last is
        :meth:`file_changed`."""
        for path in self.watch.look(self.watched_paths()):
            self.file_changed(path)

    def start_watching(self) -> None:
        """Look at the watched files every :attr:`watch_s` seconds (none when 0)."""
        if self.watch_s <= 0 or self._watch_task is not None:
            return

        async def loop() -> None:
            while True:
                await asyncio.sleep(self.watch_s)
                try:
                    self.look_at_files()
                except Exception:  # noqa: BLE001 - a look that failed is tried again next time
                    _log.exception("looking at the watched files failed")

        self._watch_task = asyncio.get_running_loop().create_task(loop())

    def _check_job(self, uri: str, text: str, skip_if_stale: bool) -> Analysis | None:
        """Runs on a worker thread: the analysis of ``text`` as ``uri`` (one per document at a
        time: the incremental parser is per document); None when ``skip_if_stale`` and the
        document has changed meanwhile (a newer check publishes)."""
        lock = self._locks.setdefault(uri, threading.Lock())
        with lock:
            if skip_if_stale:
                doc = self.document(uri)
                if doc is None or doc.source != text:
                    return None
            state = self.states.get(uri)
            if state is not None and state.text == text and self.current(uri, state.analysis):
                return state.analysis
            return self.analyze(uri, text)

    def checked(
        self, uri: str, text: str, *, skip_if_stale: bool = False
    ) -> asyncio.Future[Analysis | None]:
        """The analysis of ``text`` as ``uri``, computed on a worker thread (one computation
        shared by every caller waiting for the same text; awaiting it never blocks the loop).
        With ``skip_if_stale`` the result is None when the document changed before its turn."""
        state = self.states.get(uri)
        loop = asyncio.get_running_loop()
        if state is not None and state.text == text and self.current(uri, state.analysis):
            done: asyncio.Future[Analysis | None] = loop.create_future()
            done.set_result(state.analysis)
            return done
        inflight = self._inflight.get(uri)
        if inflight is not None and inflight[0] == text:
            return asyncio.shield(inflight[1])
        fut = loop.run_in_executor(self._worker, self._check_job, uri, text, skip_if_stale)
        self._inflight[uri] = (text, fut)
        version = getattr(self.document(uri), "version", None)

        def finished(f: asyncio.Future[Analysis | None]) -> None:
            if self._inflight.get(uri, (None, None))[1] is f:
                del self._inflight[uri]
            got = None if f.cancelled() or f.exception() is not None else f.result()
            if got is not None and self.current(uri, got):
                current = self.document(uri)
                if current is not None and current.source == text:
                    self.states[uri] = _DocState(text, version, got)

        fut.add_done_callback(finished)
        return asyncio.shield(fut)

    async def analysis_of(self, uri: str, text: str) -> Analysis:
        """The analysis of ``text`` as ``uri`` (see :meth:`checked`), never None."""
        analysis = await self.checked(uri, text)
        if analysis is None:  # a skipped check of the same text: do it for this caller
            loop = asyncio.get_running_loop()
            analysis = await loop.run_in_executor(self._worker, self._check_job, uri, text, False)
        assert analysis is not None
        return analysis

    async def analysis(self, uri: str) -> tuple[Analysis, LineIndex] | None:
        """The analysis of the current text of ``uri`` (re-checked on a worker if stale)."""
        doc = self.document(uri)
        if doc is None:
            return None
        text = doc.source
        analysis = await self.analysis_of(uri, text)
        return analysis, LineIndex(text, self.encoding)

    async def analysis_at(
        self, uri: str, position: lsp.Position
    ) -> tuple[Analysis, LineIndex, int] | None:
        """:meth:`analysis` of ``uri`` and the character offset of ``position`` in its text."""
        got = await self.analysis(uri)
        if got is None:
            return None
        analysis, index = got
        return analysis, index, index.offset(position.line, position.character)

    async def function_uses(
        self, uri: str, name: str, home: str, left_out: list[Path] | None = None
    ) -> list[tuple[str, Analysis, LineIndex, list[Span]]]:
        """The documents besides ``uri`` that name the user function ``name`` declared in the
        file ``home`` — that file's and those importing it, open or on disk in the workspace —
        each with its analysis, line index and the spans naming the function there (calls and
        ``import`` items): what references and a rename of the function reach beyond the
        document asked (``left_out``: :meth:`disk_uses`)."""
        find: Callable[[Analysis], list[Span]] = lambda a: a.calls_of(home, name)  # noqa: E731
        return await self.importer_uses(uri, home, find, name, left_out)

    async def importer_uses(
        self,
        uri: str,
        home: str,
        find: Callable[[Analysis], list[Span]],
        name: str | None = None,
        left_out: list[Path] | None = None,
    ) -> list[tuple[str, Analysis, LineIndex, list[Span]]]:
        """The open documents besides ``uri`` that are the file ``home`` or import it, each
        with its analysis, line index and what ``find`` returns for it, when not empty; with
        ``name`` (the importable name asked about) also the files on disk that are not open:
        :meth:`disk_uses`."""
        path = file_key(home)
        out: list[tuple[str, Analysis, LineIndex, list[Span]]] = []
        for other in list(self.workspace.text_documents):
            if other == uri:
                continue
            reads = self._reads.get(other)  # None: not checked yet, it may import it
            if file_key(self.file_of(other)) != path and reads is not None and path not in reads:
                continue
            got = await self.analysis(other)
            if got is None:
                continue
            analysis, index = got
            spans = find(analysis)
            if spans:
                out.append((other, analysis, index, spans))
        if name is not None:
            loop = asyncio.get_running_loop()
            skipped = [] if left_out is None else left_out
            out.extend(
                await loop.run_in_executor(self._worker, self.disk_uses, home, name, find, skipped)
            )
        return out

    def disk_uses(
        self,
        home: str,
        name: str,
        find: Callable[[Analysis], list[Span]],
        left_out: list[Path],
    ) -> list[tuple[str, Analysis, LineIndex, list[Span]]]:
        """Runs on a worker thread: the `.flow` files on disk that are not open — the file
        ``home`` and the workspace's files whose ``import`` items bring ``name`` from it
        (:func:`agentflow.lsp.workspace_files.importing_files`) — each checked (with the open
        documents' texts for the files it imports) and, when ``find`` finds spans in it, with
        its URI, analysis and line index. A file that does not parse (or cannot be checked) is
        left out — appended to ``left_out``, and one line on the server's log says so."""
        opened = {file_key(self.file_of(u)) for u in list(self.workspace.text_documents)}
        target = file_key(home)
        files: list[tuple[Path, str | None]] = [] if target in opened else [(target, None)]
        files += importing_files(workspace_roots(self.workspace), home, name, self.disk)
        out: list[tuple[str, Analysis, LineIndex, list[Span]]] = []
        for path, text in files:
            if path in opened:
                continue
            try:
                source = self.disk.text(path) if text is None else text
                file = str(path)
                importer = Importer(self.read_imported, self.import_cache)
                analysis = analyze(source, file, IncrementalParser(file), importer)
            except Exception as e:  # noqa: BLE001 - a file that cannot be checked is skipped
                _log.warning("%s left out: %s: %s", path, type(e).__name__, e)
                left_out.append(path)
                continue
            if any(d.code == "syntax-error" for d in analysis.result.diagnostics):
                _log.warning("%s left out: it does not parse", path)
                left_out.append(path)
                continue
            spans = find(analysis)
            if spans:
                index = LineIndex(source, self.encoding)
                out.append((from_fs_path(file) or file, analysis, index, spans))
        return out

    def range_of(self, span: Span, index: LineIndex) -> lsp.Range:
        sl, sc = index.span_position(span.line, span.column)
        el, ec = index.span_position(span.end_line, span.end_column)
        return lsp.Range(lsp.Position(sl, sc), lsp.Position(el, ec))

    def location_of(self, span: Span, uri: str, index: LineIndex) -> lsp.Location:
        if span.file == "<prelude>":
            text = PRELUDE.read_text(encoding="utf-8")
            return lsp.Location(
                from_fs_path(str(PRELUDE)) or "",
                self.range_of(span, LineIndex(text, self.encoding)),
            )
        if span.file != self.file_of(uri) and os.path.isabs(span.file):  # an imported file
            doc = self.document(from_fs_path(span.file) or "")
            try:
                text = doc.source if doc is not None else read_source(span.file)
            except OSError:
                text = ""
            return lsp.Location(
                from_fs_path(span.file) or "", self.range_of(span, LineIndex(text, self.encoding))
            )
        return lsp.Location(uri, self.range_of(span, index))

    def to_lsp_diagnostic(self, d: Diagnostic, uri: str, index: LineIndex) -> lsp.Diagnostic:
        message = d.message + (f"\nhint: {d.hint}" if d.hint else "")
        related = [
            lsp.DiagnosticRelatedInformation(self.location_of(n.span, uri, index), n.message)
            for n in d.notes
            if n.span is not None
        ]
        return lsp.Diagnostic(
            range=self.range_of(d.span, index),
            message=message,
            severity=lsp.DiagnosticSeverity.Error
            if d.severity == "error"
            else lsp.DiagnosticSeverity.Warning,
            code=d.code,
            source="flowc",
            related_information=related or None,
        )

    def quick_fixes(
        self,
        uri: str,
        analysis: Analysis,
        index: LineIndex,
        where: lsp.Range,
        sent: Sequence[lsp.Diagnostic],
    ) -> list[lsp.CodeAction]:
        """``quickfix`` code actions for the diagnostics of the *current* analysis that the
        client sent in the request's context (matched by code and range; the client's object,
        ``data`` included, is echoed back) or that overlap ``where``.  The fixes are
        recomputed from the analysis, never read from a (possibly stale) diagnostic."""
        out: list[lsp.CodeAction] = []
        for d in analysis.result.diagnostics:
            rng = self.range_of(d.span, index)
            match = next((c for c in sent if str(c.code) == d.code and c.range == rng), None)
            if match is None and not _overlaps(rng, where):
                continue
            fixes = analysis.fixes(d)
            if not fixes:
                continue
            diag = match if match is not None else self.to_lsp_diagnostic(d, uri, index)
            for fix in fixes:
                edits = [
                    lsp.TextEdit(
                        lsp.Range(
                            lsp.Position(*index.position(a)), lsp.Position(*index.position(b))
                        ),
                        new,
                    )
                    for a, b, new in fix.edits
                ]
                out.append(
                    lsp.CodeAction(
                        title=fix.title,
                        kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        edit=lsp.WorkspaceEdit(changes={uri: edits}),
                        is_preferred=True if fix.preferred else None,
                    )
                )
        return out

    async def publish(self, uri: str) -> None:
        """Check the current text of ``uri`` (on the worker thread) and publish its
        diagnostics."""
        doc = self.document(uri)
        if doc is None:
            return
        text, version = doc.source, doc.version
        analysis = await self.checked(uri, text, skip_if_stale=True)
        if analysis is None:
            return  # changed before its turn: the newer change's own task publishes
        current = self.document(uri)
        if (
            current is None or current.source != text
        ):  # a newer change arrived meanwhile: its own task publishes
            return
        if self.current(uri, analysis):
            self.states[uri] = _DocState(text, version, analysis)
        index = LineIndex(text, self.encoding)
        diags = [self.to_lsp_diagnostic(d, uri, index) for d in analysis.result.diagnostics]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diags)
        )
        if self.document(uri) is not None:
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(self._worker, config_diagnostics, self.file_of(uri))
            self.show_config(uri, *found)

    def show_config(self, uri: str, diags: list[Diagnostic], texts: dict[str, str]) -> None:
        """Publish ``diags``, the ``invalid-config`` errors of the flow.toml document ``uri``'s
        run reads (``texts``: that file's text by name), on that file — what ``flowc check``
        reports — and clear the ones published for ``uri`` before that are gone (the file
        mended, or another flow.toml read now) unless another open document still shows them."""
        previous = self._config_shown.pop(uri, None)
        if diags:
            name, text = next(iter(texts.items()))
            target = from_fs_path(str(file_key(name))) or name
            index = LineIndex(text, self.encoding)
            self._config_shown[uri] = target
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(
                    uri=target,
                    diagnostics=[self.to_lsp_diagnostic(d, target, index) for d in diags],
                )
            )
        if previous is not None and previous not in self._config_shown.values():
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=previous, diagnostics=[])
            )

    def graph(self, *args: Any) -> dict[str, Any]:
        """The ``agentflow.graph`` command: the open document's graph (:func:`graph_of`)."""
        uri, fmt = _graph_args(args)
        doc = self.document(uri) if isinstance(uri, str) else None
        if doc is None:
            return {"error": f"not an open document: {uri!r}"}
        return graph_of(doc.source, self.file_of(uri), fmt)

    def schedule(self, uri: str, delay: float | None = None) -> None:
        """(Re)start the debounced check of ``uri``.

        Without ``delay`` (a change), the check waits :attr:`debounce_s` only when a check of
        the document is still waiting or running (a burst of changes faster than the checks is
        checked once, at its end); a change to a document with no check under way is checked
        at once."""
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        if delay is None:
            d = self.debounce_s if old is not None else 0.0
        else:
            d = delay

        async def run() -> None:
            try:
                if d > 0:
                    await asyncio.sleep(d)
                await self.publish(uri)
            finally:
                if self.pending.get(uri) is task:
                    self.pending.pop(uri, None)

        task = asyncio.get_running_loop().create_task(run())
        self.pending[uri] = task


def _graph_args(args: tuple[Any, ...]) -> tuple[Any, str]:
    """``(uri, format)`` from ``agentflow.graph``'s arguments (pygls passes the JSON array either
    spread or as one list)."""
    if len(args) == 1 and isinstance(args[0], list):
        args = tuple(args[0])
    uri = args[0] if args else None
    opts = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
    return uri, str(opts.get("format", "mermaid"))


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


def _overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    """Whether two ranges share a position (ends inclusive: a cursor touching a diagnostic
    counts)."""

    def key(p: lsp.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


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
#: ``workspace/executeCommand`` name: ``arguments: [uri, {"format": "mermaid" | "dot"}?]``
GRAPH_COMMAND = "agentflow.graph"


def graph_of(text: str, file: str, fmt: str = "mermaid") -> dict[str, Any]:
    """``{format, text}``: the graph of `.flow` source ``text`` (compiled in memory), or
    ``{error}`` when it has errors or the format is unknown (``flowc graph``'s output)."""
    if fmt not in ("mermaid", "dot"):
        return {"error": f"unknown graph format {fmt!r} (mermaid, dot)"}
    result = check_source(text, file)
    if not result.ok:
        first = result.errors[0]
        return {"error": f"the program has errors: {first.span}: {first.message}"}
    try:
        plan = load_plan_data(lower(result, file=file), file)
    except LoweringError as e:
        return {"error": f"cannot compile: {e.message}"}
    except PlanLoadError as e:
        return {"error": f"cannot compile: {e}"}
    return {"format": fmt, "text": render(plan, fmt)}


def serve_stdio() -> None:
    """Run the language server on stdin/stdout until the client exits; a malformed header is
    one line on stderr and the next message is served (:class:`CheckedStdin`)."""
    log_to_stderr()
    create_server().start_io(stdin=CheckedStdin(sys.stdin.buffer))  # type: ignore[arg-type]
