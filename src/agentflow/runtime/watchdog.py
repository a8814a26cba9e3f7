"""The last resort that ends a ``flowc`` run which cannot stop itself (issue 16).

A run stops cooperatively: at its deadline the step in flight is cancelled, and a step that has
not unwound within :data:`~agentflow.runtime.interrupt.CANCEL_GRACE_S` is abandoned; SIGINT /
SIGTERM stop it the same way (:mod:`agentflow.runtime.interrupt`). That needs the event loop to
run. A sync tool that holds the GIL (stdlib ``re`` backtracking, a C extension) freezes it: no
timer fires, no signal handler runs.

So the CLI starts a small *watchdog process* (a fresh interpreter, ``python -I -S``) next to the
run. The run tells it its deadline over a pipe; SIGINT and SIGTERM reach it through
:mod:`faulthandler`, whose C-level signal handler needs no GIL: it writes a one-line stack dump
to a non-blocking pipe the watchdog reads, then chains to the usual handler. The run's event loop
sends a heartbeat every :data:`BEAT_S`. When the deadline has passed by :data:`GRACE_S`, or
:data:`GRACE_S` after a SIGTERM or a second SIGINT, and no heartbeat has come for
:data:`FROZEN_S` (a live loop is ending the run itself), the watchdog kills it (SIGKILL: nothing
in the process can run any more; the trace, flushed after every event, is complete up to the
stuck call) and then says so on stderr. The kill comes first: stderr may be a closed or full
pipe, and a notice that cannot be written must never keep the run alive (issue 28). When the
run ends normally the pipe closes and the watchdog exits.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import subprocess
import sys
import time
from typing import IO

#: Seconds after the deadline, a SIGTERM or a second SIGINT before the watchdog ends the process —
#: if by then the run's event loop has not run for :data:`FROZEN_S` (it sends a heartbeat every
#: :data:`BEAT_S` while it runs): a live loop is stopping the run itself (closing connections,
#: printing the partial result), only a frozen one is ended from outside.
GRACE_S = 2.0
FROZEN_S = 1.0
BEAT_S = 0.25

_CHILD = r"""
import os, select, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
parent, ctl, sint, sterm = (int(a) for a in sys.argv[1:5])
grace, frozen_s = float(sys.argv[5]), float(sys.argv[6])
deadline = None
kill_at = None
why = ""
sigints = 0
pending = b""
last_beat = time.monotonic()
while True:
    now = time.monotonic()
    due = [t for t in (deadline + grace if deadline is not None else None, kill_at) if t is not None]
    wake = min(due) if due else None
    if wake is not None and wake <= now:  # due, but the loop is alive: look again once it is not
        wake = last_beat + frozen_s
    timeout = None if wake is None else max(0.0, wake - now)
    ready, _, _ = select.select([ctl, sint, sterm], [], [], timeout)
    now = time.monotonic()
    if ctl in ready:
        data = os.read(ctl, 65536)
        if not data:
            sys.exit(0)
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line == b"beat":
                last_beat = now
            elif line.startswith(b"deadline "):
                deadline = float(line.split()[1])
            elif line == b"clear":
                deadline = None
    if sint in ready:
        sigints += os.read(sint, 65536).count(b"most recent call first")
        if sigints >= 2 and kill_at is None:
            kill_at, why = now + grace, "a second Ctrl-C"
    if sterm in ready:
        os.read(sterm, 65536)
        if kill_at is None:
            kill_at, why = now + grace, "SIGTERM"
    late = deadline is not None and now >= deadline + grace
    frozen = now - last_beat >= frozen_s
    if frozen and (late or (kill_at is not None and now >= kill_at)):
        try:
            os.kill(parent, 0)
        except OSError:
            sys.exit(0)
        what = "its deadline" if late else why
        # the kill first: the notice goes to the run's stderr, which may be a closed pipe or a
        # full one; a write that fails (or blocks) must never keep the run alive
        try:
            os.kill(parent, signal.SIGKILL)
        except OSError:
            pass
        try:
            signal.alarm(2)  # a full pipe nobody reads: the watchdog still ends
            os.write(2, ("flowc: the run did not stop within %gs of %s (a tool or a computation "
                         "is holding the interpreter); ended it\n" % (grace, what)).encode())
        except OSError:
            pass
        os._exit(0)
"""


class Watchdog:
    """The watchdog process of one CLI run (see the module docstring). :meth:`start` spawns it
    and routes SIGINT/SIGTERM to it; :meth:`push_deadline` / :meth:`pop_deadline` set and drop a
    run's deadline (``time.monotonic()`` seconds, the same clock in every process); :meth:`stop`
    ends it. Every method is
    a no-op when the watchdog could not start (no ``select``/``faulthandler`` support)."""

    def __init__(self, grace: float = GRACE_S) -> None:
        self.grace = grace
        self._proc: subprocess.Popen[bytes] | None = None
        self._ctl: int | None = None
        self._dumps: list[IO[bytes]] = []
        self._registered: list[int] = []
        self._deadlines: list[float] = []

    def start(self) -> None:
        """Spawn the watchdog and register the SIGINT/SIGTERM stack dumps (call after the run's
        own signal handlers are installed: faulthandler chains to them)."""
        if self._proc is not None:
            return
        ctl_r, ctl_w = os.pipe()
        fds = [ctl_r]
        try:
            pipes = {}
            for signum in (signal.SIGINT, signal.SIGTERM):
                r, w = os.pipe()
                os.set_blocking(w, False)  # a dump must never block the signal handler
                fds.append(r)
                pipes[signum] = w
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    "-c",
                    _CHILD,
                    str(os.getpid()),
                    *(str(fd) for fd in fds),
                    str(self.grace),
                    str(FROZEN_S),
                ],
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
        except OSError:
            for fd in (*fds, ctl_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            return
        for fd in fds:
            os.close(fd)
        os.set_blocking(ctl_w, False)  # a heartbeat is dropped rather than ever blocking the loop
        self._ctl = ctl_w
        for signum, w in pipes.items():
            dump = os.fdopen(w, "wb", buffering=0)
            self._dumps.append(dump)
            try:
                faulthandler.register(signum, file=dump, all_threads=False, chain=True)
            except (RuntimeError, ValueError, OSError):  # pragma: no cover - platform
                continue
            self._registered.append(signum)

    def _send(self, line: str) -> None:
        if self._ctl is not None:
            with contextlib.suppress(OSError):
                os.write(self._ctl, (line + "\n").encode())

    def beat(self) -> None:
        """The event loop is alive (called every :data:`BEAT_S` seconds by the loop)."""
        self._send("beat")

    def push_deadline(self, at: float) -> None:
        """A run with deadline ``at`` (``time.monotonic()`` seconds) starts (runs nest: a plan
        called as a tool; the earliest deadline counts)."""
        self._deadlines.append(at)
        self._send(f"deadline {min(self._deadlines)!r}")

    def pop_deadline(self) -> None:
        """The run that pushed the last deadline is over."""
        if self._deadlines:
            self._deadlines.pop()
        self._send(f"deadline {min(self._deadlines)!r}" if self._deadlines else "clear")

    def stop(self) -> None:
        """Unregister the dumps and let the watchdog exit (it sees the pipe close)."""
        for signum in self._registered:
            with contextlib.suppress(Exception):
                faulthandler.unregister(signum)
        self._registered.clear()
        if self._ctl is not None:
            with contextlib.suppress(OSError):
                os.close(self._ctl)
            self._ctl = None
        for dump in self._dumps:
            with contextlib.suppress(OSError):
                dump.close()
        self._dumps.clear()
        self._proc = None  # it exits by itself on the closed pipe: never waited for here


def now() -> float:
    """The clock deadlines are given in (``time.monotonic()``)."""
    return time.monotonic()


__all__ = ["GRACE_S", "Watchdog", "now"]
