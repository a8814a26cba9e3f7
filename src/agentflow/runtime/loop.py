"""The event loop agentflow runs on when it owns the loop (``run_sync``, ``flowc run``, ``flowc ask``).

Why not the stock loop: on Linux, asyncio's default selector is epoll, and ``epoll_wait`` takes its
timeout in whole milliseconds, rounded *up*.  Every ``asyncio.sleep(0.01)`` therefore wakes up to
1 ms late, plus the kernel's wake-up latency (≈ 0.15–0.2 ms on the 2-core VMs we measure on).  A
``map`` whose items wait on timers chains those overshoots: 100 sequential 10 ms waits per worker
came out 10–12 % over the ideal with the stock loop (``bench/map_throughput.py``).

:class:`PreciseSelector` keeps epoll for readiness (no ``FD_SETSIZE`` limit on the descriptors it
watches) but sleeps with ``select()`` on the single epoll descriptor, whose timeout has microsecond
resolution, then collects the ready events with a non-blocking ``epoll_wait``.  To absorb the wake-up
latency it stops sleeping :data:`SPIN_S` (200 µs) before a due timer and polls until the timer is
due: at most 200 µs of CPU per timer wake-up, nothing while the loop waits on I/O with no timer near
(e.g. a model call).  Measured effect: the bare-asyncio floor of that benchmark drops from ≈ 1.11×
to ≈ 1.02×.

Set ``AGENTFLOW_EVENT_LOOP=asyncio`` to use the stock loop instead (``default``, ``stock``, ``0``,
``off``, ``false``, ``no``, ``none`` mean the same; ``agentflow``, ``precise``, ``1``, ``on``,
``true``, ``yes`` or unset select this loop; any other value warns and falls back to the stock
loop).  Callers of the async API (:func:`agentflow.run`) run on their own loop; nothing here
touches it.  Off Linux (kqueue takes float timeouts already; Windows uses the proactor) the stock
loop is used.

:func:`run` also gives the loop a default executor (``asyncio.to_thread``,
``loop.run_in_executor(None, …)``, ``loop.getaddrinfo``) of daemon threads that the end of the run
does not wait for: a thread abandoned by a step timeout or the plan deadline (it cannot be stopped)
no longer holds ``run_sync`` / ``flowc run`` open until it finishes, as it would with
``asyncio.run``.  Its result is dropped, as with tools run by ``run_in_daemon_thread``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import queue
import select
import selectors
import signal
import threading
import warnings
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = [
    "SPIN_S",
    "DaemonThreadExecutor",
    "PreciseSelector",
    "StopRequest",
    "new_event_loop",
    "run",
    "stop_request",
]

T = TypeVar("T")

#: How long before a due timer the loop stops sleeping and polls instead (seconds).
SPIN_S = 0.0002

#: select() cannot watch a descriptor at or above this number (FD_SETSIZE on Linux).
_FD_SETSIZE = 1024

_Base: type[selectors.BaseSelector] = getattr(selectors, "EpollSelector", selectors.DefaultSelector)


class PreciseSelector(_Base):  # type: ignore[misc,valid-type]
    """An epoll selector whose timeouts have microsecond resolution (see the module docstring).

    ``select(timeout)`` returns the same ``[(SelectorKey, events)]`` list as
    :class:`selectors.EpollSelector`; ``timeout`` is in seconds (``None`` blocks, ``<= 0`` polls).
    If the epoll descriptor cannot be passed to ``select()`` (number ≥ 1024) it behaves exactly
    like the stock selector.
    """

    def __init__(self) -> None:
        super().__init__()
        self._precise = self.fileno() < _FD_SETSIZE

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is not None and timeout > 0 and self._precise:
            if timeout > SPIN_S:
                try:
                    # readable as soon as any watched descriptor is ready; µs timeout
                    select.select([self.fileno()], [], [], timeout - SPIN_S)
                except (ValueError, OSError):
                    self._precise = False
                    return super().select(timeout)
            timeout = 0  # collect what is ready (or spin toward a timer due within SPIN_S)
        return super().select(timeout)


#: ``AGENTFLOW_EVENT_LOOP`` values (lower-cased, stripped) selecting each loop.
_STOCK_VALUES = frozenset({"asyncio", "default", "stock", "0", "off", "false", "no", "none"})
_PRECISE_VALUES = frozenset({"", "agentflow", "precise", "1", "on", "true", "yes"})
_WARNED: dict[Any, Any] = {}  # warnings registry: an odd value is reported once per process


def _precise_available() -> bool:
    raw = os.environ.get("AGENTFLOW_EVENT_LOOP", "")
    value = raw.strip().lower()
    if value in _STOCK_VALUES:
        return False
    if value not in _PRECISE_VALUES:
        warnings.warn_explicit(  # located at the variable, not at asyncio's code calling us
            f"AGENTFLOW_EVENT_LOOP={raw!r} is not understood (use 'asyncio' for the stock asyncio "
            "loop, 'agentflow' for agentflow's own); using the stock asyncio loop",
            RuntimeWarning,
            filename="AGENTFLOW_EVENT_LOOP",
            lineno=0,
            registry=_WARNED,
        )
        return False
    return hasattr(selectors, "EpollSelector") and hasattr(select, "select")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop for a run agentflow owns: a ``SelectorEventLoop`` over
    :class:`PreciseSelector` on Linux, the stock ``asyncio.new_event_loop()`` elsewhere or when
    ``AGENTFLOW_EVENT_LOOP=asyncio``."""
    if not _precise_available():
        return asyncio.new_event_loop()
    return asyncio.SelectorEventLoop(PreciseSelector())


class DaemonThreadExecutor(concurrent.futures.ThreadPoolExecutor):
    """The default executor of the loops :func:`run` drives: up to ``max_workers`` *daemon*
    worker threads (default as ``ThreadPoolExecutor``: ``min(32, cpu_count + 4)``), started on
    demand, and a :meth:`shutdown` that never waits for a call still running.

    A ``ThreadPoolExecutor`` subclass only because ``loop.set_default_executor`` demands one; none
    of its machinery is used.  ``submit`` after ``shutdown`` raises ``RuntimeError``.
    """

    def __init__(self, max_workers: int | None = None) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix="agentflow-executor")
        self._limit = max_workers if max_workers is not None else min(32, (os.cpu_count() or 1) + 4)
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._guard = threading.Lock()
        self._workers = 0
        self._idle = 0
        self._closed = False

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._guard:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._jobs.put((future, fn, args, kwargs))
            if self._idle > 0:
                self._idle -= 1  # that worker takes the job
            elif self._workers < self._limit:
                self._workers += 1
                threading.Thread(
                    target=self._work, name=f"agentflow-executor-{self._workers}", daemon=True
                ).start()
        return future

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            future, fn, args, kwargs = job
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # noqa: BLE001 - handed to whoever awaits it
                    future.set_exception(exc)
                else:
                    future.set_result(result)
                del job, future, fn, args, kwargs
            with self._guard:
                if self._closed:
                    return
                self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Refuse new work, cancel the calls not started, let idle workers exit; ``wait`` is
        ignored: a call still running is abandoned (its daemon thread ends with it)."""
        with self._guard:
            if self._closed:
                return
            self._closed = True
            workers = self._workers
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job[0].cancel()
        for _ in range(workers):
            self._jobs.put(None)


class StopRequest:
    """The first SIGINT / SIGTERM of a run :func:`run` owns: ``event`` is set and ``signal``
    names it.  :func:`agentflow.runtime.executor.run_plan` watches it (``listeners`` counts the
    runs watching) and winds down: the steps in flight are cancelled and an ``aborted``
    RunResult with the finished steps comes back.  A second signal, or one arriving while no
    run watches, cancels everything at once."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.signal: str | None = None
        self.signum = 0
        self.listeners = 0
        self.main: asyncio.Task[Any] | None = None
        #: signals the process received (counted at once, even during synchronous code) and
        #: signals :meth:`request` has handled on the loop: ``run_plan`` lets the loop catch up
        #: before its first step, so a Ctrl-C while the tools load stops the run before it starts
        self.received = 0
        self.handled = 0

    def note(self, signum: int, frame: Any) -> None:
        """Python-level signal handler (main thread, between bytecodes): count the signal; the
        loop's wake-up descriptor brings it to :meth:`request`."""
        self.received += 1

    def request(self, signum: int) -> None:
        """Signal handler body (runs on the loop)."""
        self.handled += 1
        if self.signal is not None or self.listeners == 0:
            self.signal = self.signal or signal.Signals(signum).name
            self.signum = self.signum or signum
            if self.main is not None:
                self.main.cancel()
            return
        self.signal, self.signum = signal.Signals(signum).name, signum
        self.event.set()


_STOP: contextvars.ContextVar[StopRequest | None] = contextvars.ContextVar(
    "agentflow_stop", default=None
)


def stop_request() -> StopRequest | None:
    """The :class:`StopRequest` of the run :func:`run` drives in this context, or None (the
    async API on the caller's loop: cancellation there is the caller's business)."""
    return _STOP.get()


def _install_signals(loop: asyncio.AbstractEventLoop, stop: StopRequest) -> list[int]:
    """SIGINT and SIGTERM → ``stop.request`` when this is the main thread and the process has
    the default handlers (an application's own handlers are left alone)."""
    if threading.current_thread() is not threading.main_thread():
        return []
    installed = []
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    for signum, default in defaults.items():
        try:
            if signal.getsignal(signum) is not default:
                continue
            loop.add_signal_handler(signum, stop.request, signum)
            signal.signal(signum, stop.note)  # instead of asyncio's no-op; the wake-up fd stays
        except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - platform
            continue
        installed.append(signum)
    return installed


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on :func:`new_event_loop` (same shutdown: pending tasks cancelled,
    async generators closed), with a :class:`DaemonThreadExecutor` as the default executor, so
    the end of the run never waits for an abandoned executor thread.

    SIGINT and SIGTERM (main thread, default handlers) stop the run gracefully: a plan being run
    cancels its steps in flight and returns an ``aborted`` RunResult (its trace gets its
    ``run_finished``); then :class:`agentflow.errors.Interrupted` is raised carrying that result
    (a second signal stops at once, ``result`` None).  Raises whatever ``coro`` raises;
    ``RuntimeError`` (``coro`` closed, never started) when this thread already runs an event
    loop — async code must ``await agentflow.run(...)`` / ``run_plan(...)`` instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()  # no "coroutine was never awaited" warning on top of the error
        raise RuntimeError(
            "agentflow.run_sync() / run_plan_sync() cannot be called while an event loop is "
            "running in this thread; in async code use `await agentflow.run(...)` (or "
            "`await agentflow.runtime.executor.run_plan(...)`) instead"
        )
    from agentflow.errors import Interrupted

    runner = asyncio.Runner(loop_factory=new_event_loop)
    loop = runner.get_loop()
    loop.set_default_executor(DaemonThreadExecutor())
    stop = StopRequest()

    async def main() -> T:
        stop.main = asyncio.current_task()
        _STOP.set(stop)
        return await coro

    installed = _install_signals(loop, stop)
    try:
        try:
            value = runner.run(main())
        except asyncio.CancelledError:
            if stop.signal is None:
                raise
            raise Interrupted(stop.signal, 128 + stop.signum) from None
        if stop.signal is not None:
            raise Interrupted(stop.signal, 128 + stop.signum, value)
        return value
    finally:
        if stop.signal is None:
            for signum in installed:
                loop.remove_signal_handler(signum)
            runner.close()
        else:  # further signals are ignored while the loop closes (bounded)
            _close_after_signal(runner, loop)
            for signum in installed:
                loop.remove_signal_handler(signum)  # (closing the loop removed them already)


#: After a signal, how long the end of the run waits for tasks still running (seconds) before it
#: abandons them: a tool that ignores cancellation cannot hold the process open.
ABANDON_S = 1.0


def _close_after_signal(runner: asyncio.Runner, loop: asyncio.AbstractEventLoop) -> None:
    """``runner.close()``, except that tasks still running :data:`ABANDON_S` after their
    cancellation are abandoned (``asyncio.Runner`` would wait for them forever): the loop is
    closed under them, without the "Task was destroyed but it is pending" log."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.wait(pending, timeout=ABANDON_S))
    left = [t for t in pending if not t.done()]
    if not left:
        runner.close()
        return
    for task in left:
        task._log_destroy_pending = False  # abandoned on purpose
    for task in pending:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" log
    try:
        loop.run_until_complete(loop.shutdown_default_executor())  # daemon threads: immediate
    finally:
        loop.close()
