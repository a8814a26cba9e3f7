"""The `.flow` files of the editor's workspace on disk that a rename or a references request of
an importable name (a type, a user function) must reach besides the open documents: the files
under the workspace folders (``workspaceFolders``, else ``rootUri``, given at ``initialize``)
and, without any, those near the declaring file
(:func:`agentflow.compiler.imports.importers_of`) — docs/editors.md.

The walk is bounded (:data:`MAX_FILES` `.flow` files, :data:`MAX_DIRS` directories; hidden
directories, ``node_modules`` and ``__pycache__`` are not entered) and each file is first read
as text: only one whose ``import`` items name the declaring file and the name asked for is
checked (:func:`importing_files`). The same files give the workspace's symbols
(:func:`workspace_symbols`, LSP ``workspace/symbol``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from lsprotocol.types import WorkspaceFolder
from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from agentflow.compiler.imports import file_key, importers_of, read_source

__all__ = [
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
    out: list[Path] = []
    seen: set[Path] = set()
    dirs = 0
    for root in roots:
        for here, subdirs, files in os.walk(root):
            dirs += 1
            if dirs > MAX_DIRS:
                return out
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
                    return out
    return out


def importing_files(
    roots: Iterable[str | os.PathLike[str]], home: str | os.PathLike[str], name: str
) -> list[tuple[Path, str]]:
    """``(path, text)`` of each `.flow` file under ``roots`` (:func:`flow_files`; without roots,
    those near ``home``: :func:`~agentflow.compiler.imports.importers_of`) with an ``import``
    item from the file ``home`` naming ``name`` — found by reading the text, not by checking it
    (the caller checks those few). ``home`` itself is not one of them; a file that cannot be
    read is left out."""
    target = file_key(home)
    word = re.compile(rf"\b{re.escape(name)}\b")
    listed = list(roots)
    candidates = flow_files(listed) if listed else importers_of(target)
    out: list[tuple[Path, str]] = []
    for path in candidates:
        if path == target:
            continue
        try:
            text = read_source(path)
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
    roots: Iterable[str | os.PathLike[str]], opened: dict[Path, str], query: str
) -> list[tuple[Path, str, str, str, int, int]]:
    """``(path, its text, kind, name, start, end offsets of the name)`` of each top-level
    declaration — ``flow``, ``type``/``extern type``, ``extern tool``, ``fn``, ``stage``, ``use
    agent``/``use team`` — whose name matches ``query`` (:func:`_matches`), in the open
    documents (``opened``: their texts by path) and the `.flow` files under ``roots``
    (:func:`flow_files`), at most :data:`MAX_SYMBOLS`. Found by reading each line's start,
    not by parsing: a file being written gives its symbols too."""
    out: list[tuple[Path, str, str, str, int, int]] = []
    files = list(opened) + [p for p in flow_files(roots) if p not in opened]
    for path in files:
        text = opened.get(path)
        if text is None:
            try:
                text = read_source(path)
            except OSError:
                continue
        for kind, pattern in _DECLARATIONS:
            for m in pattern.finditer(text):
                if _matches(query, m.group(1)):
                    out.append((path, text, kind, m.group(1), m.start(1), m.end(1)))
                    if len(out) >= MAX_SYMBOLS:
                        return out
    return out
