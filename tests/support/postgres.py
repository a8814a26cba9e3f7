"""A throwaway PostgreSQL server for tests: the distribution's binaries
(``/usr/lib/postgresql/*/bin``; ``apt-get install postgresql``, done by
scripts/system-packages.sh), ``initdb`` in a temporary directory, ``postgres`` on a free
loopback port, trust authentication for one user.  As root the server runs as the ``postgres``
system user (PostgreSQL refuses to run as root).  Anything that stops it from starting raises
:class:`PostgresUnavailable` naming what is missing: tests that need it fail loudly.

    with PostgresServer() as pg:
        url = pg.url  # postgresql://agentflow@127.0.0.1:PORT/agentflow
        other = pg.new_database("t2")  # another, empty database on the same server
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


class PostgresUnavailable(RuntimeError):
    """PostgreSQL could not be started (what is missing is in the message)."""


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if not found:
        raise PostgresUnavailable(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres): "
            "apt-get install -y postgresql (scripts/system-packages.sh does it)"
        )
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One PostgreSQL server in ``directory`` (a context manager; see the module doc)."""

    def __init__(
        self, directory: Path | None = None, user: str = "agentflow", *, fsync: bool = False
    ):
        self.bin = _bin_dir()
        # a directory of its own under the system's temporary directory: pytest resets the
        # mode of its own base directory (0700) when any pytest session starts, which would
        # lock the server (another user, as root) out of its files mid-run
        self.directory = Path(tempfile.mkdtemp(prefix="agentflow-pg-")) / "pg"
        self.user = user
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None
        self.as_root = os.geteuid() == 0
        #: the server's ``fsync`` (off for tests; on for a benchmark's figures)
        self.fsync = fsync

    @property
    def url(self) -> str:
        """The SQLAlchemy URL of the test database."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{self.user}"

    def _cmd(self, *argv: str) -> list[str]:
        if not self.as_root:
            return list(argv)
        runuser = shutil.which("runuser") or "/usr/sbin/runuser"
        return [runuser, "-u", "postgres", "--", *argv]

    def start(self) -> PostgresServer:
        """initdb, start the server, create the database; raises PostgresUnavailable."""
        self.directory.mkdir(parents=True)
        data = self.directory / "data"
        if self.as_root:
            shutil.chown(self.directory, "postgres", "postgres")
            os.chmod(self.directory.parent, 0o755)
        init = subprocess.run(
            self._cmd(str(self.bin / "initdb"), "-D", str(data), "-U", self.user,
                      "--auth=trust", "--no-sync", "-E", "UTF8"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        if init.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {init.stderr.strip()[-2000:]}")
        log = self.directory / "server.log"
        self.proc = subprocess.Popen(
            self._cmd(str(self.bin / "postgres"), "-D", str(data), "-h", "127.0.0.1",
                      "-p", str(self.port), "-k", str(self.directory), "-c", f"fsync={'on' if self.fsync else 'off'}",
                      "-c", "max_connections=200"),
            stdout=subprocess.DEVNULL, stderr=log.open("w"),
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = log.read_text()
                raise PostgresUnavailable(f"postgres exited: {err.strip()[-2000:]}")
            ready = subprocess.run(
                [str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                capture_output=True,
            )
            if ready.returncode == 0:
                break
            time.sleep(0.2)
        else:
            self.stop()
            raise PostgresUnavailable("postgres did not accept connections within 60 s")
        try:
            self.new_database(self.user)
        except PostgresUnavailable:
            self.stop()
            raise
        return self

    def new_database(self, name: str) -> str:
        """Create the empty database ``name`` on this server; returns its SQLAlchemy URL.
        Raises PostgresUnavailable when ``createdb`` fails (a name already taken)."""
        made = subprocess.run(
            [str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
             "-U", self.user, name],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if made.returncode != 0:
            raise PostgresUnavailable(f"createdb failed: {made.stderr.strip()}")
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        """Stop the server (fast shutdown) and wait for it."""
        if self.proc is None:
            shutil.rmtree(self.directory.parent, ignore_errors=True)
            return
        self._fast_shutdown()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
        shutil.rmtree(self.directory.parent, ignore_errors=True)

    def _fast_shutdown(self) -> None:
        """SIGINT to the postmaster: PostgreSQL's fast shutdown (open sessions are ended). A
        SIGTERM is its smart shutdown, which waits for every client to leave; and as root the
        process started is ``runuser``, which passes a SIGTERM on and then waits 2 s before it
        kills the server: every stop took 2 s. Without the postmaster's pid (no pid file yet),
        the process started is terminated as before."""
        assert self.proc is not None
        try:
            pid = int((self.directory / "data" / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGINT)
        except (OSError, ValueError, IndexError):
            self.proc.terminate()

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
