"""Position conversion between `.flow` spans and LSP positions.

Spans (``agentflow.core.spans.Span``) count lines from 1 and columns in Unicode code points
from 1; ``start``/``end`` are code-point offsets.  LSP positions count both from 0, with
``character`` in the *negotiated* encoding: UTF-16 code units (the default, which counts a
non-BMP character such as 😀 as two), UTF-8 bytes or UTF-32 code points (LSP 3.17
``positionEncoding``).  Lines are split at ``\\n`` only, as the parser does (a ``\\r`` before
it belongs to the line and never precedes a column we convert).
"""

from __future__ import annotations

import bisect

__all__ = ["LineIndex", "UTF8", "UTF16", "UTF32"]

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"


def _units(s: str, encoding: str) -> int:
    if encoding == UTF32:
        return len(s)
    if encoding == UTF8:
        return len(s.encode("utf-8", errors="surrogatepass"))
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


class LineIndex:
    """Line starts of one text, for offset ↔ (line, character) conversion.

    ``encoding`` is ``"utf-16"`` (default), ``"utf-8"`` or ``"utf-32"``.
    """

    def __init__(self, text: str, encoding: str = UTF16) -> None:
        self.text = text
        self.encoding = str(encoding)
        self.starts = [0]
        i = text.find("\n")
        while i >= 0:
            self.starts.append(i + 1)
            i = text.find("\n", i + 1)

    def line_text(self, line: int) -> str:
        """The text of 0-based ``line`` without its ``\\n`` (``""`` past the end)."""
        if line < 0 or line >= len(self.starts):
            return ""
        end = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[line] : end]

    def position(self, offset: int) -> tuple[int, int]:
        """Code-point ``offset`` → 0-based ``(line, character)`` in the encoding."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        return line, _units(self.text[self.starts[line] : offset], self.encoding)

    def span_position(self, line1: int, column1: int) -> tuple[int, int]:
        """1-based span ``(line, column)`` (code points) → 0-based LSP ``(line, character)``."""
        line = max(0, line1 - 1)
        text = self.line_text(line)
        return line, _units(text[: max(0, column1 - 1)], self.encoding)

    def offset(self, line: int, character: int) -> int:
        """0-based LSP ``(line, character)`` → code-point offset (clamped to the line; a
        position inside a surrogate pair or a UTF-8 sequence maps to the character's start)."""
        if line < 0:
            return 0
        if line >= len(self.starts):
            return len(self.text)
        text = self.line_text(line)
        if self.encoding == UTF32:
            return self.starts[line] + min(character, len(text))
        units = 0
        for idx, ch in enumerate(text):
            w = _units(ch, self.encoding)
            if units + w > character:
                return self.starts[line] + idx
            units += w
        return self.starts[line] + len(text)
