"""The durable engines' own logs, kept off the terminal (docs/durable.md "DBOS's own log"): a
``logging`` handler writing to a file under ``.flowc/`` that is opened at the first message and
drops a message it cannot write, never reporting it on stderr."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

#: The format of a line of an engine's log file.
LOG_FORMAT = "%(asctime)s [%(levelname)s] (%(name)s:%(filename)s:%(lineno)s) %(message)s"


class LogFile(logging.FileHandler):
    """A file handler opened at the first message (its directory made then); a message that
    cannot be written is dropped, never reported on stderr."""

    def _open(self) -> Any:
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()

    def handleError(self, record: logging.LogRecord) -> None:
        pass


def log_handler(path: Path, name: str) -> LogFile:
    """A :class:`LogFile` for ``path`` named ``name`` (so it can be found and replaced), with
    :data:`LOG_FORMAT`."""
    handler = LogFile(path, encoding="utf-8", delay=True)
    handler.name = name
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    return handler
