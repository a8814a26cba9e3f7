"""MCP tool-call figures over stdio against tests/support/mcp_server.py (official SDK server).

Prints: connect + initialize + list_tools time, sequential per-call latency, and the throughput of
concurrent calls sharing one connection. Run: ``.venv/bin/python bench/mcp_calls.py``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

from agentflow.runtime.config import McpServer
from agentflow.runtime.tools.catalog import ToolContext
from agentflow.runtime.tools.mcp import McpHub

SERVER = Path(__file__).resolve().parent.parent / "tests" / "support" / "mcp_server.py"


async def main(n: int = 200) -> None:
    hub = McpHub(
        {"t": McpServer(command=sys.executable, args=[str(SERVER)])}, base_dir=Path("."), env={}
    )
    t0 = time.perf_counter()
    tools = {t.name: t for t in await hub.tools("t")}
    print(f"connect+initialize+list_tools: {(time.perf_counter() - t0) * 1000:.0f} ms")
    add = tools["t__add"].func
    ctx = ToolContext(workspace=Path("."))
    lat = []
    for i in range(n):
        s = time.perf_counter()
        await add({"a": i, "b": 1}, ctx)
        lat.append((time.perf_counter() - s) * 1000)
    print(
        f"sequential calls: n={n} median {statistics.median(lat):.2f} ms, "
        f"p95 {sorted(lat)[int(n * 0.95)]:.2f} ms"
    )
    s = time.perf_counter()
    await asyncio.gather(*(add({"a": i, "b": 1}, ctx) for i in range(n)))
    el = time.perf_counter() - s
    print(f"concurrent calls on one connection: n={n} in {el * 1000:.0f} ms ({n / el:.0f} calls/s)")
    s = time.perf_counter()
    await hub.aclose()
    print(f"close: {(time.perf_counter() - s) * 1000:.0f} ms")


if __name__ == "__main__":
    asyncio.run(main())
