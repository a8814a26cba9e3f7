"""A model call's retry line says how long it waits when a person would notice: a 429 with
`Retry-After: 3600` waits the provider's `max_retry_after` (120 s by default), and a bare
`↻ … retry 1 after rate_limit` followed by two minutes of silence read as a hang. The console
sink is given the `retry` event the model layer emits (its `delay_ms`: the wait, capped)."""

from __future__ import annotations

import io

from agentflow.runtime.events import ConsoleSink, Event


def _line(delay_ms: int) -> str:
    stream = io.StringIO()
    sink = ConsoleSink(stream, force_plain=True)
    sink.handle(
        Event(
            kind="retry",
            path="E0",
            stack=[],
            data={"attempt": 1, "code": "rate_limit", "delay_ms": delay_ms, "model": "m"},
        )
    )
    return stream.getvalue().strip()


def test_a_long_retry_wait_is_said_on_its_line() -> None:
    assert _line(120_000).endswith("retry 1 after rate_limit, in 2m")
    assert _line(90_500).endswith("retry 1 after rate_limit, in 1m 30s")
    assert _line(3_000).endswith("retry 1 after rate_limit, in 3s")


def test_a_short_retry_wait_is_not_said() -> None:
    assert _line(10).endswith("retry 1 after rate_limit")
