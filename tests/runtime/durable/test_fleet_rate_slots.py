"""A model's fleet-wide rate limit is held per request by slots in the durable database
(runtime/durable/ratelimit.py): however late a granted request is sent, no window of the limit's
period holds more requests than the limit (SQLite here; PostgreSQL in test_durable_fleet.py)."""

from __future__ import annotations

import asyncio
import random
import time

from agentflow.runtime.durable.ratelimit import rate_slot, rate_window


def test_a_rate_is_whole_requests_per_window_of_at_least_a_second():
    assert rate_window(5) == (5, 1.0)
    assert rate_window(0.5) == (1, 2.0)
    assert rate_window(2.5) == (2, 1.0)


def test_concurrent_requests_with_late_sends_never_exceed_the_limit_in_any_window(tmp_path):
    url = f"sqlite:///{tmp_path / 'durable.sqlite'}"
    sent: list[float] = []
    rng = random.Random(7)

    async def request() -> None:
        async with rate_slot(url, "m", 4):
            await asyncio.sleep(rng.uniform(0, 0.3))  # a busy worker sends late
            sent.append(time.monotonic())

    async def main() -> None:
        await asyncio.gather(*(request() for _ in range(8)))

    asyncio.run(main())
    assert len(sent) == 8
    sent.sort()
    assert max(sum(1 for t in sent if s <= t < s + 1.0) for s in sent) <= 4
