"""Run one job per item, concurrently."""

import asyncio


async def run_plan(items, work, limit=4):
    """Run ``work(item)`` for every item, at most ``limit`` at a time; return the results."""
    gate = asyncio.Semaphore(limit)

    async def one(item):
        async with gate:
            return await work(item)

    tasks = [asyncio.create_task(one(item)) for item in items]
    results = []
    for task in tasks:
        # BUG: when one task raises, the others are never cancelled and keep running.
        results.append(await task)
    return results
