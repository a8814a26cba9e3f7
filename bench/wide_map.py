"""What bench/fleet_map.py and bench/temporal_map.py share: the wide map of a trivial tool they
run (a plan whose ``CONCURRENCY`` is filled in), the ``flowc`` command line of this
interpreter, and the peak resident set of a process.  Not a benchmark of its own."""

from __future__ import annotations

import sys
from pathlib import Path

TOOLS = """\
async def noop(i: int) -> int:
    \"\"\"Return i.\"\"\"
    return i
"""

PLAN = """\
version: 1
name: wide_map
input_schema: {type: object, properties: {items: {type: array}}, required: [items]}
steps:
  - id: E0
    tool_name: map
    input:
      over: "{{ input.items }}"
      concurrency: CONCURRENCY
      do: {tool_name: user__noop, input: {i: "{{ item }}"}}
finish: {mode: output, output: "{{ E0 }}"}
"""


def write_project(project: Path, concurrency: int) -> None:
    """``tools.py`` and ``map.yaml`` (the wide map at ``concurrency``) in ``project``."""
    (project / "tools.py").write_text(TOOLS)
    (project / "map.yaml").write_text(PLAN.replace("CONCURRENCY", str(concurrency)))


def flowc(*args: str) -> list[str]:
    """The command line of ``flowc ARGS`` run by this interpreter."""
    return [sys.executable, "-m", "agentflow", *args]


def hwm_mb(pid: int) -> float:
    """Peak resident set (MB) of process ``pid`` (``VmHWM``; NaN when it has none).  Raises
    OSError when the process is gone."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")
