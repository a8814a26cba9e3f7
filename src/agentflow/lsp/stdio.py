"""The language server's stdio plumbing: its log on stderr (one line a record, redacted) and
:class:`CheckedStdin`, the input pygls reads with the ``Content-Length`` header checked."""

from __future__ import annotations

import logging
import re
import sys
from typing import Any

from agentflow.core.redaction import RedactingStream, redact, register_environment

__all__ = ["CheckedStdin", "log_to_stderr"]

_log = logging.getLogger(__name__)


class _OneLine(logging.Formatter):
    """Log records as one line each — an exception as ``(Type: message)``, never a traceback —
    with every configured secret redacted (:mod:`agentflow.core.redaction`)."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"flowc lsp: {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc})"
        return redact(" ".join(text.split()))


def log_to_stderr() -> None:
    """The server's (and pygls') log: warnings and errors on stderr, one line each, redacted."""
    register_environment()
    handler = logging.StreamHandler(RedactingStream(sys.stderr))
    handler.setFormatter(_OneLine())
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(logging.WARNING)


#: the header pygls reads (pygls/io_.py ``CONTENT_LENGTH_PATTERN``)
_LENGTH = re.compile(rb"Content-Length: (\d+)\r\n")
_LENGTH_NAME = re.compile(rb"\s*content-length\s*:", re.IGNORECASE)


class CheckedStdin:
    """``stdin`` as pygls reads it (``readline``, ``read(n)``), with the ``Content-Length``
    header checked: pygls ignores a malformed one (``Content-Length: abc``) and then takes the
    message's body and every later message for headers, serving nothing until the client
    gives up.  Here a malformed header is logged (one line on stderr) and the input skipped up
    to the next well-formed ``Content-Length`` header, so the next message is served (its body
    may follow the skipped one's without a line break)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def readline(self, *args: Any) -> bytes:
        """The next header line; a malformed ``Content-Length`` is logged and skipped."""
        line: bytes = self.raw.readline(*args)
        if not _LENGTH_NAME.match(line) or _LENGTH.fullmatch(line):
            return line
        shown = line.strip().decode("utf-8", "replace")[:80]
        _log.error(
            "malformed LSP header %r (expected `Content-Length: <bytes>`): that message is skipped",
            shown,
        )
        while True:
            line = self.raw.readline(*args)
            if not line:
                return line
            found = list(_LENGTH.finditer(line))
            if found and found[-1].end() == len(line):
                return line[found[-1].start() :]

    def read(self, n: int = -1) -> bytes:
        """``n`` bytes of a message body."""
        data: bytes = self.raw.read(n)
        return data
