"""A process on a real pseudo-terminal, for tests of what a person at a terminal sees.

:class:`Terminal` starts a command with its stdin, stdout and stderr on the slave side of a pty
(``os.openpty``), reads everything it writes on a thread, and lets a test wait for a pattern in
that output (:meth:`Terminal.expect`, ANSI escape sequences removed) and type a line
(:meth:`Terminal.send`). Nothing is faked: the process sees ``isatty()`` true, rich draws its live
view, and a line typed is read from the terminal's line discipline.
"""

from __future__ import annotations

import codecs
import fcntl
import os
import re
import signal
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: CSI / OSC escape sequences and the other controls rich writes (cursor moves, colours, titles)
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\r")


#: the output as tokens for :meth:`Terminal.screen`: a CSI sequence (``csi``: its parameters and
#: final byte), another escape sequence, or a run of text
_TOKENS = re.compile(
    r"(?P<csi>\x1b\[\??([0-9;]*)[ -/]*([@-~]))|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
    r"|(?P<text>[^\x1b]+)"
)


def plain(text: str) -> str:
    """``text`` without terminal escape sequences and carriage returns."""
    return ANSI.sub("", text)


class Terminal:
    """``argv`` running on a pseudo-terminal of ``cols`` × ``rows``; ``stdout``: a file to send
    stdout to instead of the terminal (the run's JSON output, kept apart from the progress)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | Path,
        env: dict[str, str] | None = None,
        cols: int = 120,
        rows: int = 40,
        stdout: Any = None,
    ) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        environ = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(cols), **(env or {})}
        environ.pop("NO_COLOR", None)
        try:
            self.proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=environ,
                stdin=slave,
                stdout=stdout if stdout is not None else slave,
                stderr=slave,
                start_new_session=True,
            )
        finally:
            os.close(slave)
        self._master = master
        self._buf = bytearray()
        #: the plain text so far, kept as the output comes (matching the whole raw output again
        #: at each chunk is quadratic: a live view redraws itself many times a second)
        self._plain: list[str] = []
        self._carry = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._cond = threading.Condition()
        self._eof = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:  # EIO: every slave descriptor is closed (the process ended)
                chunk = b""
            with self._cond:
                if not chunk:
                    self._eof = True
                    self._cond.notify_all()
                    return
                self._buf += chunk
                self._add_plain(self._decoder.decode(chunk))
                self._cond.notify_all()

    def _add_plain(self, text: str) -> None:
        text = self._carry + text
        self._carry = ""
        esc = text.rfind("\x1b")
        if esc != -1 and len(text) - esc < 64 and not ANSI.match(text, esc):
            text, self._carry = text[:esc], text[esc:]  # an escape sequence cut by the read
        self._plain.append(plain(text))

    def _plain_text(self) -> str:
        if len(self._plain) > 1:
            self._plain[:] = ["".join(self._plain)]
        return self._plain[0] if self._plain else ""

    @property
    def raw(self) -> str:
        """Everything written to the terminal so far, escape sequences included."""
        with self._cond:
            return self._buf.decode("utf-8", "replace")

    @property
    def text(self) -> str:
        """Everything written to the terminal so far, as :func:`plain` text."""
        with self._cond:
            return self._plain_text()

    def screen(self) -> list[str]:
        """The lines a person would see now: the raw output played on a small screen model —
        printable text, ``\\r``, ``\\n``, cursor up/down/column (``CSI n A/B/G``) and erase in line
        (``CSI n K``), which is what rich's live view uses to redraw itself over its last frame.
        A line written where the view redraws is gone, as on a real terminal. No wrapping, no
        scrolling region: the screen is as long as the output."""
        lines: list[list[str]] = [[]]
        row = col = 0
        for token in _TOKENS.finditer(self.raw):
            text, csi, args, op = (
                token.group("text"),
                token.group("csi"),
                token.group(2),
                token.group(3),
            )
            if csi:
                n = int(args) if args and args.isdigit() else None
                if op == "A":
                    row = max(0, row - (n or 1))
                elif op == "B":
                    row += n or 1
                elif op == "G":
                    col = (n or 1) - 1
                elif op == "K":
                    while len(lines) <= row:
                        lines.append([])
                    line = lines[row]
                    if n == 2:
                        line.clear()
                    elif n == 1:
                        line[: col + 1] = [" "] * min(col + 1, len(line))
                    else:
                        del line[col:]
                continue
            if text is None:
                continue  # another escape sequence: colours, cursor shown or hidden
            for ch in text:
                if ch == "\r":
                    col = 0
                elif ch == "\n":
                    row, col = row + 1, 0
                elif ch >= " ":
                    while len(lines) <= row:
                        lines.append([])
                    line = lines[row]
                    line.extend(" " * (col - len(line)))
                    if col < len(line):
                        line[col] = ch
                    else:
                        line.append(ch)
                    col += 1
        return ["".join(line).rstrip() for line in lines]

    def expect(self, pattern: str, timeout: float = 30.0, start: int = 0) -> re.Match[str]:
        """Wait until the regular expression ``pattern`` matches the plain text from character
        ``start`` on; the match (its ``end()`` is a ``start`` for the next wait). Raises
        ``AssertionError`` with the text so far after ``timeout`` seconds or at end of output."""
        rx = re.compile(pattern)
        end = time.monotonic() + timeout
        with self._cond:
            while True:
                found = rx.search(self._plain_text(), start)
                if found:
                    return found
                left = end - time.monotonic()
                if left <= 0 or self._eof:
                    why = "output ended" if self._eof else f"{timeout}s passed"
                    text = self._plain_text()[-5000:]
                    raise AssertionError(f"{why} without {pattern!r}; the terminal showed:\n{text}")
                self._cond.wait(min(left, 0.5))

    def send(self, line: str) -> None:
        """Type ``line`` and Enter."""
        os.write(self._master, (line + "\r").encode())

    def wait(self, timeout: float = 30.0) -> int:
        """Wait for the process to end (and its output to be read); its exit code. Raises
        ``subprocess.TimeoutExpired`` after ``timeout`` seconds (the process is left running)."""
        code = self.proc.wait(timeout=timeout)
        with self._cond:
            self._cond.wait_for(lambda: self._eof, timeout=5)
        return code

    def close(self) -> None:
        """Kill the process group if still running and release the terminal."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
        self._reader.join(timeout=5)
        try:
            os.close(self._master)
        except OSError:
            pass

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
