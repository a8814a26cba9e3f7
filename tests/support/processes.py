"""Counting child processes from ``/proc`` (Linux): the tests and bench scripts that check a
run or a server leaves no process behind (MCP servers it started) share this one reading."""

from __future__ import annotations

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
