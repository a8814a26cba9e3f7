"""Wall-clock bounds that hold on a loaded machine.

A test that bounds how long something takes ("gives up within its 1 s budget", "exits soon
after its deadline") measures wall-clock time, which stretches when other processes share the
cores — two test workers on two cores, or a developer's build. :func:`contention` measures that
stretch right now, and :class:`Stretch` scales a bound by the worst stretch seen around the
timed work, so a bound stays tight on an idle machine and fair on a busy one, while a real hang
(minutes) still fails.
"""

from __future__ import annotations

import time


def contention(sample: float = 0.03) -> float:
    """How many times slower wall-clock time runs than this process's CPU time just now (≥ 1):
    about 1 on an idle machine, about N when N runnable processes share this core. Busy-loops
    for ``sample`` seconds of CPU time."""
    wall, cpu = time.perf_counter(), time.process_time()
    while time.process_time() - cpu < sample:
        pass
    return max(1.0, (time.perf_counter() - wall) / max(time.process_time() - cpu, 1e-9))


class Stretch:
    """Measure :func:`contention` on entry and on exit; :meth:`bound` scales a bound (seconds,
    as measured on an idle machine) by the larger of the two.

    ``with Stretch() as s: work()`` then ``assert s.took < s.bound(3)`` (:attr:`took`: the
    wall-clock seconds of the work inside the block, the contention samples left out)."""

    def __init__(self) -> None:
        self.factor = 1.0
        self.took = 0.0
        self._started = 0.0

    def __enter__(self) -> Stretch:
        self.factor = contention()
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.took = time.perf_counter() - self._started
        self.factor = max(self.factor, contention())

    def bound(self, seconds: float) -> float:
        """``seconds`` on an idle machine, stretched by the contention measured around the work."""
        return seconds * self.factor


def scaled(seconds: float) -> float:
    """``seconds`` (a bound as measured on an idle machine) stretched by the contention measured
    now, after the work: for a bound on work that a :class:`Stretch` block cannot wrap."""
    return seconds * contention()


class Deadline:
    """A wait for something another process does (a server starting), bounded by ``seconds`` as
    on an idle machine and stretched by the worst :func:`contention` sampled while waiting
    (every ``sample_every`` seconds, and again before giving up): a start-up that takes 3 min
    at load 10 is not a failure, a hang still is.

    ``deadline = Deadline(180)``; poll; ``if deadline.expired(): fail(deadline.explain(what))``.
    """

    def __init__(self, seconds: float, sample_every: float = 5.0) -> None:
        self.seconds = seconds
        self.sample_every = sample_every
        self.factor = contention()
        self._started = self._sampled = time.monotonic()

    @property
    def waited(self) -> float:
        """Seconds since the wait began."""
        return time.monotonic() - self._started

    def expired(self) -> bool:
        """Whether the stretched bound has passed (contention sampled again before saying so)."""
        now = time.monotonic()
        if now - self._sampled >= self.sample_every:
            self.factor, self._sampled = max(self.factor, contention()), now
        if self.waited <= self.seconds * self.factor:
            return False
        self.factor, self._sampled = max(self.factor, contention()), time.monotonic()
        return self.waited > self.seconds * self.factor

    def explain(self, what: str) -> str:
        """``what`` did not happen within the bound, with the bound's idle figure and stretch."""
        return (
            f"{what} within {self.waited:.0f}s ({self.seconds:g}s on an idle machine, stretched "
            f"×{self.factor:.1f} by the measured contention)"
        )
