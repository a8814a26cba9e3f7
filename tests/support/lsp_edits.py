"""Applying an LSP server's text edits to a document, as an editor does (tests/lsp)."""

from __future__ import annotations

from typing import Any

from agentflow.lsp.positions import LineIndex


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
