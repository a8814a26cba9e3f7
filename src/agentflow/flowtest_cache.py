"""``flowc test``'s cache of passed tests (docs/reference/testing.md "Running"): the
``.flowc-cache`` directory (:class:`_Cache`), keyed by the agentflow build (:func:`_build`), the
file, the files it imports, the cassettes it replays and its directory's files."""

from __future__ import annotations

import functools
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from agentflow.compiler.imports import file_key
from agentflow.core import version as core_version
from agentflow.runtime.config import find_config

#: files a cache key looks at in a flow's directory, at most (beyond: the file is not cached)
_CACHE_MAX_FILES = 2000
#: what the cache key leaves out of a flow's directory
_CACHE_SKIP = ("__pycache__",)
_REPLAY_LINE = re.compile(r'^[ \t]*replay[ \t]+"([^"\n]*)"', re.M)
#: an ``import { … } from "PATH"`` item (docs/reference/programs.md "import")
_IMPORT_LINE = re.compile(r'^[ \t]*import[ \t]*\{[^}]*\}[ \t\n]*from[ \t]+"([^"\n]*)"', re.M)


def _imported_files(file: Path, text: str, seen: set[Path]) -> list[Path]:
    """The files ``text`` (of ``file``) imports, transitively (those that can be read)."""
    out = []
    for written in _IMPORT_LINE.findall(text):
        path = file_key(file.parent / written)  # a symlink loop too (never raises)
        if path in seen:
            continue
        seen.add(path)
        try:
            inner = path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            continue
        out.append(path)
        out.extend(_imported_files(path, inner, seen))
    return out


def _config_files(file: Path) -> list[Path]:
    """The ``flow.toml`` a run of ``file`` reads (the nearest upward, wherever it is) and the
    Python files its ``[tools] modules`` name (``tools.py``, or ``pkg.tools`` as
    ``pkg/tools.py`` / ``pkg/tools/__init__.py``, beside it): a test that calls a real tool
    depends on them.  A file that cannot be read or parsed adds nothing more."""
    config = find_config(file)
    if config is None:
        return []
    try:
        modules = tomllib.loads(config.read_text(encoding="utf-8")).get("tools", {}).get("modules")
    except (OSError, ValueError, AttributeError):
        return [config]
    out = [config]
    for name in modules if isinstance(modules, list) else []:
        if not isinstance(name, str):
            continue
        dotted = name.replace(".", "/")
        for candidate in (name, f"{dotted}.py", f"{dotted}/__init__.py"):
            path = config.parent / candidate
            if candidate.endswith(".py") and path.is_file():
                out.append(path)
                break
    return out


@functools.cache
def _build() -> str:
    """A fingerprint of the agentflow that runs the tests: the SHA-256 of the name and contents
    of every file of the installed package (``__pycache__`` aside) — the compiler and runtime
    themselves, so an upgrade or an edit of an editable install runs every test again even when
    the version number stays (docs/reference/testing.md "Running"). Computed once per process
    (some 200 files, 7 MB: tens of milliseconds); a file that cannot be read counts as missing."""
    import hashlib

    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).parts
        if "__pycache__" in rel or not path.is_file():
            continue
        h.update("/".join(rel).encode("utf-8", "surrogatepass") + b"\0")
        try:
            h.update(hashlib.sha256(path.read_bytes()).digest())
        except OSError:
            h.update(b"missing\0")
    return h.hexdigest()


class _Cache:
    """The ``.flowc-cache`` directory: ``tests/<key>.json`` per `.flow` file state, holding
    its test names and the tests that passed (``{name: {line, runs}}``). The key is the SHA-256
    of the agentflow version and build (:func:`_build`), the file's path and text, the contents of the cassettes it
    replays, of the files it imports, of its flow.toml and the tool modules that names
    (:func:`_config_files`), and the name, size and modification time of every file under its directory
    (hidden ones and ``__pycache__`` left out): a change to any of them runs its tests again."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def key(self, file: Path, text: str) -> str | None:
        """The cache key of ``file`` with source ``text``; None when it cannot be cached."""
        import hashlib

        h = hashlib.sha256()
        base = file.parent.resolve()
        for part in (core_version.__version__, _build(), str(file.resolve()), text):
            h.update(part.encode("utf-8", "surrogatepass") + b"\0")
        for cassette in _REPLAY_LINE.findall(text):
            try:
                h.update(hashlib.sha256((base / cassette).read_bytes()).digest())
            except OSError:
                h.update(b"missing\0")
        for imported in [
            *_imported_files(file, text, {file_key(file)}),  # their texts
            *_config_files(file),  # the flow.toml found for it, the tool modules it names
        ]:
            try:
                h.update(hashlib.sha256(imported.read_bytes()).digest())
            except OSError:
                h.update(b"missing\0")
        count = 0
        try:
            for path in sorted(base.rglob("*")):
                rel = path.relative_to(base).parts
                if any(p.startswith(".") or p in _CACHE_SKIP for p in rel):
                    continue
                count += 1
                if count > _CACHE_MAX_FILES:
                    return None
                st = path.stat()
                h.update(f"{'/'.join(rel)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        except OSError:
            return None
        return h.hexdigest()

    def load(self, key: str) -> dict[str, Any] | None:
        """The record of ``key`` or None (none, or unreadable)."""
        try:
            data = json.loads((self.root / "tests" / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        ok = isinstance(data, dict) and isinstance(data.get("tests"), list)
        return data if ok and isinstance(data.get("passed"), dict) else None

    def save(self, key: str, shown: str, tests: list[str], passed: dict[str, Any]) -> None:
        """Remember ``passed`` for ``key``; a directory that cannot be written is left alone."""
        try:
            folder = self.root / "tests"
            folder.mkdir(parents=True, exist_ok=True)
            ignore = self.root / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# made by flowc test\n*\n", encoding="utf-8")
            record = {"file": shown, "tests": tests, "passed": passed}
            tmp = folder / f"{key}.json.{os.getpid()}"
            tmp.write_text(json.dumps(record), encoding="utf-8")
            tmp.replace(folder / f"{key}.json")
        except OSError:
            pass
