"""The language server's state (:class:`FlowLanguageServer`): the open documents and their
analyses, checked on worker threads (debounced, a stale result dropped); the files their checks
read besides their text (imported files, ``flow.toml``, ``[gen] python`` modules) and what a
change of one checks again; the uses of a name in the other documents and on disk (references,
rename); spans as LSP ranges, locations and diagnostics, the quick fixes; publishing the
diagnostics (the document's and its flow.toml's).  The request handlers are in
:mod:`agentflow.lsp.server`."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from agentflow.compiler.imports import Importer, file_key, read_source
from agentflow.compiler.project import generated_modules, project_diagnostics
from agentflow.core.diagnostics import Diagnostic
from agentflow.core.spans import Span
from agentflow.core.version import __version__
from agentflow.lsp.analysis import Analysis, analyze
from agentflow.lsp.graph import _graph_args, graph_of
from agentflow.lsp.incremental import IncrementalParser
from agentflow.lsp.positions import LineIndex
from agentflow.lsp.protocol import _FlowProtocol
from agentflow.lsp.watch import WATCH_INTERVAL_S, FileWatch, config_candidates
from agentflow.lsp.workspace_files import DiskFiles, importing_files, workspace_roots
from agentflow.runtime.config_check import config_diagnostics
from agentflow.stdlib import PRELUDE

#: default delay between the last change and the check (seconds)
DEBOUNCE_S = float(os.environ.get("FLOWC_LSP_DEBOUNCE_MS", "10")) / 1000.0

_log = logging.getLogger(__name__)


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


def _overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    """Whether two ranges share a position (ends inclusive: a cursor touching a diagnostic
    counts)."""

    def key(p: lsp.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)
