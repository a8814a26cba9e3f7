"""The `.flow` files of the editor's workspace on disk that a rename or a references request of
an importable name (a type, a user function) must reach besides the open documents: the files
under the workspace folders (``workspaceFolders``, else ``rootUri``, given at ``initialize``)
and, without any, those near the declaring file
(:func:`agentflow.compiler.imports.importers_of`) — docs/editors.md.

The walk is bounded (:data:`MAX_FILES` `.flow` files, :data:`MAX_DIRS` directories; hidden
directories, ``node_modules`` and ``__pycache__`` are not entered) and each file is first read
as text: only one whose ``import`` items name the declaring file and the name asked for is
checked (:func:`importing_files`). The same files give the workspace's symbols
(:func:`workspace_symbols`, LSP ``workspace/symbol``).

A :class:`DiskFiles` keeps the walk and the texts read between requests (the language server
has one): the walk is taken again when a directory it entered changed (its modification time:
a file added, removed or renamed in it; or too recent to tell) or when told (:meth:`DiskFiles.forget`, on
``workspace/didChangeWatchedFiles`` and ``didSave``); a text is read again when its file's
modification time or size changed, or when it was modified too recently for its time to tell
(:data:`agentflow.lsp.watch.RACY_NS`)."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from lsprotocol.types import WorkspaceFolder
from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from agentflow.compiler.imports import file_key, importers_of, read_source
from agentflow.lsp.watch import RACY_NS

__all__ = [
    "DiskFiles",
    "MAX_DIRS",
    "MAX_FILES",
    "MAX_SYMBOLS",
    "flow_files",
    "importing_files",
    "workspace_roots",
    "workspace_symbols",
]

#: the most `.flow` files :func:`flow_files` lists
MAX_FILES = 5000
#: the most directories :func:`flow_files` enters
MAX_DIRS = 20000
#: directories never entered (besides hidden ones)
_SKIPPED = frozenset({"node_modules", "__pycache__"})

#: an ``import { … } from "PATH"`` item, found without parsing: (names, path)
_IMPORT = re.compile(r'\bimport[ \t]*\{([^}]*)\}\s*from[ \t]+"([^"\n]*)"')


def workspace_roots(workspace: Workspace) -> list[str]:
    """The directories of the client's workspace folders (kept by pygls, with their changes),
    else of its ``rootUri``; empty when it gave neither."""
    folders: dict[str, WorkspaceFolder] = workspace.folders
    roots = [p for p in (to_fs_path(f.uri) for f in folders.values()) if p]
    root: str | None = workspace.root_path
    return roots or ([root] if root else [])


def flow_files(roots: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The `.flow` files under ``roots`` (directories), each once, in walk order (sorted per
    directory), at most :data:`MAX_FILES`, entering at most :data:`MAX_DIRS` directories; an
    unreadable directory is left out."""
    return _walk(roots)[0]


def _walk(roots: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], dict[str, int]]:
    """:func:`flow_files`, and the modification time (ns) of each directory entered."""
    out: list[Path] = []
    seen: set[Path] = set()
    entered: dict[str, int] = {}
    for root in roots:
        for here, subdirs, files in os.walk(root):
            if len(entered) >= MAX_DIRS:
                return out, entered
            entered[here] = _mtime(here)
            subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in _SKIPPED)
            for name in sorted(files):
                if not name.endswith(".flow"):
                    continue
                key = file_key(Path(here) / name)
                if key in seen:
                    continue
                seen.add(key)
                out.append(key)
                if len(out) >= MAX_FILES:
                    return out, entered
    return out, entered


def _mtime(path: str | os.PathLike[str]) -> int:
    """The modification time (ns) of ``path``, -1 when it cannot be read."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


class DiskFiles:
    """The workspace's `.flow` files and their texts, kept between requests (module
    docstring); safe to use from several threads. ``walks`` counts the walks taken."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: roots → (the files of the walk, each directory entered → its modification time)
        self._walks: dict[tuple[str, ...], tuple[list[Path], dict[str, int]]] = {}
        #: path → (modification time ns, size, text)
        self._texts: dict[Path, tuple[int, int, str]] = {}
        self.walks = 0

    def files(self, roots: Iterable[str | os.PathLike[str]]) -> list[Path]:
        """:func:`flow_files` of ``roots``: the last walk's, unless a directory it entered
        changed since, or was modified within :data:`~agentflow.lsp.watch.RACY_NS` (its time
        may not show a second change), or :meth:`forget` was called."""
        key = tuple(os.fspath(r) for r in roots)
        with self._lock:
            kept = self._walks.get(key)
        now = time.time_ns()
        if kept is not None and all(
            _mtime(d) == t and now - t >= RACY_NS for d, t in kept[1].items()
        ):  # no directory changed, none so recently that its time may hide a change
            return list(kept[0])
        found = _walk(key)
        with self._lock:
            self._walks[key] = found
            self.walks += 1
        return list(found[0])

    def text(self, path: Path) -> str:
        """The text of ``path`` (:func:`~agentflow.compiler.imports.read_source`): the one
        read before while its modification time and size are those it had then and it was
        not modified within :data:`~agentflow.lsp.watch.RACY_NS` of that read.  Raises
        ``OSError`` as ``read_source`` does."""
        try:
            st = os.stat(path)
        except OSError:
            with self._lock:
                self._texts.pop(path, None)
            raise
        with self._lock:
            kept = self._texts.get(path)
        if kept is not None and kept[:2] == (st.st_mtime_ns, st.st_size):
            return kept[2]
        text = read_source(path)
        if time.time_ns() - st.st_mtime_ns >= RACY_NS:  # a recent time may hide a rewrite
            with self._lock:
                self._texts[path] = (st.st_mtime_ns, st.st_size, text)
        return text

    def forget(self, path: Path | None = None) -> None:
        """Drop the walks (a file may have come or gone) and the text of ``path`` (every
        text when None)."""
        with self._lock:
            self._walks.clear()
            if path is None:
                self._texts.clear()
            else:
                self._texts.pop(path, None)


def importing_files(
    roots: Iterable[str | os.PathLike[str]],
    home: str | os.PathLike[str],
    name: str,
    disk: DiskFiles | None = None,
) -> list[tuple[Path, str]]:
    """``(path, text)`` of each `.flow` file under ``roots`` (:func:`flow_files`; without roots,
    those near ``home``: :func:`~agentflow.compiler.imports.importers_of`) with an ``import``
    item from the file ``home`` naming ``name`` — found by reading the text, not by checking it
    (the caller checks those few). ``home`` itself is not one of them; a file that cannot be
    read is left out. With ``disk``, the walk and the texts are its (:class:`DiskFiles`)."""
    target = file_key(home)
    word = re.compile(rf"\b{re.escape(name)}\b")
    listed = list(roots)
    if not listed:
        candidates = importers_of(target)
    else:
        candidates = disk.files(listed) if disk is not None else flow_files(listed)
    read = disk.text if disk is not None else read_source
    out: list[tuple[Path, str]] = []
    for path in candidates:
        if path == target:
            continue
        try:
            text = read(path)
        except OSError:
            continue
        if name not in text:
            continue
        if any(
            word.search(names) and "\0" not in written and file_key(path.parent / written) == target
            for names, written in _IMPORT.findall(text)
        ):
            out.append((path, text))
    return out


#: the most symbols :func:`workspace_symbols` gives
MAX_SYMBOLS = 1000

_NAME = r"([A-Za-z_][A-Za-z0-9_]*)"
#: a declaration at the start of a line, by kind (an outline kind of :mod:`.symbols`)
_DECLARATIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("flow", re.compile(rf"^flow[ \t]+{_NAME}", re.M)),
    ("type", re.compile(rf"^(?:extern[ \t]+)?type[ \t]+{_NAME}", re.M)),
    ("tool", re.compile(rf'^extern[ \t]+tool[ \t]+(?:"[^"\n]*"[ \t]+as[ \t]+)?{_NAME}', re.M)),
    ("function", re.compile(rf"^fn[ \t]+{_NAME}", re.M)),
    ("stage", re.compile(rf"^stage[ \t]+{_NAME}", re.M)),
    ("agent", re.compile(rf'^use[ \t]+agent[ \t]+"[^"\n]*"[ \t]+as[ \t]+{_NAME}', re.M)),
    ("team", re.compile(rf'^use[ \t]+team[ \t]+"[^"\n]*"[ \t]+as[ \t]+{_NAME}', re.M)),
)


def _matches(query: str, name: str) -> bool:
    """Whether the characters of ``query`` appear in ``name`` in order, case aside (what
    editors' symbol pickers do: ``tkt`` finds ``Ticket``)."""
    rest = iter(name.lower())
    return all(c in rest for c in query.lower())


def workspace_symbols(
    roots: Iterable[str | os.PathLike[str]],
    opened: dict[Path, str],
    query: str,
    disk: DiskFiles | None = None,
) -> list[tuple[Path, str, str, str, int, int]]:
    """``(path, its text, kind, name, start, end offsets of the name)`` of each top-level
    declaration — ``flow``, ``type``/``extern type``, ``extern tool``, ``fn``, ``stage``, ``use
    agent``/``use team`` — whose name matches ``query`` (:func:`_matches`), in the open
    documents (``opened``: their texts by path) and the `.flow` files under ``roots``
    (:func:`flow_files`), at most :data:`MAX_SYMBOLS`. Found by reading each line's start,
    not by parsing: a file being written gives its symbols too. With ``disk``, the walk and
    the texts are its (:class:`DiskFiles`)."""
    out: list[tuple[Path, str, str, str, int, int]] = []
    walked = disk.files(roots) if disk is not None else flow_files(roots)
    read = disk.text if disk is not None else read_source
    files = list(opened) + [p for p in walked if p not in opened]
    for path in files:
        text = opened.get(path)
        if text is None:
            try:
                text = read(path)
            except OSError:
                continue
        for kind, pattern in _DECLARATIONS:
            for m in pattern.finditer(text):
                if _matches(query, m.group(1)):
                    out.append((path, text, kind, m.group(1), m.start(1), m.end(1)))
                    if len(out) >= MAX_SYMBOLS:
                        return out
    return out
