"""A map of one-call items is recorded in batches (runtime/durable/items.py: ``agentflow_items``
rows, group commit), and a run killed with SIGKILL in the middle of it resumes from them: a
real ``flowc run --durable`` whose tool kills its own process at item 200 of 300 (concurrency
8), then ``flowc resume``.  Checked, at each of SQLite's ``synchronous`` levels the durable
database may run at (``[durable] synchronous``): the output equals the uninterrupted run's, every
item's effect happened, an item recorded as finished at the kill never ran again (only items in
flight at the kill did), and ``flowc runs show`` lists the items.  bench/durable_map.py kills
bigger maps many times."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import agentflow.api
from agentflow.runtime.durable.dbos_engine import shutdown

ITEMS = 300
KILL_AT = 200

PLAN = """\
version: 1
name: big
input_schema: {type: object}
steps:
  - id: E0
    tool_name: map
    input:
      over: "{{ input.xs }}"
      concurrency: 8
      do: {tool_name: user__note, input: {n: "{{ item }}"}}
  - id: E1
    tool_name: user__note
    input: {n: 1000}
finish: {mode: output, output: "{{ {items: E0, last: E1} }}"}
"""

TOOLS = """\
import os, signal


def note(n: int) -> int:
    \"\"\"Note n in the side-effect log and return 2n; the first process dies at item KILL_AT.\"\"\"
    marker = os.environ["KILL_MARKER"]
    if n == int(os.environ["KILL_AT"]) and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    fd = os.open(os.environ["NOTE_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{n}\\n".encode())
    os.close(fd)
    return 2 * n
"""


def _flowc(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentflow", *args],
        cwd=project,
        env=env,
        capture_output=True,
        timeout=240,
    )


def _notes(log: Path) -> Counter[int]:
    return Counter(int(x) for x in log.read_text().split()) if log.exists() else Counter()


def _recorded(db: Path) -> set[int]:
    """The items whose record is committed (their operation ``E0/do.N/tool:user__note#1``)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        names = [row[0] for row in conn.execute("select name from agentflow_items")]
    return {int(name.split("/do.")[1].split("/")[0]) for name in names if "/do." in name}


@pytest.mark.parametrize(
    "level",
    ["full", pytest.param("normal", marks=pytest.mark.battery)],  # README.md "The battery tier"
)
def test_a_run_killed_mid_map_resumes_without_running_a_recorded_item_again(
    tmp_path: Path, level: str
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "plan.yaml").write_text(PLAN)
    (project / "tools.py").write_text(TOOLS)
    (project / "flow.toml").write_text(
        f'[tools]\nmodules = ["tools.py"]\n\n[durable]\nsynchronous = "{level}"\n'
    )
    log = project / "notes.log"
    env = {
        **os.environ,
        "NOTE_LOG": str(log),
        "KILL_MARKER": str(project / "killed"),
        "KILL_AT": str(KILL_AT),
        "NO_COLOR": "1",
    }
    xs = json.dumps({"xs": list(range(ITEMS))})
    first = _flowc(project, env, "run", "--durable", "--run-id", "big", "plan.yaml", "--input", xs)
    assert first.returncode == -9, first.stderr.decode()[-2000:]
    db = project / ".flowc" / "durable.sqlite"
    with sqlite3.connect(db) as conn:
        assert conn.execute("pragma journal_mode").fetchone()[0] == "wal"
    recorded, noted = _recorded(db), _notes(log)
    assert len(recorded) >= KILL_AT // 2  # most items before the kill were recorded, in batches
    assert KILL_AT not in noted and recorded <= set(noted)

    resumed = _flowc(project, env, "resume", "big")
    assert resumed.returncode == 0, resumed.stderr.decode()[-3000:]
    assert json.loads(resumed.stdout) == {"items": [2 * n for n in range(ITEMS)], "last": 2000}
    total = _notes(log)
    assert set(total) == {*range(ITEMS), 1000}
    for n in recorded:  # exactly once: a recorded item is replayed, never run again
        assert total[n] == 1, n
    repeated = {n for n, c in total.items() if c > 1}
    assert repeated <= set(noted) - recorded  # only items in flight at the kill ran twice
    assert len(repeated) < 8 * 2  # at most what was in flight (concurrency 8) and not yet written

    if level == "full":  # `flowc runs show` lists each item (read from its record)
        try:
            info = asyncio.run(agentflow.api.show_durable_run(f"sqlite:///{db}", "big"))
        finally:
            shutdown()
        items = [s for s in info.steps if "/do." in s["path"]]
        assert len(items) == ITEMS and all(s["status"] == "done" for s in items)
