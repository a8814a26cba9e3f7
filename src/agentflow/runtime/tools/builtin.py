"""The builtin file tools (docs/spec/RUNTIME.md §4): read_file, list_dir, glob, grep, write_file,
edit_file.

Every path is relative to the workspace root (``ToolContext.workspace``); absolute paths are accepted
only when they lie inside it. Paths are resolved (symlinks followed) and must stay inside the
workspace: ``..``, absolute paths and symlinks that lead out are refused. Write tools never write
inside ``.git`` and honour ``ToolContext.write_scope`` (a directory covers its subtree).

Failures raise ``RunError(code="tool_error" | "write_scope", message)``. All results use
workspace-relative POSIX paths, so the output of one tool is valid input for another.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import time
from pathlib import Path, PurePosixPath
from typing import Any

import regex

from agentflow.errors import RunError
from agentflow.runtime.tools.catalog import Tool, ToolContext, ensure_async

MAX_READ_CHARS = 100_000
MAX_LIST_ENTRIES = 5_000
MAX_GLOB_RESULTS = 2_000
MAX_GREP_FILE_BYTES = 5_000_000
MAX_GREP_LINE_CHARS = 500
#: Time budget for searching one file with ``builtin__grep``, in seconds (all its lines together).
GREP_FILE_TIMEOUT_S = 1.0
SKIP_DIRS = frozenset({".git"})


def _err(message: str, code: str = "tool_error") -> RunError:
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


def workspace_root(ctx: ToolContext) -> Path:
    """The resolved workspace root."""
    return Path(ctx.workspace).resolve()


def resolve_path(ctx: ToolContext, path: str) -> Path:
    """The resolved absolute path of workspace-relative ``path``; RunError(tool_error) if it escapes."""
    if not path:
        path = "."
    if "\x00" in path:
        raise _err("path contains a NUL character")
    root = workspace_root(ctx)
    given = Path(path).expanduser() if path.startswith("~") else Path(path)
    candidate = given if given.is_absolute() else root / given
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # symlink loops
        raise _err(f"cannot resolve path '{path}': {exc}") from None
    if resolved != root and root not in resolved.parents:
        raise _err(
            f"path '{path}' is outside the workspace; use a path relative to the workspace root"
        )
    return resolved


def rel(ctx: ToolContext, resolved: Path) -> str:
    """``resolved`` relative to the workspace, POSIX style (``.`` for the root)."""
    relative = resolved.relative_to(workspace_root(ctx))
    return relative.as_posix() if relative.parts else "."


def check_writable(ctx: ToolContext, path: str) -> Path:
    """Resolve ``path`` for writing: inside the workspace, not in ``.git``, inside the write scope."""
    target = resolve_path(ctx, path)
    root = workspace_root(ctx)
    relative = target.relative_to(root)
    given_parts = PurePosixPath(path.replace("\\", "/")).parts
    if any(part.casefold() in SKIP_DIRS for part in (*relative.parts, *given_parts)):
        raise _err(f"refusing to write '{path}': tools never write inside .git")
    if target == root:
        raise _err("cannot write to the workspace root itself")
    if ctx.write_scope is not None:
        allowed = []
        for scope in ctx.write_scope:
            scope_path = Path(scope)
            scope_resolved = (
                scope_path if scope_path.is_absolute() else root / scope_path
            ).resolve()
            allowed.append(scope_resolved)
            if target == scope_resolved or scope_resolved in target.parents:
                return target
        shown = ", ".join(
            rel(ctx, a) if (a == root or root in a.parents) else str(a) for a in allowed
        )
        raise _err(
            f"'{path}' is outside this agent's write scope ({shown or 'nothing'})",
            code="write_scope",
        )
    return target


def _atomic_write(target: Path, data: bytes, display: str) -> None:
    """Write ``data`` to ``target`` through a temporary file in the same directory and a rename:
    readers never see half a file, and a hard link or symlink at ``target`` is replaced rather
    than written through (so a link cannot carry a write out of the workspace)."""
    import tempfile

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = target.stat().st_mode & 0o777 if target.exists() else None
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise _err(f"cannot write '{display}': {exc.strerror or exc}") from None


def _read_text(target: Path, display: str) -> str:
    try:
        data = target.read_bytes()
    except IsADirectoryError:
        raise _err(f"'{display}' is a directory; use builtin__list_dir") from None
    except FileNotFoundError:
        raise _err(f"file '{display}' does not exist") from None
    except OSError as exc:
        raise _err(f"cannot read '{display}': {exc.strerror or exc}") from None
    if b"\x00" in data[:8192]:
        raise _err(f"'{display}' looks like a binary file")
    return data.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- tools


def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    """``{path, offset?, limit?}`` → the file's text (lines ``offset``… 1-based, at most ``limit``).

    Output beyond MAX_READ_CHARS characters is cut with a ``[truncated …]`` marker.
    """
    path = _str_arg(args, "path")
    offset = _int_arg(args, "offset", 1, minimum=1) or 1
    limit = _int_arg(args, "limit", None, minimum=1)
    target = resolve_path(ctx, path)
    if target.is_dir():
        raise _err(f"'{path}' is a directory; use builtin__list_dir")
    text = _read_text(target, path)
    if offset > 1 or limit is not None:
        lines = text.splitlines(keepends=True)
        end = None if limit is None else offset - 1 + limit
        text = "".join(lines[offset - 1 : end])
    if len(text) > MAX_READ_CHARS:
        shown = text[:MAX_READ_CHARS]
        shown_lines = shown.count("\n")
        text = (
            shown
            + f"\n[truncated: showing {MAX_READ_CHARS} of {len(text)} characters; read on with "
            f"offset={offset + shown_lines}]"
        )
    return text


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
    target = resolve_path(ctx, path)
    if not target.exists():
        raise _err(f"directory '{path}' does not exist")
    if not target.is_dir():
        raise _err(f"'{path}' is not a directory")
    root = workspace_root(ctx)
    out: list[dict[str, str]] = []

    def walk(directory: Path) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            raise _err(f"cannot list '{rel(ctx, directory)}': {exc.strerror or exc}") from None
        for entry in entries:
            if entry.name.casefold() in SKIP_DIRS:
                continue
            entry_path = directory / entry.name
            is_link = entry.is_symlink()
            if is_link:
                try:
                    real = entry_path.resolve(strict=True)
                except (OSError, RuntimeError):
                    continue  # dangling or looping
                if real != root and root not in real.parents:
                    continue  # leads out of the workspace
                kind = "dir" if real.is_dir() else "file"
            else:
                kind = "dir" if entry.is_dir(follow_symlinks=False) else "file"
            if len(out) >= MAX_LIST_ENTRIES:
                raise _err(
                    f"'{path}' holds more than {MAX_LIST_ENTRIES} entries; list a subdirectory "
                    "or use builtin__glob with a narrower pattern"
                )
            out.append({"path": rel(ctx, entry_path), "kind": kind})
            if recursive and kind == "dir" and not is_link:
                walk(entry_path)

    walk(target)
    return out


def _check_pattern(pattern: str) -> None:
    if not pattern:
        raise _err("the glob pattern is empty")
    if (
        pattern.startswith("/")
        or re.match(r"^[A-Za-z]:", pattern)
        or ".." in PurePosixPath(pattern).parts
    ):
        raise _err(f"glob pattern '{pattern}' must be relative and stay inside the workspace")


def glob(args: dict[str, Any], ctx: ToolContext) -> list[str]:
    """``{pattern, path?}`` → sorted workspace-relative paths matching ``pattern`` (``**`` recurses)."""
    pattern = _str_arg(args, "pattern")
    _check_pattern(pattern)
    base = resolve_path(ctx, _str_arg(args, "path", required=False, default=".") or ".")
    if not base.is_dir():
        raise _err(f"'{args.get('path')}' is not a directory")
    root = workspace_root(ctx)
    out: list[str] = []
    for match in base.glob(pattern):
        relative_parts = match.relative_to(base).parts
        if any(part in SKIP_DIRS for part in relative_parts):
            continue
        try:
            resolved = match.resolve()
        except OSError:
            continue
        if resolved != root and root not in resolved.parents:
            continue
        out.append(match.relative_to(root).as_posix())
        if len(out) >= MAX_GLOB_RESULTS:
            break
    return sorted(set(out))


def grep(args: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
    """``{pattern, path?, glob?, max_results?, ignore_case?}`` → ``[{path, line, text}]``.

    ``pattern`` is a Python regular expression searched per line; ``glob`` filters file names (or
    workspace-relative paths when it holds a ``/``); binary and very large files are skipped.
    Patterns run on the third-party ``regex`` engine (``re`` syntax) with a budget of
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
    base = resolve_path(ctx, path)
    root = workspace_root(ctx)
    if not base.exists():
        raise _err(f"'{path}' does not exist")
    files: list[Path]
    if base.is_file():
        files = [base]
    else:
        files = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in sorted(filenames):
                files.append(Path(dirpath) / name)
    out: list[dict[str, Any]] = []
    for file in files:
        relative = file.relative_to(root).as_posix() if root in file.parents else None
        if relative is None:
            continue
        if name_glob and not (
            fnmatch.fnmatchcase(file.name, name_glob) or fnmatch.fnmatchcase(relative, name_glob)
        ):
            continue
        try:
            resolved = file.resolve()
            if resolved != root and root not in resolved.parents:
                continue
            if resolved.stat().st_size > MAX_GREP_FILE_BYTES:
                continue
            data = resolved.read_bytes()
        except OSError:
            continue
        if b"\x00" in data[:8192]:
            continue
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
                text = (
                    line if len(line) <= MAX_GREP_LINE_CHARS else line[:MAX_GREP_LINE_CHARS] + "…"
                )
                out.append({"path": relative, "line": number, "text": text})
                if len(out) >= max_results:
                    return out
    return out


def write_file(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """``{path, content}`` → ``{path, bytes}``; creates parent directories; UTF-8."""
    path = _str_arg(args, "path")
    content = args.get("content")
    if not isinstance(content, str):
        raise _err("argument 'content' must be a string")
    target = check_writable(ctx, path)
    if target.is_dir():
        raise _err(f"'{path}' is a directory")
    data = content.encode("utf-8")
    _atomic_write(target, data, path)
    return {"path": rel(ctx, target), "bytes": len(data)}


def edit_file(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """``{path, old, new}`` → ``{path, replacements: 1}``: replace the one exact occurrence of ``old``.

    Refuses when ``old`` is absent or occurs more than once (add context to make it unique).
    """
    path = _str_arg(args, "path")
    old = args.get("old")
    new = args.get("new")
    if not isinstance(old, str) or not old:
        raise _err("argument 'old' must be a non-empty string")
    if not isinstance(new, str):
        raise _err("argument 'new' must be a string")
    target = check_writable(ctx, path)
    text = _read_text(target, path)
    count = text.count(old)
    if count == 0:
        raise _err(f"the text to replace was not found in '{path}' (it must match exactly)")
    if count > 1:
        raise _err(
            f"the text to replace occurs {count} times in '{path}'; include more surrounding text "
            "so it matches exactly once"
        )
    updated = text.replace(old, new, 1)
    _atomic_write(target, updated.encode("utf-8"), path)
    return {"path": rel(ctx, target), "replacements": 1}


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
