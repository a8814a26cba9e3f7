"""An editor's side of an LSP session in tests (tests/lsp): opening a document and waiting for
its first diagnostics, and applying a server's text edits as an editor does."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentflow.lsp.client import LspClient
from agentflow.lsp.positions import LineIndex


def opened(client: LspClient, uri: str, text: str) -> list[dict[str, Any]]:
    """Open ``text`` as ``uri`` and return the diagnostics the server publishes for it first
    (within 30 s; the client raises past that)."""
    client.open(uri, text)
    got = client.wait_notification(
        "textDocument/publishDiagnostics", lambda p: p["uri"] == uri, timeout=30
    )
    diagnostics: list[dict[str, Any]] = got["diagnostics"]
    return diagnostics


@contextmanager
def editing(
    root: Path, files: dict[str, str], main: str = "main.flow"
) -> Iterator[tuple[LspClient, str]]:
    """Write ``files`` (name → text) under ``root``, start ``agentflow lsp`` (no debounce) and
    open ``main``, asserting the server finds no errors in it; yield the client and ``main``'s
    URI, and close the client after."""
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    try:
        c.initialize(options={"debounce_ms": 0})
        uri = (root / main).as_uri()
        assert errors(opened(c, uri, files[main])) == []
        yield c, uri
    finally:
        c.close()


def position(text: str, needle: str, delta: int = 0) -> dict[str, int]:
    """The LSP position (UTF-16) ``delta`` characters past the first ``needle`` in ``text``."""
    line, char = LineIndex(text, "utf-16").position(text.index(needle) + delta)
    return {"line": line, "character": char}


def errors(diagnostics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The errors (severity 1) among ``diagnostics``."""
    return [d for d in diagnostics if d["severity"] == 1]


def applied(edits: list[dict[str, Any]], text: str) -> str:
    """``text`` with ``edits`` (LSP ``TextEdit``s: ``range`` in UTF-16 positions, ``newText``)
    applied, the last first so earlier ranges keep their offsets."""
    index = LineIndex(text, "utf-16")
    out = text
    for e in sorted(
        edits,
        key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
        reverse=True,
    ):
        r = e["range"]
        start = index.offset(r["start"]["line"], r["start"]["character"])
        end = index.offset(r["end"]["line"], r["end"]["character"])
        out = out[:start] + e["newText"] + out[end:]
    return out
