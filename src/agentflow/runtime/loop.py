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

Set ``AGENTFLOW_EVENT_LOOP=asyncio`` to use the stock loop instead.  Callers of the async API
(:func:`agentflow.run`) run on their own loop; nothing here touches it.  Off Linux (kqueue takes
float timeouts already; Windows uses the proactor) the stock loop is used.
"""

from __future__ import annotations

import asyncio
import os
import select
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["SPIN_S", "PreciseSelector", "new_event_loop", "run"]

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


def _precise_available() -> bool:
    if os.environ.get("AGENTFLOW_EVENT_LOOP", "").strip().lower() in (
        "asyncio",
        "default",
        "stock",
    ):
        return False
    return hasattr(selectors, "EpollSelector") and hasattr(select, "select")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop for a run agentflow owns: a ``SelectorEventLoop`` over
    :class:`PreciseSelector` on Linux, the stock ``asyncio.new_event_loop()`` elsewhere or when
    ``AGENTFLOW_EVENT_LOOP=asyncio``."""
    if not _precise_available():
        return asyncio.new_event_loop()
    return asyncio.SelectorEventLoop(PreciseSelector())


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on :func:`new_event_loop` (same shutdown: pending tasks cancelled,
    async generators and the default executor closed).  Raises whatever ``coro`` raises."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(coro)
