"""Stopping a run, and the event loop agentflow runs on when it owns one.

:func:`run` runs a coroutine for synchronous callers (``run_sync``, ``run_plan_sync``, ``flowc run``,
``flowc ask``, ``flowc tools``) like ``asyncio.run`` — the stock asyncio loop of the current event
loop policy — with two additions:

- **Signals.** The first SIGINT or SIGTERM becomes a :class:`StopRequest`; a plan being run watches
  it (:func:`until_stopped`, called by ``run_plan``), cancels its steps in flight and returns an
  ``aborted`` RunResult with the steps finished so far; :func:`run` then raises
  :class:`agentflow.errors.Interrupted` carrying it.  A second signal, or one arriving while no run
  watches, cancels everything at once.  Handlers are installed only on the main thread and only
  over the default ones (an application's own handlers win).
- **A default executor of daemon threads** (:class:`DaemonThreadExecutor`) whose shutdown never
  waits for a running call: a thread abandoned by a step timeout or the plan deadline
  (``asyncio.to_thread``, ``loop.run_in_executor(None, …)``, ``loop.getaddrinfo``) cannot hold
  the end of the run open, as it would with ``asyncio.run``.  Its result is dropped, as with tools
  run by ``run_in_daemon_thread``.

Callers of the async API (:func:`agentflow.run`, ``run_plan``) run on their own loop; nothing here
touches it, and cancelling the run there is the caller's business.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import inspect
import os
import queue
import signal
import threading
import time
import warnings
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from agentflow.core.vocabulary import Code
from agentflow.errors import Cancelled, Interrupted, RunError, Stopped
from agentflow.runtime.watchdog import BEAT_S, Watchdog

__all__ = [
    "ABANDON_S",
    "CANCEL_GRACE_S",
    "DaemonThreadExecutor",
    "EvalEnded",
    "EvalOffload",
    "EvalWatch",
    "LoopThread",
    "WorkMeter",
    "end_meter",
    "end_offload_watch",
    "evaluate_in_thread",
    "cut_short",
    "outermost_run",
    "run_ended",
    "until_cut",
    "offload_watch",
    "use_meter",
    "use_offload_watch",
    "StopRequest",
    "Stopped",
    "abandon",
    "cancel_within",
    "checkpoint",
    "end_watch",
    "enable_watchdog",
    "forget_stop_request",
    "OutsideCancel",
    "off_loop",
    "outside_cancel",
    "refuse_when_stopped",
    "run",
    "stop_request",
    "stopping",
    "until_stopped",
    "use_stop_request",
    "use_watch",
    "watching",
]

#: Seconds a cancelled step (or a run asked to stop) gets to unwind before it is abandoned: a tool
#: that swallows cancellation cannot hold a timeout, the deadline or Ctrl-C up (issue 16).
CANCEL_GRACE_S = 1.0
#: Tasks given up on (see :func:`abandon`): the end of the run does not wait for them again.
_ABANDONED: weakref.WeakSet[asyncio.Future[Any]] = weakref.WeakSet()
#: Whether :func:`run` starts a watchdog process (the CLI turns it on: :func:`enable_watchdog`).
_WATCHDOG = False


def enable_watchdog(on: bool = True) -> None:
    """Let :func:`run` start a :class:`~agentflow.runtime.watchdog.Watchdog` next to each run it
    drives on the main thread (the CLI does; a library calling ``run_sync`` owns its process)."""
    global _WATCHDOG
    _WATCHDOG = on


def abandon(task: asyncio.Future[Any]) -> None:
    """Give up on ``task`` (cancelled, still running): its outcome is retrieved when it comes,
    asyncio does not log it as destroyed while pending, and the end of the run does not wait
    for it."""
    _ABANDONED.add(task)
    task._log_destroy_pending = False  # type: ignore[attr-defined]  # asyncio's private flag

    def retrieve(fut: asyncio.Future[Any]) -> None:
        if not fut.cancelled():
            fut.exception()

    task.add_done_callback(retrieve)


async def cancel_within(
    task: asyncio.Future[Any], grace: float = CANCEL_GRACE_S, message: str | None = None
) -> bool:
    """Cancel ``task`` (with ``message``: why, as ``Task.cancel(msg)``) and wait up to
    ``grace`` seconds for it to unwind; True when it did, False when it was abandoned
    (:func:`abandon`) because it ignored the cancellation. Waiting goes on (bounded) when the
    caller itself is cancelled meanwhile."""
    if task.done():
        return True
    task.cancel(message)
    end = asyncio.get_running_loop().time() + grace
    while not task.done():
        left = end - asyncio.get_running_loop().time()
        if left <= 0:
            break
        try:
            await asyncio.wait({task}, timeout=left)
        except asyncio.CancelledError:
            continue  # cancelled while waiting: finish the bounded wait, then let it go on
    if task.done():
        return True
    abandon(task)
    return False


T = TypeVar("T")


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
    names it.  :func:`until_stopped` (in ``run_plan``) watches it (``listeners`` counts the runs
    watching) and winds down: the steps in flight are cancelled and an ``aborted``
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
        #: the number of the last signal received (see :func:`stopping`)
        self.received_signum = 0
        #: the watchdog process of this run (CLI only), or None
        self.watchdog: Any = None
        #: signals a busy evaluation acted on before the loop could (:meth:`seen_now`): their
        #: :meth:`request` later is no second signal
        self.seen = 0
        #: the signals received when the run ended (:func:`run_ended`), None before: the first
        #: signal after it only cuts the export of its spans short (:func:`cut_short`)
        self.ended_at: int | None = None
        #: whether that first signal came (and was taken as the cut, not as a stop)
        self.cut = False
        #: the outermost runs of this stop request under way (an eval's cases, one after
        #: another or several at once): the cut applies only once none is
        self.runs = 0

    def note(self, signum: int, frame: Any) -> None:
        """Python-level signal handler (main thread, between bytecodes): count the signal; the
        loop's wake-up descriptor brings it to :meth:`request`."""
        self.received += 1
        self.received_signum = signum

    def request(self, signum: int) -> None:
        """Signal handler body (runs on the loop)."""
        self.handled += 1
        if self.handled <= self.seen:
            return  # a busy evaluation stopped the run on it already (seen_now)
        if self.ended_at is not None and self.signal is None and not self.cut:
            self.cut = True  # the run has ended: this one only cut its export short
            return
        if self.signal is not None or self.listeners == 0:
            self.signal = self.signal or signal.Signals(signum).name
            self.signum = self.signum or signum
            if self.main is not None:
                self.main.cancel()
            return
        self.signal, self.signum = signal.Signals(signum).name, signum
        self.event.set()

    def seen_now(self) -> str | None:
        """The name of the signal received and not yet handled by the loop, taken as this
        run's first stop (``signal`` and ``event`` set, as :meth:`request` sets them): a busy
        evaluation (:func:`checkpoint`) sees the signal before the loop can. None when no
        signal came."""
        if self.signal is not None:
            return self.signal
        if self.received <= self.handled:
            return None
        signum = self.received_signum or signal.SIGINT
        name = signal.Signals(signum).name
        if threading.current_thread() is not threading.main_thread():
            return name  # another loop's run: the main loop hands the signal on (forward)
        self.seen = self.received
        self.signal, self.signum = name, signum
        self.event.set()
        return name

    def forward(self, name: str, signum: int) -> None:
        """The stop of another loop's run reaches this one (on this request's loop): the run
        it watches stops as a first signal stops it — also before it watches (it then stops
        before its first step).  A durable run resumed by ``flowc resume`` runs on the
        engine's own loop; the process's SIGINT / SIGTERM are forwarded to it."""
        self.signal = self.signal or name
        self.signum = self.signum or signum
        self.event.set()


_STOP: contextvars.ContextVar[StopRequest | None] = contextvars.ContextVar(
    "agentflow_stop", default=None
)


def stop_request() -> StopRequest | None:
    """The :class:`StopRequest` of the run :func:`run` drives in this context, or None (the
    async API on the caller's loop: cancellation there is the caller's business)."""
    return _STOP.get()


def use_stop_request(stop: StopRequest | None) -> contextvars.Token[StopRequest | None]:
    """Make ``stop`` the stop request of this context (a run on a loop :func:`run` does not
    drive, stopped through :meth:`StopRequest.forward`); returns the token that undoes it."""
    return _STOP.set(stop)


def forget_stop_request() -> None:
    """Forget, in this context, the stop request of the run that started it (a context variable
    a thread inherited: a Temporal workflow's, whose Ctrl-C stops the process, not the run)."""
    _STOP.set(None)


def stopping() -> str | None:
    """The name of the signal (``"SIGINT"``, ``"SIGTERM"``) that asked the run this context
    belongs to to stop, or None: no stop request (the caller's own loop) or no signal yet.  A
    signal counts from the moment the process receives it, before the loop has handled it: a
    model call about to start after a Ctrl-C (a tool's child process killed by the same Ctrl-C
    hands its failure back first) is refused (docs/decisions.md "ask edges (round 41)")."""
    stop = _STOP.get()
    if stop is None:
        return None
    if stop.signal is not None:
        return stop.signal
    if stop.received:
        return signal.Signals(stop.received_signum or signal.SIGINT).name
    return None


_IN_RUN: contextvars.ContextVar[bool] = contextvars.ContextVar("agentflow_in_run", default=False)


def outermost_run() -> contextvars.Token[bool] | None:
    """At a run's start: a token for :func:`run_ended` when it is the outermost run of this
    context, None for a run inside a run (one tool call of an agent, a planner's plan)."""
    if _IN_RUN.get():
        return None
    stop = _STOP.get()
    if stop is not None:  # a run under way again (an eval's next case): signals stop it
        stop.runs += 1
        stop.ended_at, stop.cut = None, False
    return _IN_RUN.set(True)


def run_ended(token: contextvars.Token[bool] | None) -> None:
    """Mark the run of this context's stop request as ended (its result is known, its
    ``run_finished`` emitted) — only for the outermost run (``token`` from
    :func:`outermost_run`; None: a nested run, nothing done): a first SIGINT / SIGTERM from now
    on does not stop it — the run keeps its result and exit status — but cuts short what is
    left, the export of its spans (:func:`cut_short`); a second one stops the process as usual
    (docs/decisions.md "Ctrl-C during the span export")."""
    if token is None:
        return
    with contextlib.suppress(ValueError):  # (set in another context: nothing to undo here)
        _IN_RUN.reset(token)
    stop = _STOP.get()
    if stop is not None:
        stop.runs = max(0, stop.runs - 1)
        if stop.runs == 0 and stop.ended_at is None:  # no other run of it still under way
            stop.ended_at = stop.received


def cut_short() -> str | None:
    """The name of the signal received since :func:`run_ended` (the export must be given up),
    or None (none came, or no run of this context has ended)."""
    stop = _STOP.get()
    if stop is None or stop.ended_at is None or stop.received <= stop.ended_at:
        return None
    return signal.Signals(stop.received_signum or signal.SIGINT).name


def until_cut(work: Callable[[], Any]) -> str | None:
    """``work()`` (a run's last export, after :func:`run_ended`), given up when a signal comes
    meanwhile (:func:`cut_short`): it goes on on a daemon thread, left behind, and the signal's
    name is returned; None when it finished (its failure is its own to report: the exporter
    logs it). Without a stop request (a library caller's loop) it runs here, as before."""
    if _STOP.get() is None:
        work()
        return None
    done = threading.Event()

    def export() -> None:
        with contextlib.suppress(Exception):
            work()
        done.set()

    threading.Thread(target=export, name="agentflow-export", daemon=True).start()
    while not done.wait(0.05):
        cut = cut_short()
        if cut is not None:
            return cut
    return None


def refuse_when_stopped(path: str | None = None) -> None:
    """Raise :class:`Stopped` (``interrupted by SIGINT``) when :func:`stopping`: what must not
    start once the run was asked to stop (a model call costs money) calls this first."""
    name = stopping()
    if name is not None:
        raise Stopped(f"interrupted by {name}", path)


# ---------------------------------------------------------------------------------------------
# A busy evaluation watches the run's end (docs/reference/expressions.md "Evaluation ends when
# the run must")

#: Seconds between two asks of the engine whether the run was cancelled (``flowc cancel``)
#: while an evaluation is busy: the ask may read a database.
CANCEL_ASK_S = 0.25


class EvalEnded(RunError):
    """A busy evaluation ended by its step's ``timeout`` or the deadline (``timeout``,
    ``deadline_exceeded``): raised by :func:`checkpoint` and passed on unchanged by the evaluator
    (never re-worded as a library function's own failure)."""


class EvalWatch:
    """What a busy expression evaluation checks at each :func:`checkpoint`: the time its step
    must end by (``until``, :func:`time.monotonic` seconds; ``code`` and ``message`` the error
    it then ends with: ``deadline_exceeded`` or ``timeout``), the run's stop request (a first
    SIGINT / SIGTERM, seen as the process receives it) and ``cancelled`` (a callable asking the
    engine whether the run was cancelled: ``flowc cancel``; asked at most every
    :data:`CANCEL_ASK_S` seconds). Evaluation runs on the event loop, where no timer fires and no
    signal handler runs until it returns: these are read instead (docs/decisions.md "Evaluation
    that ends when it must")."""

    __slots__ = ("until", "code", "message", "stop", "cancelled", "_asked", "outside")

    def __init__(
        self,
        until: float | None = None,
        code: str = Code.DEADLINE_EXCEEDED,
        message: str = "",
        stop: StopRequest | None = None,
        cancelled: Callable[[], bool] | None = None,
        outside: OutsideCancel | None = None,
    ) -> None:
        self.until = until
        self.code = code
        self.message = message
        self.stop = stop
        self.cancelled = cancelled
        self._asked = 0.0
        #: the cancel of a run :func:`off_loop` runs (its host's task cancelled), or None
        self.outside = outside

    def bounded(self, seconds: float, code: str, message: str) -> EvalWatch:
        """This watch with its time bound narrowed to ``seconds`` from now (when that is sooner):
        ``code`` / ``message`` the error of that bound."""
        until = time.monotonic() + seconds
        if self.until is not None and self.until < until - 0.001:
            return self  # the outer bound comes first (the same deadline: the inner step's)
        return EvalWatch(until, code, message, self.stop, self.cancelled, self.outside)

    def check(self) -> None:
        """Raise when the evaluation must end: :class:`EvalEnded` past ``until``,
        :class:`~agentflow.errors.Stopped` after a stop signal,
        :class:`~agentflow.errors.Cancelled` when the engine says the run was cancelled."""
        now = time.monotonic()
        if self.until is not None and now >= self.until:
            raise EvalEnded(self.code, self.message, details={"bound": str(self.code)})
        stop = self.stop
        if stop is not None and (stop.signal is not None or stop.received > stop.handled):
            name = stop.seen_now()
            if name is not None:
                raise Stopped(f"interrupted by {name}", None)
        outside = self.outside
        if outside is not None and outside.is_set():
            outside.seen = True
            raise Stopped("the run was cancelled", None)
        if self.cancelled is not None and now - self._asked >= CANCEL_ASK_S:
            self._asked = now
            if self.cancelled():
                raise Cancelled()


class OutsideCancel:
    """The cancel of a run :func:`off_loop` runs on a loop of its own, set from the host's loop
    (another thread) when the host's task is cancelled: a busy evaluation of the run sees it at
    its next :func:`checkpoint` (``seen`` then True) and the run ends ``aborted``, "the run was
    cancelled" — as when its task is cancelled between two awaits."""

    __slots__ = ("_event", "seen")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.seen = False

    def set(self) -> None:
        """Cancel the run (any thread)."""
        self._event.set()

    def is_set(self) -> bool:
        """True once :meth:`set`."""
        return self._event.is_set()


_OUTSIDE: contextvars.ContextVar[OutsideCancel | None] = contextvars.ContextVar(
    "agentflow_outside_cancel", default=None
)


def outside_cancel() -> OutsideCancel | None:
    """The :class:`OutsideCancel` of the run :func:`off_loop` runs in this context, or None."""
    return _OUTSIDE.get()


async def off_loop(work: Callable[[], Coroutine[Any, Any, T]], name: str = "agentflow-run") -> T:
    """Await ``work()`` run on a new event loop in a daemon thread of its own (named ``name``;
    its default executor a :class:`DaemonThreadExecutor`), so the caller's loop goes on serving
    while the run evaluates a long expression (evaluation holds the loop it runs on: docs/
    decisions.md "Evaluation that ends when it must").  Context variables are copied, except the
    stop request (the thread's run is stopped through its host).  Returns what ``work()``
    returns, raises what it raises.

    Cancelling the awaiting task cancels the run: its busy evaluation at the next
    :func:`checkpoint` (:class:`OutsideCancel`), its awaits at once (its task is cancelled on
    its loop: steps unwind, the trace gets its ``run_finished``); the caller's
    ``CancelledError`` is raised at once, the run unwinds on its thread meanwhile (bounded:
    :data:`ABANDON_S` for a step that ignores it)."""
    caller = asyncio.get_running_loop()
    done: asyncio.Future[T] = caller.create_future()
    outside = OutsideCancel()
    context = contextvars.copy_context()
    started = threading.Event()
    held: dict[str, Any] = {}

    def settle(outcome: Callable[[], T]) -> None:
        if done.done():
            return
        try:
            done.set_result(outcome())
        except BaseException as exc:  # noqa: BLE001 - handed to whoever awaits it
            done.set_exception(exc)

    def hand_back(outcome: Callable[[], T]) -> None:
        with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits
            caller.call_soon_threadsafe(settle, outcome)

    def main() -> None:
        _STOP.set(None)
        _OUTSIDE.set(outside)
        runner = asyncio.Runner()
        loop = runner.get_loop()
        loop.set_default_executor(DaemonThreadExecutor())
        try:
            task = held["task"] = loop.create_task(work())
            held["loop"] = loop
            started.set()
            value = runner.run(_awaited(task))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            error = exc
            hand_back(lambda: _raise(error))
        else:
            hand_back(lambda: value)
        finally:
            started.set()  # (also when ``work()`` itself failed)
            _close_bounded(runner, loop)

    thread = threading.Thread(target=context.run, args=(main,), name=name, daemon=True)
    thread.start()
    try:
        return await done
    except asyncio.CancelledError:
        outside.set()
        started.wait()
        loop, task = held.get("loop"), held.get("task")

        def cancel() -> None:
            if task is not None and not task.done() and not outside.seen:  # (else: ending)
                task.cancel()

        if loop is not None:
            with contextlib.suppress(RuntimeError):  # its loop is closed: the run ended
                loop.call_soon_threadsafe(cancel)
        raise


async def _awaited(task: asyncio.Future[T]) -> T:
    return await task


class LoopThread:
    """An event loop of its own on a daemon thread (named ``name``; its default executor a
    :class:`DaemonThreadExecutor`), for the long-lived work a host keeps off its own loop:
    ``flowc serve``'s Temporal worker and the runs it starts (the SDK runs workflow code on
    its worker's loop), so the server reads every message while a run's workflow code runs.
    :meth:`run` awaits a coroutine there; :meth:`close` stops the loop."""

    def __init__(self, name: str = "agentflow-loop") -> None:
        started = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None

        def main() -> None:
            loop = asyncio.new_event_loop()
            loop.set_default_executor(DaemonThreadExecutor())
            self.loop = loop
            started.set()
            try:
                loop.run_forever()
            finally:
                with contextlib.suppress(Exception):
                    for task in asyncio.all_tasks(loop):
                        task.cancel()
                        abandon(task)
                    loop.run_until_complete(asyncio.sleep(0))
                    loop.close()

        self._thread = threading.Thread(target=main, name=name, daemon=True)
        self._thread.start()
        started.wait()

    async def run(self, work: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Await ``work()`` run on this thread's loop, in a copy of the caller's context (but
        the stop request: the host stops it); cancelling the awaiting task cancels it there.
        Raises what ``work()`` raises; RuntimeError once :meth:`close` was called."""
        loop = self.loop
        if loop is None or loop.is_closed():
            raise RuntimeError("the loop thread is closed")
        caller = asyncio.get_running_loop()
        done: asyncio.Future[T] = caller.create_future()
        context = contextvars.copy_context()
        context.run(_STOP.set, None)
        held: list[asyncio.Task[T]] = []

        def settle(task: asyncio.Task[T]) -> None:
            if done.done():
                return
            if task.cancelled():
                done.cancel()
            elif task.exception() is not None:
                done.set_exception(task.exception())  # type: ignore[arg-type]
            else:
                done.set_result(task.result())

        def hand_back(task: asyncio.Task[T]) -> None:
            with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits
                caller.call_soon_threadsafe(settle, task)

        def start() -> None:
            task = loop.create_task(_called(work), context=context)
            held.append(task)
            task.add_done_callback(hand_back)

        loop.call_soon_threadsafe(start)
        try:
            return await done
        except asyncio.CancelledError:

            def cancel() -> None:
                for task in held:
                    task.cancel()

            with contextlib.suppress(RuntimeError):  # its loop is closed
                loop.call_soon_threadsafe(cancel)
            raise

    def close(self, wait: float = 5.0) -> None:
        """Stop the loop (its tasks are cancelled) and wait up to ``wait`` seconds for the
        thread to end."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(loop.stop)
        self._thread.join(wait)


async def _called(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return await work()


def _raise(error: BaseException) -> Any:
    raise error


_WATCH: contextvars.ContextVar[EvalWatch | None] = contextvars.ContextVar(
    "agentflow_eval_watch", default=None
)


def watching() -> EvalWatch | None:
    """The :class:`EvalWatch` of the step running in this context, or None (no run, or a run
    with no deadline, timeout, stop request or engine to ask)."""
    return _WATCH.get()


def use_watch(watch: EvalWatch | None) -> contextvars.Token[EvalWatch | None]:
    """Make ``watch`` this context's :class:`EvalWatch` (a task created afterwards inherits
    it); returns the token that undoes it (``_WATCH.reset``: :func:`end_watch`)."""
    return _WATCH.set(watch)


def end_watch(token: contextvars.Token[EvalWatch | None]) -> None:
    """Undo :func:`use_watch`."""
    _WATCH.reset(token)


def checkpoint(work: int = 0) -> None:
    """End a busy evaluation when its run must end (:meth:`EvalWatch.check`); nothing when
    this context has no watch. Cheap (a context-variable read and a clock read): the evaluator
    calls it every few thousand elements of the arrays it walks.  ``work``: the elements walked
    since the last checkpoint of this walk (or about to be, by one library call), counted by
    this context's :class:`WorkMeter` when it has one — a function of the data alone, never of
    time."""
    watch = _WATCH.get()
    if watch is not None:
        watch.check()
    if work:
        meter = _METER.get()
        if meter is not None:
            meter.add(work)


# ---------------------------------------------------------------------------------------------
# A long evaluation in a Temporal workflow goes to an operation (docs/reference/expressions.md
# "Evaluation ends when the run must"; docs/decisions.md "Temporal: a long evaluation runs in an
# operation")


class EvalOffload(BaseException):  # noqa: N818 - a signal to the engine, not an error
    """Raised by :func:`checkpoint` when the evaluation's counted work passes its
    :class:`WorkMeter`'s budget: the engine evaluates it again where a long evaluation may run
    (Temporal: a local activity).  A ``BaseException``, so no handler of the evaluator's own
    (``except RunError``, ``except Exception``) takes it for the expression's failure."""


class WorkMeter:
    """The work an evaluation has done, counted at its checkpoints (``used``, in elements
    walked), against ``budget``: past it :class:`EvalOffload` is raised.  Deterministic: the
    count depends on the data and the expression only, so a replay of a workflow decides the
    same."""

    __slots__ = ("budget", "used")

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0

    def add(self, work: int) -> None:
        """Count ``work``; raise :class:`EvalOffload` once the count passes the budget."""
        self.used += work
        if self.used > self.budget:
            raise EvalOffload()


_METER: contextvars.ContextVar[WorkMeter | None] = contextvars.ContextVar(
    "agentflow_work_meter", default=None
)


def use_meter(meter: WorkMeter | None) -> contextvars.Token[WorkMeter | None]:
    """Make ``meter`` the :class:`WorkMeter` of evaluations in this context (None: none);
    returns the token :func:`end_meter` takes."""
    return _METER.set(meter)


def end_meter(token: contextvars.Token[WorkMeter | None]) -> None:
    """Undo :func:`use_meter`."""
    _METER.reset(token)


_OFFLOADED: contextvars.ContextVar[EvalWatch | None] = contextvars.ContextVar(
    "agentflow_offload_watch", default=None
)


def offload_watch() -> EvalWatch | None:
    """The bound of the step running in this context for an evaluation run elsewhere (an
    engine whose workflow code reads no clock: its evaluation watches nothing, while one it
    hands to an operation watches this), or None."""
    return _OFFLOADED.get()


def use_offload_watch(watch: EvalWatch | None) -> contextvars.Token[EvalWatch | None]:
    """Make ``watch`` this context's :func:`offload_watch`; returns the token
    :func:`end_offload_watch` takes."""
    return _OFFLOADED.set(watch)


def end_offload_watch(token: contextvars.Token[EvalWatch | None]) -> None:
    """Undo :func:`use_offload_watch`."""
    _OFFLOADED.reset(token)


async def evaluate_in_thread(work: Callable[[], T], watch: EvalWatch | None) -> T:
    """``work()`` (an evaluation) on a thread of the loop's default executor, watching
    ``watch``'s bound by the real clock; cancelled, the evaluation ends at its next
    :func:`checkpoint` (:class:`OutsideCancel`) and the ``CancelledError`` is raised at once.
    A bound that expires is raised as the step's own :class:`~agentflow.errors.RunError`
    (its code and message), which a durable record can hold."""
    outside = OutsideCancel()
    until, code, message = (watch.until, watch.code, watch.message) if watch else (None, "", "")
    thread_watch = EvalWatch(until, code or Code.DEADLINE_EXCEEDED, message, outside=outside)

    def run() -> T:
        _METER.set(None)
        _WATCH.set(thread_watch)
        try:
            return work()
        except EvalEnded as e:
            raise RunError(e.code, e.message, details=e.details) from None

    try:
        return await asyncio.to_thread(run)
    except asyncio.CancelledError:
        outside.set()
        raise


async def while_loading(work: Awaitable[T]) -> T:
    """Await ``work`` — a run's preparation on a worker thread (``agentflow.run``: imports, the
    `.flow` compiled, the catalog built) — as a run watching the stop request: a first SIGINT /
    SIGTERM meanwhile is recorded (the run then stops before its first step, in
    :func:`until_stopped`, with an ``aborted`` result) rather than cancelling at once, as when
    the preparation ran on the loop; a second cancels. Without a stop request it is ``await
    work``."""
    stop = stop_request()
    if stop is None:
        return await work
    stop.listeners += 1
    try:
        return await work
    finally:
        stop.listeners -= 1


async def until_stopped(work: Awaitable[T]) -> T:
    """Await ``work``; when the owning loop's stop request fires first (SIGINT / SIGTERM under
    :func:`run`), cancel it, let it unwind (its steps emit their ``step_finished``) and raise
    :class:`Stopped` (→ an ``aborted`` RunResult).  Without a stop request (the caller's own
    loop) it is ``await work``."""
    stop = stop_request()
    if stop is None:
        return await work
    stop.listeners += 1
    task: asyncio.Future[T] | None = None
    try:
        # A signal that came while the run was loading (tool modules, config: synchronous code)
        # still sits in the loop's wake-up pipe: let the loop hand it to ``stop.request`` before
        # the first step starts (a few passes; none when no signal came).
        for _ in range(16):
            if stop.handled >= stop.received:
                break
            await asyncio.sleep(0)
        if not stop.event.is_set():
            task = asyncio.ensure_future(work)
            waiter = asyncio.ensure_future(stop.event.wait())
            try:
                await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                if not task.done():
                    # unwinds (bounded) even if we are cancelled meanwhile; a step that ignores
                    # the cancellation is abandoned after CANCEL_GRACE_S
                    await cancel_within(task)
    finally:
        stop.listeners -= 1
        if task is None:
            _close_awaitable(work)  # never started
    if task is None or (stop.event.is_set() and (task.cancelled() or not task.done())):
        raise Stopped(f"interrupted by {stop.signal}", None)
    return task.result()


def _close_awaitable(work: Awaitable[Any]) -> None:
    """Close a coroutine that will never run (no "was never awaited" warning)."""
    if inspect.iscoroutine(work):
        with warnings.catch_warnings():  # closing it is the point: no "never awaited" for users
            warnings.simplefilter("ignore", RuntimeWarning)
            work.close()


def _install_signals(loop: asyncio.AbstractEventLoop, stop: StopRequest) -> list[int]:
    """SIGINT and SIGTERM → ``stop.request`` when this is the main thread and the process has
    the default handlers (an application's own handlers are left alone)."""
    if threading.current_thread() is not threading.main_thread():
        return []
    installed: list[int] = []
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


#: what a synchronous entry point that runs its own loop says by default, and what to await
_SYNC_NAME = "agentflow.run_sync() / run_plan_sync()"
_ASYNC_INSTEAD = "`await agentflow.run(...)` (or `await agentflow.runtime.executor.run_plan(...)`)"


def run(
    coro: Coroutine[Any, Any, T], *, name: str = _SYNC_NAME, instead: str = _ASYNC_INSTEAD
) -> T:
    """``asyncio.run(coro)`` (a new stock event loop; same shutdown: pending tasks cancelled,
    async generators closed), with a :class:`DaemonThreadExecutor` as the default executor, so
    the end of the run never waits for an abandoned executor thread.

    SIGINT and SIGTERM (main thread, default handlers) stop the run gracefully: a plan being run
    cancels its steps in flight and returns an ``aborted`` RunResult (its trace gets its
    ``run_finished``); then :class:`agentflow.errors.Interrupted` is raised carrying that result
    (a second signal stops at once, ``result`` None).  Raises whatever ``coro`` raises;
    ``RuntimeError`` (``coro`` closed, never started) when this thread already runs an event
    loop (``asyncio.run(main())``, Jupyter, pytest-asyncio): its message names the caller
    (``name``, the synchronous function) and what async code awaits ``instead`` (by default
    ``await agentflow.run(...)`` / ``run_plan(...)``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()  # no "coroutine was never awaited" warning on top of the error
        raise RuntimeError(
            f"{name} cannot be called while an event loop is running in this thread (it runs "
            f"its own: asyncio.run(), Jupyter and pytest-asyncio already run one); in async "
            f"code use {instead} instead"
        )

    runner = asyncio.Runner()
    loop = runner.get_loop()
    loop.set_default_executor(DaemonThreadExecutor())
    stop = StopRequest()

    async def main() -> T:
        stop.main = asyncio.current_task()
        _STOP.set(stop)
        return await coro

    installed = _install_signals(loop, stop)
    if _WATCHDOG and installed:
        stop.watchdog = Watchdog()
        stop.watchdog.start()  # after the handlers above: its stack dumps chain to them
        _heartbeat(loop, stop.watchdog)
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
        if stop.watchdog is not None:
            stop.watchdog.stop()
        if stop.signal is None:
            for signum in installed:
                loop.remove_signal_handler(signum)
            _close_bounded(runner, loop)
        else:  # further signals are ignored while the loop closes (bounded)
            _close_bounded(runner, loop)
            for signum in installed:
                loop.remove_signal_handler(signum)  # (closing the loop removed them already)


def _heartbeat(loop: asyncio.AbstractEventLoop, watchdog: Any) -> None:
    """Tell ``watchdog`` every ``BEAT_S`` seconds that the loop runs (see runtime/watchdog.py)."""

    def beat() -> None:
        watchdog.beat()
        loop.call_later(BEAT_S, beat)

    loop.call_soon(beat)


#: How long the end of the run waits for tasks still running (seconds) before it abandons them: a
#: tool that ignores cancellation cannot hold the process open.
ABANDON_S = 1.0


def _close_bounded(runner: asyncio.Runner, loop: asyncio.AbstractEventLoop) -> None:
    """``runner.close()``, except that tasks still running :data:`ABANDON_S` after their
    cancellation are abandoned (``asyncio.Runner`` would wait for them forever), and tasks
    already abandoned during the run (:func:`abandon`) are not waited for again: the loop is
    closed under them, without the "Task was destroyed but it is pending" log."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    waited = [t for t in pending if t not in _ABANDONED]
    for task in waited:
        task.cancel()
    if waited:
        loop.run_until_complete(asyncio.wait(waited, timeout=ABANDON_S))
    left = [t for t in pending if not t.done()]
    if not left:
        runner.close()
        return
    for task in left:
        # abandoned on purpose; asyncio's private flag (not in typeshed) silences the log
        task._log_destroy_pending = False  # type: ignore[attr-defined]
    for task in pending:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: no "exception was never retrieved" log
    try:
        loop.run_until_complete(loop.shutdown_default_executor())  # daemon threads: immediate
    finally:
        loop.close()
