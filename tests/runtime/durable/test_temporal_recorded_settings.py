"""A Temporal run records the `[durable]` settings its workflow code depends on
(`history_events`, the resolved `map_batch`) when it starts, and every worker of the run
applies those rather than its own `flow.toml`'s; a run recorded before it did falls back to the
worker's own (the batched-map crash test of test_durable_engines.py resumes a run with another
`map_batch` end to end)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentflow.runtime.durable import temporal_engine as te


def _url(history_events: int, map_batch: int) -> str:
    return te.make_url(
        "127.0.0.1:7233", "default", "q", False, Path("claims"), 1_000_000,
        history_events, map_batch,
    )  # fmt: skip


def test_a_run_records_its_history_events_and_resolved_map_batch():
    assert te.recorded_settings(_url(10_000, 0)) == {"history_events": 10_000, "map_batch": 1000}
    assert te.recorded_settings(_url(2_000, 7)) == {"history_events": 2_000, "map_batch": 7}


def test_the_recorded_batch_wins_over_the_workers_own(monkeypatch):
    monkeypatch.setattr(te, "MAP_BATCH", [7])  # this worker's flow.toml
    monkeypatch.setattr(te, "HISTORY_EVENTS", [500])
    engine = te.TemporalEngine({"history_events": 10_000, "map_batch": 4})
    assert (engine.history_events, engine.map_batch(30), engine.map_batch(4)) == (10_000, 4, None)


@pytest.mark.parametrize(("batch", "events", "expected"), [(7, 500, 7), (0, 500, 50)])
def test_a_run_recorded_before_it_recorded_them_uses_the_workers_own(
    monkeypatch, batch, events, expected
):
    monkeypatch.setattr(te, "MAP_BATCH", [batch])
    monkeypatch.setattr(te, "HISTORY_EVENTS", [events])
    engine = te.TemporalEngine(None)
    assert (engine.history_events, engine.map_batch(1000)) == (events, expected)
