"""Benchmark: what a durable agent run does more than its plain run (issue 35), in operations a
loaded machine does not stretch, and in time.  The agent task of ``bench/durable_overhead.py``
(one agent, two tool rounds, then the answer, against a scripted OpenAI-compatible server on
loopback) runs in this process, plain and durable (DBOS on SQLite, launched before timing),
alternating ``--rounds`` times after a warm-up.  Printed per run (the last round's):

- SQL statements and commits on the engine's connections (SQLAlchemy's events), and the
  ``PRAGMA synchronous`` a pool checkout runs through the driver to switch a connection's level
  (``level switch``: dbos_system.sqlite_engine),
- thread hand-offs (``loop.run_in_executor``: ``asyncio.to_thread`` and DBOS's own), and
  which of them the run waited for on its critical path,
- asyncio tasks created, and ``os.fsync`` calls made by Python code (SQLite's own are not
  seen: ``--sql`` counts the commits made at ``synchronous=FULL``, one fsync each, and lists
  the run's hand-offs, tasks and statements with the level each ran at: 2 FULL, 1 NORMAL),

then the wall-time medians (plain, durable, the median of the per-round ratios) and the
process CPU each adds (``loop`` CPU: the event loop's thread's alone), and each hand-off's median time from its submission to its result.

    .venv/bin/python bench/durable_agent_ops.py [--rounds 30] [--sql] [--synchronous LEVEL]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import durable_overhead as bench  # noqa: E402

COUNTS: collections.Counter[str] = collections.Counter()
LISTED: list[str] = []
HOPS: dict[str, list[float]] = collections.defaultdict(list)


def _name(fn: Any) -> str:
    inner = fn.args[0] if hasattr(fn, "args") and fn.args else fn  # to_thread's partial
    return str(getattr(inner, "__qualname__", inner))[:48]


def install_counters(listing: bool) -> None:
    import asyncio.base_events as base

    import sqlalchemy as sa
    from sqlalchemy import event

    @event.listens_for(sa.engine.Engine, "before_cursor_execute")
    def _statement(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        COUNTS["sql"] += 1
        if listing:
            level = cursor.connection.execute("PRAGMA synchronous").fetchone()[0]
            LISTED.append(f"  [{level}] {statement.splitlines()[0][:100]}")

    @event.listens_for(sa.engine.Engine, "commit")
    def _commit(conn: Any) -> None:
        COUNTS["commit"] += 1
        if listing:
            dbapi = conn.connection.dbapi_connection
            level = dbapi.execute("PRAGMA synchronous").fetchone()[0]
            if dbapi.in_transaction:  # a commit with nothing written syncs nothing
                COUNTS["full commit"] += level == 2
                LISTED.append(f"  commit [{level}]")

    seen: dict[int, object] = {}

    from agentflow.runtime.durable.dbos_system import system_database

    @event.listens_for(system_database().engine, "checkout")
    def _checkout(conn: Any, record: Any, _proxy: Any) -> None:  # after the engine's own
        level = record.info.get("agentflow_synchronous")
        if id(record) in seen and seen[id(record)] != level:
            COUNTS["level switch"] += 1
        seen[id(record)] = level

    original = base.BaseEventLoop.run_in_executor

    def run_in_executor(self: Any, executor: Any, fn: Any, *args: Any) -> Any:
        COUNTS["hop"] += 1
        name, t0 = _name(fn), time.perf_counter()
        if listing:
            LISTED.append(f"hop {name}")
        future = original(self, executor, fn, *args)
        future.add_done_callback(lambda _: HOPS[name].append(time.perf_counter() - t0))
        return future

    base.BaseEventLoop.run_in_executor = run_in_executor  # type: ignore[method-assign]
    fsync = os.fsync

    def counted_fsync(fd: int) -> None:
        COUNTS["os.fsync"] += 1
        fsync(fd)

    os.fsync = counted_fsync


async def main(args: argparse.Namespace) -> None:
    import agentflow
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable.dbos_engine import shutdown
    from agentflow.runtime.durable.runs import database_for, open_database
    from agentflow.testing.chat_server import ChatServer

    loop = asyncio.get_running_loop()

    def factory(loop: Any, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        COUNTS["task"] += 1
        if args.sql:
            LISTED.append(f"task {getattr(coro, '__qualname__', coro)}")
        return asyncio.Task(coro, loop=loop, **kw)

    loop.set_task_factory(factory)
    with tempfile.TemporaryDirectory() as tmp, ChatServer(bench.script) as server:
        root = Path(tmp)
        os.environ["SCRIPTED_API_KEY"] = "k"
        (root / "tools.py").write_text(bench.TOOLS)
        config = root / "flow.toml"
        config.write_text(
            server.config_text()
            + '[tools]\nmodules = ["tools.py"]\nentry_points = false\n'
            + f'[durable]\nsynchronous = "{args.synchronous}"\n'
        )
        (root / "agent.flow").write_text(bench.AGENT_FLOW)
        open_database(database_for(load_config(config)), executor_id="bench", queues=[])
        install_counters(args.sql)
        plan, given = root / "agent.flow", {"title": "crash on start"}

        async def one(durable: bool) -> tuple[float, float, float, dict[str, int]]:
            COUNTS.clear()
            LISTED.clear()
            t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
            result = await agentflow.run(
                plan, given, config=config, durable=durable, shape_cache=False
            )
            assert result.status == "ok", result.error
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            return wall, cpu, time.thread_time() - m0, dict(COUNTS)

        for _ in range(3):
            await one(False)
            await one(True)
        HOPS.clear()
        plain: list[tuple[float, float]] = []
        durable: list[tuple[float, float]] = []
        loop_cpu: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.rounds):
            wall, cpu, main, plain_ops = await one(False)
            plain.append((wall, cpu))
            loop_cpu[False].append(main)
            wall, cpu, main, durable_ops = await one(True)
            durable.append((wall, cpu))
            loop_cpu[True].append(main)
        shutdown()
    med = statistics.median
    p, d = med(w for w, _ in plain), med(w for w, _ in durable)
    ratios = [dw / pw for (dw, _), (pw, _) in zip(durable, plain, strict=True)]
    pc, dc = med(c for _, c in plain), med(c for _, c in durable)
    if args.sql:
        print("the last durable run:\n" + "\n".join(LISTED))
    print(f"per run, plain:   {plain_ops}")
    print(f"per run, durable: {durable_ops}")
    for name, times in sorted(HOPS.items()):
        print(f"  hop {name:<48} n={len(times):<4} median {med(times) * 1000:.2f} ms")
    print(
        f"load {os.getloadavg()[0]:.1f}, synchronous={args.synchronous}, {args.rounds} rounds: plain {p * 1000:.2f} ms, durable "
        f"{d * 1000:.2f} ms, {d / p:.2f}x (median of ratios {med(ratios):.2f}x); CPU plain "
        f"{pc * 1000:.2f} ms, durable {dc * 1000:.2f} ms (+{(dc - pc) * 1000:.2f} ms); loop CPU "
        f"+{(med(loop_cpu[True]) - med(loop_cpu[False])) * 1000:.2f} ms"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument(
        "--synchronous", default="full", choices=["normal", "full", "extra"],
        help="[durable] synchronous of the run's database (default: full)",
    )  # fmt: skip
    ap.add_argument("--sql", action="store_true", help="list the last durable run's operations")
    asyncio.run(main(ap.parse_args()))
