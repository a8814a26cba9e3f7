"""Which ``flow.toml`` a command reads: the one rule (docs/reference/configuration.md "Which
flow.toml").

The file given with ``--config`` (``config=`` in the api) wins; else the nearest ``flow.toml``
from the directory of the `.flow` or plan file the command acts on upward (a command given a
directory, ``flowc serve DIR``, searches from that directory), as ruff finds ``pyproject.toml``;
a command that acts on no file (``flowc runs``, ``answer``, ``resume``, ``ask``, ``tools`` …)
searches from the current directory. ``flowc check``, ``flowc run`` and ``flowc test`` of the
same flow therefore read the same file wherever they are started from.

Here, in the bottom layer, so the checker's readers (``flowc check``'s warnings, ``[gen]
python``) and the runtime's :func:`agentflow.runtime.config.load_config` share it.
"""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_FILENAME = "flow.toml"


def search_start(near: str | os.PathLike[str] | None = None) -> Path:
    """The directory the search for ``flow.toml`` starts in: ``near``'s directory when it is a
    file (or a path that is not a directory: a file not written yet searches from where it
    would be), ``near`` itself when it is a directory, the current directory for None."""
    if near is None:
        return Path.cwd()
    path = Path(near)
    try:
        is_dir = path.is_dir()
    except OSError:  # a name too long: not a directory (reading the file says why)
        is_dir = False
    return path if is_dir else path.parent


def find_config(near: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest ``flow.toml`` from :func:`search_start` of ``near`` upward (that directory
    and each parent of it resolved), or None when there is none.  The path is as ``near``
    gave it for its own directory (``examples/flow.toml``, for messages), absolute above it."""
    start = search_start(near)
    try:
        parents = start.resolve().parents
    except (OSError, RuntimeError):  # a symlink loop, a name too long: its spelling's parents
        parents = Path(os.path.abspath(start)).parents
    for directory in (start, *parents):
        candidate = directory / CONFIG_FILENAME
        try:
            if candidate.is_file():
                return candidate
        except OSError:  # a directory whose name is too long holds none we can read
            continue
    return None
