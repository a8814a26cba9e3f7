"""A small crash battery (tests/support/crash_battery.py; bench/crash_battery.py runs dozens):
a durable map-with-agents run killed with SIGKILL — once, and killed again while resuming —
then resumed to its end, its ``--trace`` continued by every process.  The trace holds each
finished event (``tool_finished``, ``model_call``, ``step_finished``) exactly as often as an
uninterrupted run's — none written twice, none lost — and never one for a call not yet
recorded at a kill; the output is the uninterrupted run's."""

from __future__ import annotations

from support.crash_battery import run_battery


def test_killed_and_resumed_runs_trace_each_finished_event_once(tmp_path):
    figures = run_battery(tmp_path, kills=2, doubles=1, items=4, seed=3)

    summary = figures.summary()
    assert figures.kills >= 2 and figures.double_crashes == 1, summary
    assert figures.wrong_outputs == 0, summary
    assert figures.duplicated_finished == 0, summary
    assert figures.lost_finished == 0, summary
    assert figures.finished_before_recorded == 0, summary
