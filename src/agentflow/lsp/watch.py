"""The files an open document's check depends on besides its own text, and noticing when they
change on disk (docs/reference/programs.md "import", "In an editor"): the files it imports that
are not open in the editor, and the ``flow.toml`` its checks read (the nearest from its
directory upward: :func:`agentflow.core.config_file.find_config`, the rule ``flowc check``
follows — so the places a nearer one would be created are looked at too).

The generated modules the nearest ``flow.toml`` lists under ``[gen] python`` are read by the
``stale-generated-module`` check, and watched the same way
(:func:`agentflow.compiler.project.generated_modules`).

The server looks at them two ways, which end in the same handler: the client's
``workspace/didChangeWatchedFiles`` notifications (registered for ``**/*.flow`` and
``**/flow.toml`` when the client supports dynamic registration), and :class:`FileWatch`, a poll
of those few files' ``(mtime, size)`` (and, for one modified in the last seconds, a digest of
its bytes) every ``watch_interval_ms`` (an imported file may lie
outside the client's workspace, and not every client watches files).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from agentflow.core.config_file import CONFIG_FILENAME, search_start

__all__ = ["RACY_NS", "FileWatch", "Stamp", "WATCH_INTERVAL_S", "config_candidates"]

#: default time between two looks at the watched files (seconds)
WATCH_INTERVAL_S = 0.5

#: a file's stamp: ``(mtime in ns, size in bytes, digest of its bytes or None)``
Stamp = tuple[int, int, bytes | None]

#: what :func:`_stamp` gives for a file that is not there
_MISSING: Stamp = (-1, -1, None)

#: how recent a modification time is "racy" (ns): a second write of the same size within the
#: file system's time granularity (1 s on some, 2 s on FAT) leaves (mtime, size) as they were,
#: so a file modified this recently is stamped with a digest of its bytes too (git's "racy
#: git" rule); an older one is not read
RACY_NS = 3_000_000_000


def _stamp(path: Path, digest: bool = False) -> Stamp:
    """The :data:`Stamp` of ``path``, :data:`_MISSING` when it cannot be read. The digest is
    taken when ``digest`` or when the file was modified within :data:`RACY_NS`."""
    try:
        st = os.stat(path)
        if not digest and not _racy(st.st_mtime_ns):
            return (st.st_mtime_ns, st.st_size, None)
        with open(path, "rb") as f:
            return (st.st_mtime_ns, st.st_size, hashlib.blake2b(f.read(), digest_size=16).digest())
    except OSError:
        return _MISSING


def _racy(mtime_ns: int) -> bool:
    """Whether a file modified at ``mtime_ns`` may be written again without its time changing."""
    return time.time_ns() - mtime_ns < RACY_NS


def _differ(old: Stamp, new: Stamp) -> bool:
    """Whether ``new`` is a change from ``old``: time or size, else both digests when known."""
    if old[:2] != new[:2]:
        return True
    return old[2] is not None and new[2] is not None and old[2] != new[2]


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
    """The last seen :data:`Stamp` of each file a check read; :meth:`look` says which
    changed. A file is stamped *before* a check reads it (:meth:`baseline`), so a change
    between that read and the next look is a change (stamped only at the look, it would be
    the first stamp, not a change). A stamp taken while the file's time was racy
    (:data:`RACY_NS`) holds a digest, and the next look at it digests the file again whatever
    its time: a same-size rewrite in the same tick is a change too. Thread-safe: checks run
    on worker threads."""

    def __init__(self) -> None:
        self.seen: dict[Path, Stamp] = {}
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
            with self._lock:
                before = self.seen.get(path)
            stamp = _stamp(path, digest=before is not None and before[2] is not None)
            kept = stamp if _racy(stamp[0]) else (stamp[0], stamp[1], None)
            with self._lock:
                old = self.seen.get(path)
                self.seen[path] = kept
            if old is not None and _differ(old, stamp):
                changed.append(path)
        return changed

    def note(self, path: Path) -> None:
        """``path`` changed and was handled already (a client's notification): the next look
        does not report it again."""
        with self._lock:
            self.seen[path] = _stamp(path)
