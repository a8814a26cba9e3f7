"""``[tools] isolation = "process"``: user tools run in killable worker processes (issue 16).

A sync tool that holds the GIL (a catastrophic ``re`` pattern, a C extension) or an async one that
swallows cancellation cannot be stopped in a thread: a step ``timeout``, the deadline or Ctrl-C
would wait for it. With process isolation each ``user__*`` call is sent to a worker process
(started with ``spawn``, so it shares nothing with the run); when the call is cancelled the worker
is killed (SIGKILL) and replaced on the next call.

A worker imports the tool's module itself, from a *locator* — ``("spec", module spec, base
directory, function qualname)`` for ``[tools] modules``, ``("entry", "pkg.mod:attr")`` for entry
points, ``("module", "pkg.mod", qualname)`` for a function of an entry-point module — rebuilds
the tool with :func:`~agentflow.runtime.tools.user.function_tool` and calls it with the JSON
arguments and the :class:`ToolContext`; the result travels back as JSON-able data. Up to
:data:`MAX_WORKERS` calls run at once, each in its own worker; idle workers are reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import multiprocessing
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentflow.core.vocabulary import Code
from agentflow.errors import RunError
from agentflow.runtime.tools.user import function_tool, import_tool_module

#: Calls in flight at once (one worker process each).
MAX_WORKERS = 4

Locator = tuple[str, ...]


@dataclass
class _Worker:
    process: Any
    conn: Any
    busy: bool = False


@dataclass
class ProcessPool:
    """Worker processes for ``user__*`` calls (see the module docstring); :meth:`aclose` kills
    them all."""

    max_workers: int = MAX_WORKERS
    _idle: list[_Worker] = field(default_factory=list)
    _all: list[_Worker] = field(default_factory=list)
    _slots: asyncio.Semaphore | None = None
    _closed: bool = False

    def _spawn(self) -> _Worker:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_worker_main, args=(child,), daemon=True)
        process.start()
        child.close()
        worker = _Worker(process, parent)
        self._all.append(worker)
        return worker

    def _kill(self, worker: _Worker) -> None:
        with contextlib.suppress(Exception):
            worker.process.kill()
        with contextlib.suppress(Exception):
            worker.conn.close()
        with contextlib.suppress(ValueError):
            self._all.remove(worker)
        with contextlib.suppress(Exception):
            worker.process.join(0)

    async def call(self, name: str, locator: Locator, args: dict[str, Any], ctx: Any) -> Any:
        """Run tool ``name`` (found by ``locator``) with ``args`` in a worker; its JSON-able
        result. Cancelling the call kills the worker. Raises RunError (the tool's, or
        ``tool_error`` for any other exception, as a thread-run tool would give)."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_workers)
        async with self._slots:
            worker = self._idle.pop() if self._idle else None
            if worker is None or not worker.process.is_alive():
                if worker is not None:
                    self._kill(worker)
                worker = self._spawn()
            loop = asyncio.get_running_loop()
            ready = asyncio.Event()
            fd = worker.conn.fileno()
            try:
                worker.conn.send((name, locator, args, ctx))
                loop.add_reader(fd, ready.set)
                try:
                    while not worker.conn.poll():
                        if not worker.process.is_alive():
                            raise RunError(
                                Code.TOOL_ERROR,
                                f"{name}: the tool's worker process ended "
                                f"(exit code {worker.process.exitcode})",
                            )
                        ready.clear()
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(0.5):
                                await ready.wait()
                finally:
                    loop.remove_reader(fd)
                try:
                    outcome = worker.conn.recv()
                except (EOFError, OSError):
                    raise RunError(
                        Code.TOOL_ERROR, f"{name}: the tool's worker process ended"
                    ) from None
            except BaseException:
                self._kill(worker)  # cancelled (timeout, deadline, Ctrl-C) or broken: kill it
                if not self._closed:  # a replacement starts importing now, not at the next call
                    with contextlib.suppress(Exception):
                        self._idle.append(self._spawn())
                raise
            self._idle.append(worker)
        return _unpack(name, outcome)

    async def aclose(self) -> None:
        """Stop every worker (idle ones get EOF; all are killed if still running)."""
        self._closed = True
        for worker in list(self._all):
            with contextlib.suppress(Exception):
                worker.conn.send(None)
            self._kill(worker)
        self._idle.clear()


def _unpack(name: str, outcome: Any) -> Any:
    kind = outcome[0]
    if kind == "ok":
        return outcome[1]
    if kind == "run_error":
        raise RunError(outcome[1], outcome[2])
    _, type_name, message = outcome
    if type_name == "TimeoutError":
        raise TimeoutError(message)
    if type_name in ("ConnectionError", "ConnectionResetError", "ConnectionRefusedError"):
        raise ConnectionError(message)
    raise RunError(Code.TOOL_ERROR, f"{name}: {type_name}: {message}")


# --------------------------------------------------------------------------- the worker


def _resolve(locator: Locator) -> Any:
    """The function a locator names (imported in this worker)."""

    kind = locator[0]
    if kind == "spec":
        _, spec, base_dir, qualname = locator
        target: Any = import_tool_module(spec, Path(base_dir))
    elif kind == "module":
        _, module, qualname = locator
        target = importlib.import_module(module)
    else:  # "entry": "pkg.mod:attr.path"
        module, _, qualname = locator[1].partition(":")
        target = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _worker_main(conn: Any) -> None:
    """A worker process: serve calls until EOF or ``None``; each answer is ``("ok", value)``,
    ``("run_error", code, message)`` or ``("exception", type name, message)``."""

    with contextlib.suppress(Exception):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run decides; Ctrl-C is its to handle
    import pydantic  # noqa: F401 - imported while idle, not during the first call

    tools: dict[tuple[str, Locator], Any] = {}
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            break
        if message is None:
            break
        name, locator, args, ctx = message
        try:
            key = (name, locator)
            if key not in tools:
                prefix, _, short = name.partition("__")
                tools[key] = function_tool(
                    _resolve(locator), name=short, prefix=prefix, isolation="thread"
                )
            value = asyncio.run(tools[key].func(args, ctx))
            outcome: tuple[object, ...] = ("ok", value)
        except RunError as exc:
            outcome = ("run_error", exc.code, exc.message)
        except BaseException as exc:  # noqa: BLE001 - reported to the run as the tool's error
            outcome = ("exception", type(exc).__name__, str(exc))
        try:
            conn.send(outcome)
        except (OSError, ValueError):
            break
    with contextlib.suppress(Exception):
        conn.close()
    os._exit(0)
