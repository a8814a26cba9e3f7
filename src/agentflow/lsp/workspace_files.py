"""The `.flow` files of the editor's workspace on disk that a rename or a references request of
an importable name (a type, a user function) must reach besides the open documents: the files
under the workspace folders (``workspaceFolders``, else ``rootUri``, given at ``initialize``)
and, without any, those near the declaring file
(:func:`agentflow.compiler.imports.importers_of`) — docs/editors.md.

The walk is bounded (:data:`MAX_FILES` `.flow` files, :data:`MAX_DIRS` directories; hidden
directories, ``node_modules`` and ``__pycache__`` are not entered) and each file is first read
as text: only one whose ``import`` items name the declaring file and the name asked for is
checked (:func:`importing_files`)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from lsprotocol.types import WorkspaceFolder
from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from agentflow.compiler.imports import file_key, importers_of, read_source

__all__ = ["MAX_DIRS", "MAX_FILES", "flow_files", "importing_files", "workspace_roots"]

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
