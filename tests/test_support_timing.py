"""tests/support/timing.py's :class:`Deadline`: a wait for another process (a server starting)
bounded as on an idle machine and stretched by the contention measured while waiting, so a
start-up slowed by load is not a failure (tests/e2e/test_otel_phoenix.py failed at load ~10 with
a raw 180 s bound) and a hang still is."""

from __future__ import annotations

import time

from support import timing


def test_a_deadline_is_stretched_by_the_contention_measured_while_waiting(monkeypatch):
    loads = iter([1.0, 1.0, 50.0, 50.0])  # the machine gets busy during the wait
    monkeypatch.setattr(timing, "contention", lambda: next(loads, 50.0))
    deadline = timing.Deadline(0.05, sample_every=0.0)
    time.sleep(0.1)  # past the idle bound: contention is measured again before giving up
    assert not deadline.expired()
    assert deadline.factor == 50.0
    assert "0.05s on an idle machine, stretched ×50.0" in deadline.explain("x did not answer")


def test_a_deadline_still_expires_on_an_idle_machine(monkeypatch):
    monkeypatch.setattr(timing, "contention", lambda: 1.0)
    deadline = timing.Deadline(0.05)
    assert not deadline.expired()
    time.sleep(0.1)
    assert deadline.expired()
