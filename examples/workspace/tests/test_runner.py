"""The failing case reported in the bug."""

import asyncio

from jobs.runner import run_plan


def test_failure_cancels_the_rest():
    started = []

    async def work(item):
        started.append(item)
        if item == 1:
            raise ValueError("boom")
        await asyncio.sleep(10)

    try:
        asyncio.run(run_plan([1, 2, 3], work))
    except ValueError:
        pass
