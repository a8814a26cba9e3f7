"""The files an open document's check depends on besides its own text, and noticing when they
change on disk (docs/reference/programs.md "import", "In an editor"): the files it imports that
are not open in the editor, and the ``flow.toml`` its checks read (the nearest from its
directory upward: :func:`agentflow.core.config_file.find_config`, the rule ``flowc check``
follows — so the places a nearer one would be created are looked at too).

The server looks at them two ways, which end in the same handler: the client's
``workspace/didChangeWatchedFiles`` notifications (registered for ``**/*.flow`` and
``**/flow.toml`` when the client supports dynamic registration), and :class:`FileWatch`, a poll
of those few files' ``(mtime, size)`` every ``watch_interval_ms`` (an imported file may lie
outside the client's workspace, and not every client watches files).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from agentflow.core.config_file import CONFIG_FILENAME, search_start

__all__ = ["FileWatch", "WATCH_INTERVAL_S", "config_candidates"]

#: default time between two looks at the watched files (seconds)
WATCH_INTERVAL_S = 0.5

#: what :func:`_stamp` gives for a file that is not there
_MISSING = (-1, -1)


def _stamp(path: Path) -> tuple[int, int]:
    """``(mtime in ns, size in bytes)`` of ``path``, :data:`_MISSING` when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return _MISSING
    return (st.st_mtime_ns, st.st_size)


def config_candidates(file: str | os.PathLike[str]) -> list[Path]:
    """Where the ``flow.toml`` of the `.flow` file ``file`` is or could appear: ``flow.toml`` in
    its directory and each one above, up to the first that exists (the one its checks read),
    absolute."""
    out = []
    start = search_start(Path(file)).resolve()
    for directory in (start, *start.parents):
        candidate = directory / CONFIG_FILENAME
        out.append(candidate)
        if candidate.is_file():
            break
    return out


class FileWatch:
    """The last seen ``(mtime, size)`` of each file a check read; :meth:`look` says which
    changed. A file is stamped *before* a check reads it (:meth:`baseline`), so a change
    between that read and the next look is a change (stamped only at the look, it would be
    the first stamp, not a change). Thread-safe: checks run on worker threads."""

    def __init__(self) -> None:
        self.seen: dict[Path, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def baseline(self, path: Path) -> None:
        """``path`` is about to be read by a check: stamp it unless it is stamped already."""
        with self._lock:
            if path not in self.seen:
                self.seen[path] = _stamp(path)

    def look(self, paths: Iterable[Path]) -> list[Path]:
        """The files of ``paths`` that changed (written, created, removed) since they were
        stamped; a file never stamped before is stamped, not reported."""
        changed = []
        for path in paths:
            stamp = _stamp(path)
            with self._lock:
                old = self.seen.get(path)
                self.seen[path] = stamp
            if old is not None and old != stamp:
                changed.append(path)
        return changed

    def note(self, path: Path) -> None:
        """``path`` changed and was handled already (a client's notification): the next look
        does not report it again."""
        with self._lock:
            self.seen[path] = _stamp(path)
