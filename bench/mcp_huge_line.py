"""An MCP tool result of one huge line over stdio (runtime/tools/mcp_lines.py), against
tests/support/raw_mcp_server.py: the time of one call returning 5 MB and 20 MB (and the time
of the same call returning 1 kB, the floor), through the ``mcp`` SDK's own stdout reader
("before": ``TextReceiveStream``, quadratic in a line's length) and through agentflow's
:class:`LineChunks` ("after": linear).  Also: a 100 MB answer, over the 64 MB limit, fails its
call (``tool_error``) in the time it takes to read it.

Run: ``.venv/bin/python bench/mcp_huge_line.py [--skip-before]``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import mcp.client.stdio as sdk_stdio
from anyio.streams.text import TextReceiveStream

from agentflow.errors import RunError
from agentflow.runtime.config import McpServer
from agentflow.runtime.tools import mcp as mcp_module
from agentflow.runtime.tools import mcp_lines
from agentflow.runtime.tools.catalog import ToolContext
from agentflow.runtime.tools.mcp import McpHub

SERVER = Path(__file__).resolve().parent.parent / "tests" / "support" / "raw_mcp_server.py"
SIZES = {"1 kB": 1_000, "5 MB": 5_000_000, "20 MB": 20_000_000}


async def _timings(label: str, sizes: dict[str, int]) -> None:
    hub = McpHub(
        {"t": McpServer(command=sys.executable, args=[str(SERVER), "--clean"], timeout=600)},
        base_dir=Path("."),
        env={},
    )
    try:
        tools = {t.name: t for t in await hub.tools("t")}
        echo = tools["t__echo"].func
        ctx = ToolContext(workspace=Path("."))
        for name, size in sizes.items():
            start = time.perf_counter()
            try:
                out = await echo({"text": "ab", "repeat": size // 2}, ctx)
                what = f"{len(out):,} chars"
            except RunError as e:
                what = f"{e.code}: {e.message[:90]}"
            print(f"  {label:<6} {name:>6}: {time.perf_counter() - start:7.2f} s  ({what})")
    finally:
        await hub.aclose()


async def main() -> None:
    if "--skip-before" not in sys.argv:
        # the SDK's reader (its TextReceiveStream; _transport installs ours at each connect)
        real = mcp_module.install_line_reader
        mcp_module.install_line_reader = lambda: None  # type: ignore[assignment]
        sdk_stdio.TextReceiveStream = TextReceiveStream  # type: ignore[attr-defined,misc]
        await _timings("before", SIZES)
        mcp_module.install_line_reader = real  # type: ignore[assignment]
    mcp_lines.install()
    await _timings("after", {**SIZES, "100 MB": 100_000_000})


if __name__ == "__main__":
    asyncio.run(main())
