"""Workspace-confined file access through directory descriptors (docs/spec/RUNTIME.md §4).

Every path the file tools touch is resolved *beneath* the workspace root one component at a time,
starting from a descriptor of the root and opening each directory with
``O_NOFOLLOW | O_DIRECTORY`` relative to the descriptor of its parent. The kernel never follows a
symbolic link on our behalf: when a component is a link, its text is read (``readlinkat``) and
spliced into the remaining components, and ``..`` pops the directory stack this module keeps, so a
link or ``..`` can never climb above the root. Because every step is relative to a descriptor held
open, swapping a directory for a symlink at any moment (the classic check-then-use race) cannot
redirect an access outside the workspace: the swapped-in link is read and judged like any other.

Links are still usable inside the workspace (a relative link, or an absolute one whose text lies
under the workspace path, resolves to the place it names); a link that leads out, dangles past
the workspace or loops is refused. A plain path walk (rather than Linux ``openat2`` with
``RESOLVE_BENEATH``) is used on every platform so that behaviour is the same everywhere: openat2
refuses absolute links outright and is not available on macOS.

Errors are :class:`Escape` (the path leads outside the workspace), :class:`FileNotFoundError`,
:class:`NotADirectoryError` or other :class:`OSError` from the system calls; callers turn them into
tool errors. All descriptors are ``O_CLOEXEC``; the caller owns (and closes) the ones returned.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

#: Symbolic links followed while resolving one path (Linux's own limit is 40).
MAX_LINK_HOPS = 40
#: Times one component is retried when it changes between two system calls (a concurrent swap).
MAX_RACE_RETRIES = 1000

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_OPEN_FLAGS = (
    os.O_RDONLY
    | os.O_NOFOLLOW
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO opens at once instead of waiting for a writer
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
#: errno values ``open(O_NOFOLLOW)`` reports for a symbolic link (Linux: ELOOP, or ENOTDIR with
#: O_DIRECTORY; FreeBSD: EMLINK).
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.ENOTDIR, errno.EMLINK})


class Guarded(OSError):
    """The path is a file the process itself holds open through SQLite (the durable runs
    database, its ``-wal``/``-shm``/``-journal``, a run's lock): never opened or replaced."""

    def __init__(self, what: str):
        super().__init__(errno.EACCES, what)
        self.what = what


#: (directory, the names guarded in it or None for all, what they are): see :func:`guard`
_GUARDED: list[tuple[str, frozenset[str] | None, str]] = []


def guard(directory: str | os.PathLike[str], names: Iterable[str] | None, what: str) -> None:
    """Never open (read, grep) or replace (write, edit) the files ``names`` of ``directory``
    (None: every file in it) through this module, in this process.

    Why: a process's POSIX record locks on a file are all dropped when *any* descriptor of
    that file is closed by the process.  SQLite holds such locks on its database and on the
    WAL index (``-shm``, which it also maps into memory); a file tool of the same process that
    opened and closed the ``-shm`` (a ``read_file``, a ``grep`` over the workspace) would drop
    them, and the next process to open the database, seeing no holder, truncates the ``-shm``
    under the mapping: SIGBUS (docs/decisions.md "The durable database's files")."""
    entry = (os.path.abspath(os.fspath(directory)), frozenset(names) if names else None, what)
    if entry not in _GUARDED:
        _GUARDED.append(entry)


def unguard(directory: str | os.PathLike[str]) -> None:
    """Forget the guards of ``directory`` (its database was closed in this process)."""
    where = os.path.abspath(os.fspath(directory))
    _GUARDED[:] = [g for g in _GUARDED if g[0] != where]


def guarded(dir_fd: int, name: str) -> str | None:
    """What ``name`` in the directory ``dir_fd`` is when it is guarded (:func:`guard`), else
    None (directories compared by device and inode: links and other spellings included)."""
    if not _GUARDED:
        return None
    try:
        here = os.fstat(dir_fd)
    except OSError:
        return None
    for directory, names, what in _GUARDED:
        if names is not None and name not in names:
            continue
        try:
            there = os.stat(directory)
        except OSError:
            continue
        if (there.st_dev, there.st_ino) == (here.st_dev, here.st_ino):
            return what
    return None


class Escape(Exception):
    """The path leads outside the workspace (``..`` above the root, a link pointing out)."""


class TooManyLinks(OSError):
    """More than :data:`MAX_LINK_HOPS` symbolic links (a loop), or a path that keeps changing."""


@dataclass
class Workspace:
    """An open workspace root: ``root`` the absolute path as given, ``real`` its canonical path,
    ``fd`` a descriptor of the root directory (closed by :meth:`close` / the ``with`` block)."""

    root: PurePosixPath
    real: PurePosixPath
    fd: int

    def close(self) -> None:
        """Close the root descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def relative_parts(self, path: str) -> tuple[str, ...]:
        """The components of ``path`` relative to the root, unresolved (``..`` and links kept).

        ``path`` is workspace-relative, or absolute under the workspace (as given or canonical),
        or ``~…`` (expanded, then absolute). Raises :class:`Escape` for an absolute path elsewhere
        and ``ValueError`` for a NUL character.
        """
        if "\x00" in path:
            raise ValueError("path contains a NUL character")
        if path.startswith("~"):
            path = os.path.expanduser(path)
        given = PurePosixPath(path or ".")
        if not given.is_absolute():
            return given.parts
        for base in (self.root, self.real):
            n = len(base.parts)
            if given.parts[:n] == base.parts:
                return given.parts[n:]
        raise Escape(path)


def open_workspace(path: str | os.PathLike[str]) -> Workspace:
    """Open the workspace root ``path`` (following links in the root's own path: the user chose
    it). Raises OSError when it is missing or not a directory."""
    absolute = os.path.abspath(os.fspath(path))
    fd = os.open(absolute, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    return Workspace(PurePosixPath(absolute), PurePosixPath(os.path.realpath(absolute)), fd)


@dataclass
class Located:
    """Where a resolved path lives: ``parts`` its workspace-relative components (links resolved;
    ``()`` is the root), ``parent_fd`` an open descriptor of its directory (``-1`` for the root)
    and ``name`` its last component (``""`` for the root). ``fd`` is the opened object itself when
    the walk opened it (see :func:`resolve`), else ``-1``. ``close()`` closes both."""

    parts: tuple[str, ...]
    parent_fd: int
    name: str
    fd: int = -1

    def close(self) -> None:
        """Close the descriptors this holds (idempotent)."""
        for attr in ("fd", "parent_fd"):
            value = getattr(self, attr)
            if value >= 0:
                os.close(value)
                setattr(self, attr, -1)

    def __enter__(self) -> Located:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def posix(self) -> str:
        """The workspace-relative POSIX path (``.`` for the root)."""
        return "/".join(self.parts) if self.parts else "."


def _link_parts(ws: Workspace, target: str) -> tuple[bool, tuple[str, ...]]:
    """``(absolute, components)`` of a link's text; absolute targets must lie under the root."""
    if "\x00" in target:  # cannot happen from readlink, but never trust it
        raise Escape(target)
    pure = PurePosixPath(target)
    if not pure.is_absolute():
        return False, pure.parts
    # Through the workspace's canonical path (``/data/ws/a.txt``), or through its ancestors
    # and back (``/data/ws/../ws/a.txt``): a canonical path and its ancestors hold no link, so
    # a ``..`` among them means what it says; a step off that line of directories is out.
    real = ws.real.parts
    depth = 1  # the components of ``real`` the target has reached: ``real[:depth]`` ('/' first)
    for k, comp in enumerate(pure.parts[1:], start=1):
        if comp in ("", "."):
            continue
        if comp == "..":
            depth = max(1, depth - 1)
        elif depth == len(real):  # into the workspace: the confined walk takes the rest
            return True, pure.parts[k:]
        elif comp == real[depth]:
            depth += 1
        else:
            break
    else:
        if depth == len(real):
            return True, ()
    # through the workspace's path as given (which may pass through links)
    n = len(ws.root.parts)
    if pure.parts[:n] == ws.root.parts:
        return True, pure.parts[n:]
    raise Escape(target)


def resolve(
    ws: Workspace,
    parts: tuple[str, ...],
    *,
    final: str = "entry",
    create_dirs: Callable[[tuple[str, ...]], None] | None = None,
    missing_ok: bool = False,
) -> Located:
    """Resolve ``parts`` beneath ``ws`` without letting the kernel follow any link.

    ``final`` says what to do with the last component: ``"entry"`` leaves it unopened (a link
    there is resolved; it may be missing), ``"open"`` opens it with ``O_NOFOLLOW | O_NONBLOCK``
    (file, directory or anything else: the caller checks ``fstat``), ``"dir"`` opens it as a
    directory. ``create_dirs(parts)`` is called before each missing intermediate directory is
    created (it raises to forbid it; nothing is created unless the whole path resolves inside
    the workspace); without it a missing directory is FileNotFoundError —
    unless ``missing_ok``, where the rest of the path is taken lexically (no descriptor then:
    ``parent_fd`` is -1). Raises :class:`Escape`, :class:`TooManyLinks`, OSError.
    """
    if create_dirs is not None:
        # Walk it once creating nothing, so a path refused further on (``new/../../x``, a link
        # out past a directory still to make) leaves no directory behind.
        resolve(ws, parts, final="entry", missing_ok=True).close()
    pending: deque[str] = deque(parts)
    stack: list[tuple[str, int]] = []  # opened directories beneath the root (fd -1: lexical)
    hops = 0
    retries = 0

    def cur() -> int:
        return stack[-1][1] if stack else ws.fd

    def splice(target: str) -> None:
        nonlocal hops
        hops += 1
        if hops > MAX_LINK_HOPS:
            raise TooManyLinks(errno.ELOOP, "too many levels of symbolic links")
        absolute, more = _link_parts(ws, target)
        if absolute:
            while stack:
                fd = stack.pop()[1]
                if fd >= 0:
                    os.close(fd)
        pending.extendleft(reversed(more))

    def raced() -> None:
        nonlocal retries
        retries += 1
        if retries > MAX_RACE_RETRIES:
            raise TooManyLinks(errno.EAGAIN, "the path keeps changing")

    def readlink(name: str) -> str | None:
        """The link text of ``name`` in the current directory, None when it is not a link."""
        try:
            return os.readlink(name, dir_fd=cur())
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                return None
            raise

    try:
        while pending:
            comp = pending.popleft()
            if comp in ("", "."):
                continue
            if comp == "..":
                if not stack:
                    raise Escape("..")
                fd = stack.pop()[1]
                if fd >= 0:
                    os.close(fd)
                continue
            if stack and stack[-1][1] < 0:  # past a missing directory: lexical
                stack.append((comp, -1))
                continue
            last = not pending
            if last and final in ("entry", "open"):
                if final == "entry":
                    try:
                        target = readlink(comp)
                    except FileNotFoundError:
                        target = None
                    if target is not None:
                        splice(target)
                        continue
                    return Located(_names(stack) + (comp,), _dup(cur()), comp)
                info = os.stat(comp, dir_fd=cur(), follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    target = readlink(comp)
                    if target is None:
                        raced()
                        pending.appendleft(comp)
                    else:
                        splice(target)
                    continue
                if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                    # never open a FIFO, socket or device (opening one can block or act)
                    raise NotRegular(info.st_mode)
                what = guarded(cur(), comp)
                if what is not None:
                    raise Guarded(what)
                try:
                    fd = os.open(comp, _OPEN_FLAGS, dir_fd=cur())
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.EMLINK):
                        raced()  # became a link between stat and open
                        pending.appendleft(comp)
                        continue
                    raise
                located = Located(_names(stack) + (comp,), _dup(cur()), comp, fd)
                return located
            try:
                fd = os.open(comp, _DIR_FLAGS, dir_fd=cur())
            except FileNotFoundError:
                if create_dirs is not None and not last:
                    create_dirs(_names(stack) + (comp,))
                    try:
                        os.mkdir(comp, dir_fd=cur())
                    except FileExistsError:
                        raced()
                    pending.appendleft(comp)
                    continue
                if missing_ok:
                    stack.append((comp, -1))
                    continue
                raise
            except OSError as exc:
                if exc.errno not in _LINK_ERRNOS:
                    raise
                target = readlink(comp)
                if target is not None:
                    splice(target)
                    continue
                if exc.errno == errno.ENOTDIR:
                    info = os.stat(comp, dir_fd=cur(), follow_symlinks=False)
                    if not stat.S_ISDIR(info.st_mode):
                        raise NotADirectoryError(
                            errno.ENOTDIR, "not a directory", "/".join(_names(stack) + (comp,))
                        ) from None
                raced()
                pending.appendleft(comp)
                continue
            stack.append((comp, fd))
            retries = 0
        # the whole path was directories (or the root itself)
        names = _names(stack)
        if not names:
            return Located((), -1, "", _dup(ws.fd) if final != "entry" else -1)
        if stack[-1][1] < 0:
            return Located(names, -1, names[-1])
        name, fd = stack.pop()
        parent = _dup(cur())
        if final == "entry":
            os.close(fd)
            fd = -1
        return Located(names, parent, name, fd)
    finally:
        for _name, fd in stack:
            if fd >= 0:
                os.close(fd)


class NotRegular(OSError):
    """The path names a FIFO, socket or device (never opened)."""

    def __init__(self, mode: int) -> None:
        kind = (
            "a FIFO (named pipe)"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file"
        )
        super().__init__(errno.EINVAL, kind)
        self.kind = kind


def _names(stack: list[tuple[str, int]]) -> tuple[str, ...]:
    return tuple(name for name, _fd in stack)


def _dup(fd: int) -> int:
    return os.dup(fd) if fd >= 0 else -1


# --------------------------------------------------------------------------- trees


@dataclass
class Entry:
    """One directory entry met by :func:`walk`: ``parts`` (workspace-relative, unresolved for a
    link), ``kind`` ``file`` | ``dir`` | ``link`` | ``other``, ``dir_fd`` its directory (valid
    only while the walk is at this entry) and ``name``."""

    parts: tuple[str, ...]
    kind: str
    dir_fd: int
    name: str


def _kind(entry: os.DirEntry[str]) -> str:
    try:
        if entry.is_symlink():
            return "link"
        if entry.is_dir(follow_symlinks=False):
            return "dir"
        if entry.is_file(follow_symlinks=False):
            return "file"
    except OSError:
        return "other"
    return "other"


def walk(
    top: Located,
    *,
    descend: Callable[[tuple[str, ...]], bool],
    skip: Callable[[str], bool],
    files_first: bool = False,
) -> Iterator[Entry]:
    """Entries beneath the directory ``top`` (opened: ``top.fd``), depth first, sorted by name.

    ``skip(name)`` leaves an entry out; ``descend(parts)`` says whether to enter a directory.
    Subdirectories are opened with ``O_NOFOLLOW`` relative to their parent's descriptor (a
    directory swapped for a link meanwhile is not entered). ``files_first`` yields a directory's
    non-directories before descending (``os.walk`` order); otherwise pre-order. Unreadable
    directories below ``top`` are left out.
    """
    stack: list[tuple[tuple[str, ...], int, Iterator[Entry]]] = []

    def listing(fd: int) -> list[os.DirEntry[str]]:
        with os.scandir(fd) as it:
            return sorted(it, key=lambda e: e.name)

    def frames(parts: tuple[str, ...], fd: int) -> Iterator[Entry]:
        entries = [e for e in listing(fd) if not skip(e.name)]
        return _frames(parts, fd, entries)

    def _frames(
        parts: tuple[str, ...], fd: int, entries: list[os.DirEntry[str]]
    ) -> Iterator[Entry]:
        kinds = [(e, _kind(e)) for e in entries]
        if files_first:
            for e, kind in kinds:
                if kind != "dir":
                    yield Entry(parts + (e.name,), kind, fd, e.name)
            for e, kind in kinds:
                if kind == "dir":
                    yield Entry(parts + (e.name,), kind, fd, e.name)
        else:
            for e, kind in kinds:
                yield Entry(parts + (e.name,), kind, fd, e.name)

    root_fd = os.dup(top.fd)
    try:
        stack.append((top.parts, root_fd, frames(top.parts, root_fd)))
    except BaseException:
        os.close(root_fd)
        raise
    try:
        while stack:
            parts, fd, it = stack[-1]
            entry = next(it, None)
            if entry is None:
                stack.pop()
                os.close(fd)
                continue
            yield entry
            if entry.kind == "dir" and descend(entry.parts):
                try:
                    child = os.open(entry.name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue  # vanished, or swapped for a link: not entered
                try:
                    stack.append((entry.parts, child, frames(entry.parts, child)))
                except OSError:
                    os.close(child)
    finally:
        for _parts, fd, _it in stack:
            os.close(fd)


def read_capped(fd: int, cap: int) -> bytes:
    """At most ``cap`` bytes from ``fd`` (from its current offset)."""
    chunks: list[bytes] = []
    left = cap
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_atomic(parent_fd: int, name: str, data: bytes, mode: int | None) -> None:
    """Write ``data`` as ``name`` in the directory ``parent_fd`` through a temporary file created
    (``O_EXCL | O_NOFOLLOW``) in that same directory and renamed over ``name``: readers never see
    half a file, and a link at ``name`` is replaced, never written through. ``mode`` (permission
    bits) is applied when given; new files get ``0o666`` less the umask.  Raises
    :class:`Guarded` for a guarded file (:func:`guard`)."""
    what = guarded(parent_fd, name)
    if what is not None:
        raise Guarded(what)
    for attempt in range(100):
        tmp = f".{name[:200]}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:
            fd = os.open(tmp, _CREATE_FLAGS, 0o666, dir_fd=parent_fd)
        except FileExistsError:
            if attempt == 99:
                raise
            continue
        break
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if mode is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=parent_fd)
        except OSError:
            pass
        raise


def open_entry(dir_fd: int, name: str) -> int:
    """Open ``name`` in ``dir_fd`` for reading without following a link (``O_NOFOLLOW``) and
    without blocking on a FIFO (``O_NONBLOCK``); the caller checks ``fstat``.  Raises
    :class:`Guarded` for a guarded file (:func:`guard`)."""
    what = guarded(dir_fd, name)
    if what is not None:
        raise Guarded(what)
    return os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
