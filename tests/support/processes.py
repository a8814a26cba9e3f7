"""Counting child processes from ``/proc`` (Linux): the tests and bench scripts that check a
run or a server leaves no process behind (MCP servers it started) share this one reading."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path


def children_of(pid: int | None = None) -> list[int]:
    """The live (not zombie) child processes of ``pid`` (default: this process), as pids."""
    parent = os.getpid() if pid is None else pid
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == parent and fields[0] != "Z":
            out.append(int(entry))
    return out


async def settled(before: list[int], limit: float = 10.0) -> list[int]:
    """This process's children once those not in ``before`` that are on their way out have gone
    (waits at most ``limit`` seconds)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + limit
    while set(children_of()) - set(before) and loop.time() < end:
        await asyncio.sleep(0.05)
    return children_of()
