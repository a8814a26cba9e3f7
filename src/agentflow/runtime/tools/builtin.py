"""The builtin file tools (docs/spec/RUNTIME.md §4): read_file, list_dir, glob, grep, write_file,
edit_file.

Every path is relative to the workspace root (``ToolContext.workspace``); absolute paths are accepted
only when they lie inside it. Paths are resolved beneath the root by :mod:`.confined`: one
component at a time from a descriptor of the root, never letting the kernel follow a symbolic link,
so ``..``, absolute paths and links that lead out are refused — also when a directory is swapped for
a link while a tool runs. Links that stay inside the workspace resolve to what they name. Only
regular files are read (a FIFO or device is refused, never opened), reads are streamed or capped,
and writes go through a temporary file created in the target's own directory descriptor. Write
tools never write inside ``.git`` and honour ``ToolContext.write_scope`` (a directory covers its
subtree).

Failures raise ``RunError(code="tool_error" | "write_scope", message)``. All results use
workspace-relative POSIX paths, so the output of one tool is valid input for another.
"""

from __future__ import annotations

import codecs
import contextlib
import fnmatch
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

import regex

from agentflow.core.vocabulary import Code
from agentflow.errors import RunError
from agentflow.runtime.tools import confined
from agentflow.runtime.tools.catalog import Catalog, Tool, ToolContext, ensure_async

MAX_READ_CHARS = 100_000
MAX_LIST_ENTRIES = 5_000
MAX_GLOB_RESULTS = 2_000
MAX_GREP_FILE_BYTES = 5_000_000
MAX_GREP_LINE_CHARS = 500
#: Largest file ``builtin__edit_file`` rewrites, in bytes (it holds the file in memory).
MAX_EDIT_BYTES = 10_000_000
#: Characters ``read_file`` reads past its cap to say how long the window is (then "more than").
READ_COUNT_BUDGET_CHARS = 8_000_000
#: Time budget for searching one file with ``builtin__grep``, in seconds (all its lines together).
GREP_FILE_TIMEOUT_S = 1.0
SKIP_DIRS = frozenset({".git"})
_READ_CHUNK = 1 << 16
#: What ``str.splitlines`` treats as a line end (``\r\n`` counts once).
_LINE_ENDS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _err(message: str, code: str = Code.TOOL_ERROR) -> RunError:
    return RunError(code=code, message=message)


def _str_arg(
    args: dict[str, Any], name: str, *, required: bool = True, default: str | None = None
) -> str:
    value = args.get(name, default)
    if value is None:
        if required:
            raise _err(f"missing required argument '{name}'")
        return ""
    if not isinstance(value, str):
        raise _err(f"argument '{name}' must be a string, got {type(value).__name__}")
    return value


def _int_arg(args: dict[str, Any], name: str, default: int | None, minimum: int = 0) -> int | None:
    value = args.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _err(f"argument '{name}' must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise _err(f"argument '{name}' must be at least {minimum}, got {value}")
    return value


# --------------------------------------------------------------------------- paths


def _outside(path: str) -> RunError:
    return _err(
        f"path '{path}' is outside the workspace; use a path relative to the workspace root"
    )


@contextlib.contextmanager
def _workspace(ctx: ToolContext) -> Iterator[confined.Workspace]:
    try:
        ws = confined.open_workspace(ctx.workspace)
    except OSError as exc:
        raise _err(f"cannot open the workspace '{ctx.workspace}': {exc.strerror or exc}") from None
    with ws:
        yield ws


def _parts(ws: confined.Workspace, path: str) -> tuple[str, ...]:
    try:
        return ws.relative_parts(path)
    except ValueError as exc:
        raise _err(str(exc)) from None
    except confined.Escape:
        raise _outside(path) from None


@contextlib.contextmanager
def _locate(
    ws: confined.Workspace, path: str, parts: tuple[str, ...] | None = None, **how: Any
) -> Iterator[confined.Located]:
    """:func:`confined.resolve` with its errors turned into tool errors naming ``path``."""
    try:
        loc = confined.resolve(ws, _parts(ws, path) if parts is None else parts, **how)
    except confined.Escape:
        raise _outside(path) from None
    except confined.Guarded as exc:
        raise _guarded(path, exc) from None
    except confined.NotRegular as exc:
        raise _err(
            f"'{path}' is {exc.kind}, not a regular file; the file tools read and write regular "
            "files only"
        ) from None
    except FileNotFoundError:
        raise _err(f"'{path}' does not exist") from None
    except NotADirectoryError:
        raise _err(f"'{path}': a part of the path is not a directory") from None
    except OSError as exc:
        raise _err(f"cannot resolve path '{path}': {exc.strerror or exc}") from None
    with loc:
        yield loc


def _fstat(loc: confined.Located) -> os.stat_result:
    return os.fstat(loc.fd)


def _is_git(parts: tuple[str, ...]) -> bool:
    return any(part.casefold() in SKIP_DIRS for part in parts)


def _scopes(ws: confined.Workspace, ctx: ToolContext) -> list[tuple[str, ...]] | None:
    """The write scope as resolved workspace-relative parts (entries outside the workspace, which
    nothing can be written to, are dropped); ``None`` when there is no restriction."""
    if ctx.write_scope is None:
        return None
    out: list[tuple[str, ...]] = []
    for scope in ctx.write_scope:
        try:
            loc = confined.resolve(
                ws, ws.relative_parts(os.fspath(scope)), final="entry", missing_ok=True
            )
        except (confined.Escape, ValueError, OSError):
            continue
        with loc:
            out.append(loc.parts)
    return out


def _within(parts: tuple[str, ...], scope: tuple[str, ...]) -> bool:
    return parts[: len(scope)] == scope


def _scope_error(path: str, scopes: list[tuple[str, ...]]) -> RunError:
    shown = ", ".join("/".join(s) or "." for s in scopes)
    return _err(
        f"'{path}' is outside this agent's write scope ({shown or 'nothing'})",
        code=Code.WRITE_SCOPE,
    )


def _check_writable(
    path: str, given: tuple[str, ...], parts: tuple[str, ...], scopes: list[tuple[str, ...]] | None
) -> None:
    """Refuse writing the resolved ``parts``: inside ``.git``, the root, outside the scope."""
    if _is_git(parts) or _is_git(given):
        raise _err(f"refusing to write '{path}': tools never write inside .git")
    if not parts:
        raise _err("cannot write to the workspace root itself")
    if scopes is not None and not any(_within(parts, s) for s in scopes):
        raise _scope_error(path, scopes)


# --------------------------------------------------------------------------- reading


def _line_pieces(fd: int) -> Iterator[tuple[str, bool]]:
    """The text of ``fd`` (UTF-8, undecodable bytes replaced) as ``(piece, ends_line)``: pieces
    of at most about one read chunk, ``ends_line`` when the piece closes a line (the line breaks
    of ``str.splitlines``). Memory stays bounded whatever the line lengths."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    carry_cr = False
    while True:
        data = os.read(fd, _READ_CHUNK)
        text = decoder.decode(data, final=not data)
        if carry_cr:
            text = "\r" + text
            carry_cr = False
        if data and text.endswith("\r"):  # maybe the first half of \r\n
            text = text[:-1]
            carry_cr = True
        for piece in text.splitlines(keepends=True):
            yield piece, piece[-1] in _LINE_ENDS
        if not data:
            return


def _regular(loc: confined.Located, path: str) -> os.stat_result:
    info = _fstat(loc)
    if stat.S_ISDIR(info.st_mode):
        raise _err(f"'{path}' is a directory; use builtin__list_dir")
    if not stat.S_ISREG(info.st_mode):
        raise _err(f"'{path}' is not a regular file; the file tools read regular files only")
    if _directory_form(path):  # `a.txt/`: the system says "not a directory", and so do we
        raise _err(f"'{path}' is not a directory (the path ends with '/'); drop the '/'")
    return info


def _directory_form(path: str) -> bool:
    """Whether ``path`` is written as a directory (``dir/``, ``dir/.``): a file's path never
    is, although its parts (which drop the trailing ``/``) cannot tell."""
    return path.endswith(("/", "/."))


def _looks_binary(fd: int) -> bool:
    head = os.pread(fd, 8192, 0)
    return b"\x00" in head


def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    """``{path, offset?, limit?}`` → the file's text (lines ``offset``… 1-based, at most ``limit``).

    The file is streamed: output beyond MAX_READ_CHARS characters is cut with a ``[truncated …]``
    marker saying where to read on, and memory stays bounded by the cap, not the file size.
    """
    path = _str_arg(args, "path")
    offset = _int_arg(args, "offset", 1, minimum=1) or 1
    limit = _int_arg(args, "limit", None, minimum=1)
    with _workspace(ctx) as ws, _locate(ws, path, final="open") as loc:
        _regular(loc, path)
        try:
            if _looks_binary(loc.fd):
                raise _err(f"'{path}' looks like a binary file")
            return _read_window(loc.fd, offset, limit)
        except OSError as exc:
            raise _err(f"cannot read '{path}': {exc.strerror or exc}") from None


def _read_window(fd: int, offset: int, limit: int | None) -> str:
    """Lines ``offset``… (at most ``limit``) of ``fd``, cut at MAX_READ_CHARS with a marker."""
    kept: list[str] = []
    kept_chars = 0
    line = 1
    taken = 0
    pieces = _line_pieces(fd)
    for piece, ends in pieces:
        if line < offset:
            line += ends
            continue
        if limit is not None and taken >= limit:
            break
        kept.append(piece)
        kept_chars += len(piece)
        taken += ends
        line += ends
        if kept_chars > MAX_READ_CHARS:
            break
    else:
        return "".join(kept)
    if kept_chars <= MAX_READ_CHARS:
        return "".join(kept)  # the limit ended the window
    total, exact = kept_chars, True
    for more, more_ends in pieces:  # count on (bounded) to say how long the window is
        if limit is not None and taken >= limit:
            break
        if total > READ_COUNT_BUDGET_CHARS:
            exact = False
            break
        total += len(more)
        taken += more_ends
    shown = "".join(kept)[:MAX_READ_CHARS]
    complete = len(shown.splitlines()) - (shown[-1] not in _LINE_ENDS)
    size = str(total) if exact else f"more than {READ_COUNT_BUDGET_CHARS}"
    if complete <= 0:
        return shown + (
            f"\n[truncated: showing {MAX_READ_CHARS} of {size} characters; line {offset} alone is "
            "longer than that]"
        )
    return shown + (
        f"\n[truncated: showing {MAX_READ_CHARS} of {size} characters; read on with "
        f"offset={offset + complete}]"
    )


# --------------------------------------------------------------------------- listing


def list_dir(args: dict[str, Any], ctx: ToolContext) -> list[dict[str, str]]:
    """``{path?, recursive?}`` → ``[{path, kind}]`` sorted by path within each directory, ``kind``
    ``file`` | ``dir`` (docs/spec/LANGUAGE.md §7). ``.git`` is skipped. A symlink is listed with the
    kind of what it points to when that lies inside the workspace (never recursed into); symlinks
    leading out of the workspace or dangling are left out. More than MAX_LIST_ENTRIES entries is an
    error (list a subdirectory, or use glob) rather than a silently cut list.
    """
    path = _str_arg(args, "path", required=False, default=".") or "."
    recursive = args.get("recursive", False)
    if not isinstance(recursive, bool):
        raise _err(f"argument 'recursive' must be a boolean, got {type(recursive).__name__}")
    out: list[dict[str, str]] = []
    with _workspace(ctx) as ws:
        try:
            with _locate(ws, path, final="open") as loc:
                if not stat.S_ISDIR(_fstat(loc).st_mode):
                    raise _err(f"'{path}' is not a directory")
                entries = confined.walk(
                    loc, descend=lambda _parts: recursive, skip=lambda n: n.casefold() in SKIP_DIRS
                )
                for entry in entries:
                    # a link: its target's kind, None when it dangles, loops or leads out of
                    # the workspace; "other" (a FIFO, socket or device): no file tool reads it
                    kind = _link_kind(ws, entry.parts) if entry.kind == "link" else entry.kind
                    if kind is None or kind == "other":
                        continue
                    if len(out) >= MAX_LIST_ENTRIES:
                        raise _err(
                            f"'{path}' holds more than {MAX_LIST_ENTRIES} entries; list a "
                            "subdirectory or use builtin__glob with a narrower pattern"
                        )
                    out.append({"path": "/".join(entry.parts), "kind": kind})
        except OSError as exc:
            raise _err(f"cannot list '{path}': {exc.strerror or exc}") from None
    return out


def _link_kind(ws: confined.Workspace, parts: tuple[str, ...]) -> str | None:
    """``dir`` | ``file`` for a link inside the workspace, None when it leads out or dangles."""
    try:
        with confined.resolve(ws, parts, final="entry") as loc:
            if not loc.parts:
                return "dir"
            info = os.stat(loc.name, dir_fd=loc.parent_fd, follow_symlinks=False)
    except (confined.Escape, OSError):
        return None
    if stat.S_ISLNK(info.st_mode):
        return None  # changed under us
    if stat.S_ISDIR(info.st_mode):
        return "dir"
    return "file" if stat.S_ISREG(info.st_mode) else None  # a FIFO, socket, device: left out


def _check_pattern(pattern: str) -> None:
    if not pattern:
        raise _err("the glob pattern is empty")
    if (
        pattern.startswith("/")
        or re.match(r"^[A-Za-z]:", pattern)
        or ".." in PurePosixPath(pattern).parts
    ):
        raise _err(f"glob pattern '{pattern}' must be relative and stay inside the workspace")


class _Glob:
    """A ``pathlib``-style glob over path components: ``*``, ``?``, ``[…]`` within one name,
    ``**`` for any number of directories (at the end: everything beneath)."""

    def __init__(self, pattern: str) -> None:
        self.segments = [s for s in pattern.split("/") if s not in ("", ".")]
        self.end = len(self.segments)

    def closure(self, states: frozenset[int]) -> frozenset[int]:
        out = set(states)
        todo = list(states)
        while todo:
            i = todo.pop()
            if i < self.end and self.segments[i] == "**" and i + 1 not in out:
                out.add(i + 1)
                todo.append(i + 1)
        return frozenset(out)

    def start(self) -> frozenset[int]:
        return self.closure(frozenset({0}))

    def step(self, states: frozenset[int], name: str) -> frozenset[int]:
        nxt: set[int] = set()
        for i in states:
            if i >= self.end:
                continue
            segment = self.segments[i]
            if segment == "**":
                nxt.add(i)
            elif fnmatch.fnmatchcase(name, segment):
                nxt.add(i + 1)
        return self.closure(frozenset(nxt))

    def matches(self, states: frozenset[int]) -> bool:
        return self.end in states

    def alive(self, states: frozenset[int]) -> bool:
        return any(i < self.end for i in states)


def glob(args: dict[str, Any], ctx: ToolContext) -> list[str]:
    """``{pattern, path?}`` → sorted workspace-relative paths matching ``pattern`` (``**`` recurses).

    Files and directories match; ``.git`` is skipped; a link matches when it resolves inside the
    workspace and is never descended into. At most MAX_GLOB_RESULTS paths.
    """
    pattern = _str_arg(args, "pattern")
    _check_pattern(pattern)
    path = _str_arg(args, "path", required=False, default=".") or "."
    matcher = _Glob(pattern)
    out: list[str] = []
    with _workspace(ctx) as ws, _locate(ws, path, final="open") as loc:
        if not stat.S_ISDIR(_fstat(loc).st_mode):
            raise _err(f"'{path}' is not a directory")
        if matcher.end == 0:
            return [loc.posix]
        base = len(loc.parts)
        states: dict[tuple[str, ...], frozenset[int]] = {loc.parts: matcher.start()}

        def descend(parts: tuple[str, ...]) -> bool:
            return matcher.alive(states.get(parts, frozenset()))

        try:
            for entry in confined.walk(
                loc, descend=descend, skip=lambda n: n.casefold() in SKIP_DIRS
            ):
                now = matcher.step(states[entry.parts[:-1]], entry.name)
                if entry.kind == "dir":
                    states[entry.parts] = now
                if not matcher.matches(now) or len(entry.parts) == base:
                    continue
                if entry.kind == "link" and _link_kind(ws, entry.parts) is None:
                    continue
                out.append("/".join(entry.parts))
                if len(out) >= MAX_GLOB_RESULTS:
                    break
        except OSError as exc:
            raise _err(f"cannot search '{path}': {exc.strerror or exc}") from None
    return sorted(set(out))


# --------------------------------------------------------------------------- grep


def grep(args: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
    """``{pattern, path?, glob?, max_results?, ignore_case?}`` → ``[{path, line, text}]``.

    ``pattern`` is a Python regular expression searched per line; ``glob`` filters file names (or
    workspace-relative paths when it holds a ``/``); binary, non-regular and very large files are
    skipped. Patterns run on the third-party ``regex`` engine (``re`` syntax) with a budget of
    :data:`GREP_FILE_TIMEOUT_S` per file and the GIL released, so a catastrophic pattern (a model
    can choose any) fails with ``tool_error`` naming the pattern and the file instead of hanging.
    """
    pattern = _str_arg(args, "pattern")
    path = _str_arg(args, "path", required=False, default=".") or "."
    name_glob = _str_arg(args, "glob", required=False) or None
    max_results = _int_arg(args, "max_results", 100, minimum=1) or 100
    flags = regex.IGNORECASE if args.get("ignore_case") else 0
    try:
        compiled = regex.compile(pattern, flags)
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise _err(f"invalid regular expression {pattern!r}: {exc}") from None
    out: list[dict[str, Any]] = []

    def wanted(parts: tuple[str, ...]) -> bool:
        if not name_glob:
            return True
        return fnmatch.fnmatchcase(parts[-1], name_glob) or fnmatch.fnmatchcase(
            "/".join(parts), name_glob
        )

    with _workspace(ctx) as ws, _locate(ws, path, final="open") as loc:
        mode = _fstat(loc).st_mode
        if stat.S_ISREG(mode):
            if loc.parts and wanted(loc.parts):
                _grep_fd(os.dup(loc.fd), loc.posix, compiled, pattern, out, max_results)
            return out
        if not stat.S_ISDIR(mode):
            raise _err(f"'{path}' is not a regular file; the file tools read regular files only")
        try:
            for entry in confined.walk(
                loc, descend=lambda _p: True, skip=lambda n: n in SKIP_DIRS, files_first=True
            ):
                if entry.kind in ("dir", "other") or not wanted(entry.parts):
                    continue
                fd = _open_for_grep(ws, entry)
                if fd is None:
                    continue
                relative = "/".join(entry.parts)
                if _grep_fd(fd, relative, compiled, pattern, out, max_results):
                    break
        except OSError as exc:
            raise _err(f"cannot search '{path}': {exc.strerror or exc}") from None
    return out


def _open_for_grep(ws: confined.Workspace, entry: confined.Entry) -> int | None:
    """A descriptor of the regular file ``entry`` (a link resolved inside the workspace), or None
    to skip it (gone, leading out, not regular)."""
    try:
        if entry.kind == "link":
            with confined.resolve(ws, entry.parts, final="open") as loc:
                fd, loc.fd = loc.fd, -1
        else:
            fd = confined.open_entry(entry.dir_fd, entry.name)
    except (confined.Escape, OSError):
        return None
    return fd


def _grep_fd(
    fd: int,
    relative: str,
    compiled: Any,
    pattern: str,
    out: list[dict[str, Any]],
    max_results: int,
) -> bool:
    """Search the file ``fd`` (closed here) line by line; True when ``max_results`` is reached."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_GREP_FILE_BYTES:
            return False
        data = confined.read_capped(fd, MAX_GREP_FILE_BYTES + 1)
    except OSError:
        return False
    finally:
        os.close(fd)
    if len(data) > MAX_GREP_FILE_BYTES or b"\x00" in data[:8192]:
        return False
    budget_end = time.monotonic() + GREP_FILE_TIMEOUT_S
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        try:
            found = compiled.search(
                line, timeout=max(budget_end - time.monotonic(), 0.001), concurrent=True
            )
        except TimeoutError:
            raise _err(
                f"regular expression {pattern!r} took longer than {GREP_FILE_TIMEOUT_S:g} s "
                f"on '{relative}' (catastrophic backtracking?); simplify the pattern"
            ) from None
        if found:
            text = line if len(line) <= MAX_GREP_LINE_CHARS else line[:MAX_GREP_LINE_CHARS] + "…"
            out.append({"path": relative, "line": number, "text": text})
            if len(out) >= max_results:
                return True
    return False


# --------------------------------------------------------------------------- writing


def write_file(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """``{path, content}`` → ``{path, bytes}``; creates parent directories; UTF-8."""
    path = _str_arg(args, "path")
    content = args.get("content")
    if not isinstance(content, str):
        raise _err("argument 'content' must be a string")
    data = content.encode("utf-8")
    if _directory_form(path):
        raise _err(
            f"'{path}' ends with '/', which names a directory; builtin__write_file writes a "
            "file: give the file's name (`dir/notes.txt`)"
        )
    with _workspace(ctx) as ws:
        given = _parts(ws, path)
        scopes = _scopes(ws, ctx)

        def may_create(parts: tuple[str, ...]) -> None:
            if _is_git(parts) or _is_git(given):
                raise _err(f"refusing to write '{path}': tools never write inside .git")
            if scopes is not None and not any(
                _within(parts, s) or _within(s, parts) for s in scopes
            ):
                raise _scope_error(path, scopes)

        with _locate(ws, path, given, final="entry", create_dirs=may_create) as loc:
            _check_writable(path, given, loc.parts, scopes)
            try:
                info = os.stat(loc.name, dir_fd=loc.parent_fd, follow_symlinks=False)
            except FileNotFoundError:
                info = None
            if info is not None and stat.S_ISDIR(info.st_mode):
                raise _err(f"'{path}' is a directory")
            if info is not None and not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                raise _err(f"'{path}' is not a regular file; refusing to replace it")
            mode = (
                stat.S_IMODE(info.st_mode)
                if info is not None and stat.S_ISREG(info.st_mode)
                else None
            )
            _write(loc, data, mode, path)
            return {"path": loc.posix, "bytes": len(data)}


def _guarded(path: str, exc: confined.Guarded) -> RunError:
    return _err(
        f"'{path}' is {exc.what}, which this process has open: the file tools never read "
        "or write it"
    )


def _write(loc: confined.Located, data: bytes, mode: int | None, path: str) -> None:
    try:
        confined.write_atomic(loc.parent_fd, loc.name, data, mode)
    except confined.Guarded as exc:
        raise _guarded(path, exc) from None
    except OSError as exc:
        raise _err(f"cannot write '{path}': {exc.strerror or exc}") from None


def edit_file(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """``{path, old, new}`` → ``{path, replacements: 1}``: replace the one exact occurrence of ``old``.

    Refuses when ``old`` is absent or occurs more than once (add context to make it unique), and
    files over MAX_EDIT_BYTES.
    """
    path = _str_arg(args, "path")
    old = args.get("old")
    new = args.get("new")
    if not isinstance(old, str) or not old:
        raise _err("argument 'old' must be a non-empty string")
    if not isinstance(new, str):
        raise _err("argument 'new' must be a string")
    with _workspace(ctx) as ws:
        given = _parts(ws, path)
        scopes = _scopes(ws, ctx)
        if _is_git(given):
            _check_writable(path, given, given, scopes)
        with _locate(ws, path, given, final="open") as loc:
            _check_writable(path, given, loc.parts, scopes)
            info = _regular(loc, path)
            if info.st_size > MAX_EDIT_BYTES:
                raise _err(
                    f"'{path}' is too large to edit ({info.st_size} bytes; builtin__edit_file "
                    f"handles up to {MAX_EDIT_BYTES}); use builtin__write_file"
                )
            try:
                data = confined.read_capped(loc.fd, MAX_EDIT_BYTES + 1)
            except OSError as exc:
                raise _err(f"cannot read '{path}': {exc.strerror or exc}") from None
            if len(data) > MAX_EDIT_BYTES:
                raise _err(f"'{path}' is too large to edit; use builtin__write_file")
            if b"\x00" in data[:8192]:
                raise _err(f"'{path}' looks like a binary file")
            text = data.decode("utf-8", errors="replace")
            count = text.count(old)
            if count == 0:
                raise _err(f"the text to replace was not found in '{path}' (it must match exactly)")
            if count > 1:
                raise _err(
                    f"the text to replace occurs {count} times in '{path}'; include more "
                    "surrounding text so it matches exactly once"
                )
            updated = text.replace(old, new, 1)
            _write(loc, updated.encode("utf-8"), stat.S_IMODE(info.st_mode), path)
            return {"path": loc.posix, "replacements": 1}


_PATH = {"type": "string", "description": "Path relative to the workspace root."}

SCHEMAS: dict[str, dict[str, Any]] = {
    "read_file": {
        "type": "object",
        "properties": {
            "path": _PATH,
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "First line to read (1-based).",
            },
            "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines."},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    "list_dir": {
        "type": "object",
        "properties": {
            "path": {
                **_PATH,
                "description": "Directory relative to the workspace root (default '.').",
            },
            "recursive": {"type": "boolean", "description": "List the whole subtree."},
        },
        "additionalProperties": False,
    },
    "glob": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Glob such as '**/*.py' or 'src/*.md'."},
            "path": {**_PATH, "description": "Directory to search from (default the root)."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    "grep": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Python regular expression, per line."},
            "path": {**_PATH, "description": "File or directory to search (default the root)."},
            "glob": {
                "type": "string",
                "description": "Only files whose name matches, e.g. '*.py'.",
            },
            "max_results": {"type": "integer", "minimum": 1, "description": "Default 100."},
            "ignore_case": {"type": "boolean"},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    "write_file": {
        "type": "object",
        "properties": {
            "path": _PATH,
            "content": {"type": "string", "description": "Full new text."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
    "edit_file": {
        "type": "object",
        "properties": {
            "path": _PATH,
            "old": {"type": "string", "description": "Exact text to replace; must occur once."},
            "new": {"type": "string", "description": "Replacement text."},
        },
        "required": ["path", "old", "new"],
        "additionalProperties": False,
    },
}

DESCRIPTIONS: dict[str, str] = {
    "read_file": "Read a UTF-8 text file of the workspace. Optional offset (1-based first line) and "
    "limit (number of lines) read a part of a large file. Long output is truncated with a marker.",
    "list_dir": "List a directory of the workspace as [{path, kind}] (kind: file or dir). "
    "Set recursive to list the whole subtree. .git is skipped.",
    "glob": "Find files by glob pattern (e.g. '**/*.py'); returns workspace-relative paths.",
    "grep": "Search file contents with a regular expression; returns [{path, line, text}]. "
    "Filter files with glob (e.g. '*.py'); max_results defaults to 100.",
    "write_file": "Create or overwrite a text file with the given content (parent directories are "
    "created). Returns {path, bytes}.",
    "edit_file": "Replace one exact occurrence of 'old' with 'new' in a file. Fails when 'old' is "
    "missing or occurs more than once. Returns {path, replacements}.",
}

_FUNCS = {
    "read_file": read_file,
    "list_dir": list_dir,
    "glob": glob,
    "grep": grep,
    "write_file": write_file,
    "edit_file": edit_file,
}


def builtin_tools() -> list[Tool]:
    """Fresh Tool objects for the six builtins, named ``builtin__<name>`` (sync bodies run in threads)."""
    return [
        Tool(
            name=f"builtin__{name}",
            description=DESCRIPTIONS[name],
            input_schema=SCHEMAS[name],
            func=ensure_async(func),
            source="builtin",
            # a durable run repeats a call its crash interrupted only when that is harmless:
            # reads, and write_file (the same content again); not edit_file (the replaced
            # text may be gone, or appear again)
            meta={"idempotent": name != "edit_file"},
        )
        for name, func in _FUNCS.items()
    ]


def default_catalog() -> Catalog:
    """A catalog holding the six builtin file tools (``builtin__read_file`` … ``builtin__edit_file``)."""
    return Catalog(builtin_tools())
