"""A symlink-swap race against the builtin file tools (issue 16, docs/spec/RUNTIME.md §4).

:func:`race` builds a workspace holding a directory ``d`` and, outside the workspace, a directory
with the same file names plus a marker; a thread swaps ``ws/d`` between the real directory and a
symlink to the outside directory as fast as it can (``renameat2(RENAME_EXCHANGE)`` where the
C library has it, else a rename dance) while one builtin tool runs ``ops`` times through ``d``.
An operation *escapes* when it reads outside content (``OUTSIDE`` in its result), lists or
matches an outside-only name, or changes anything in the outside directory (new names, replaced
inodes, changed bytes: stray temp files count).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentflow.errors import RunError
from agentflow.runtime.tools import builtin
from agentflow.runtime.tools.catalog import ToolContext

TOOLS = ("read_file", "write_file", "edit_file", "list_dir", "grep", "glob")
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@dataclass
class RaceResult:
    """Counts for one tool: operations run, answered, refused (``RunError``), crashed (any other
    exception), escaped, and how many times the swapper exchanged the directory and the link."""

    tool: str
    ops: int
    answered: int
    refused: int
    crashed: int
    escaped: int
    swaps: int
    seconds: float

    def line(self) -> str:
        """One printable line of figures."""
        return (
            f"{self.tool:<10} {self.ops} ops, {self.escaped} outside the workspace "
            f"({self.answered} answered, {self.refused} refused, {self.crashed} crashed; "
            f"{self.swaps} swaps, "
            f"{self.seconds:.1f} s)"
        )


def _exchanger() -> Any:
    """``exchange(a, b)`` swapping two names atomically, or None without renameat2."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]

    def exchange(a: Path, b: Path) -> None:
        if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))

    return exchange


def _fingerprint(directory: Path) -> tuple:
    out = []
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        st = entry.stat(follow_symlinks=False)
        out.append((entry.name, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


def _setup(base: Path, tool: str) -> tuple[Path, Path, Path]:
    ws = base / "ws"
    outside = base / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (ws / "d" / "f.txt").write_text("inside\n")
    (ws / "d" / "only_inside.txt").write_text("inside\n")
    (outside / "f.txt").write_text("OUTSIDE inside\n")
    (outside / "only_outside.txt").write_text("OUTSIDE inside\n")
    swap = ws / ".swap"
    # alternate absolute and relative links: both must be judged, never followed by the kernel
    target = outside if tool in ("read_file", "write_file", "grep") else Path("../outside")
    os.symlink(target, swap)
    return ws, outside, swap


def _call(tool: str, i: int) -> dict[str, Any]:
    return {
        "read_file": {"path": "d/f.txt"},
        "write_file": {"path": f"d/w{i}.txt", "content": "x"},
        "edit_file": {"path": "d/f.txt", "old": "inside", "new": "inside"},
        "list_dir": {"path": "d"},
        "grep": {"pattern": "OUTSIDE|inside", "path": "d"},
        "glob": {"pattern": "d/*"},
    }[tool]


def _escaped(tool: str, result: Any) -> bool:
    text = repr(result)
    return "OUTSIDE" in text or "only_outside" in text


def race(base: Path, tool: str, ops: int) -> RaceResult:
    """Run ``builtin__<tool>`` ``ops`` times through ``d`` while ``d`` is swapped for a symlink
    to a directory outside the workspace; see the module docstring for what counts."""
    ws, outside, swap = _setup(base, tool)
    func = getattr(builtin, tool)  # the plain function (the catalog wraps it as async)
    ctx = ToolContext(workspace=ws, write_scope=[Path("d")] if tool.endswith("_file") else None)
    exchange = _exchanger()
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        d = ws / "d"
        while not stop.is_set():
            if exchange is not None:
                exchange(d, swap)
            else:  # rename dance: the directory moves aside, the link takes its name, and back
                os.rename(d, ws / ".real")
                os.rename(swap, d)
                os.rename(d, swap)
                os.rename(ws / ".real", d)
            swaps += 1

    baseline = _fingerprint(outside)
    answered = refused = crashed = escaped = 0
    thread = threading.Thread(target=swapper, daemon=True)
    started = time.perf_counter()
    thread.start()
    try:
        for i in range(ops):
            try:
                result = func(_call(tool, i), ctx)
            except RunError:
                refused += 1
                result = None
            except Exception:  # noqa: BLE001 - a tool must answer or refuse, never raise anything else
                crashed += 1
                result = None
            else:
                answered += 1
            now = _fingerprint(outside)
            if _escaped(tool, result) or now != baseline:
                escaped += 1
                baseline = now
    finally:
        stop.set()
        thread.join()
    return RaceResult(
        tool, ops, answered, refused, crashed, escaped, swaps, time.perf_counter() - started
    )
