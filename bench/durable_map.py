"""Benchmark + battery: big durable maps on DBOS/SQLite (docs/durable.md "Big maps", issue 35).

- ``--items N`` (default 100,000): a map of N items at concurrency 16, each one no-op tool call
  (recorded as item records in batches: runtime/durable/items.py), plain and durable at each
  ``[durable] synchronous`` level, each in a fresh process: wall time, items/s, peak RSS, the
  database's growth per item (bytes, the SQLite file and its WAL after the run), and the
  batches written (rows per transaction);
- ``--kills K`` (default 0): the crash battery: K runs of a 2,000-item map whose tool kills its
  own process (SIGKILL) at a random item, at each level, each resumed by ``flowc resume`` until
  it ends; checked each time: the output equals the uninterrupted run's, every item's effect
  happened, no item recorded as finished at a kill ran again (only items in flight did).

    .venv/bin/python bench/durable_map.py [--items 100000] [--levels full,normal] [--kills 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TOOLS = """\
import os, signal


async def noop(i: int) -> int:
    \"\"\"Return i.\"\"\"
    return i


def note(n: int) -> int:
    \"\"\"Note n in the side-effect log and return 2n; dies at item $KILL_AT the first time.\"\"\"
    kill_at = os.environ.get("KILL_AT")
    marker = os.environ.get("KILL_MARKER", "")
    if kill_at is not None and n == int(kill_at) and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    fd = os.open(os.environ["NOTE_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{n}\\n".encode())
    os.close(fd)
    return 2 * n
"""

BIG_MAP = """\
version: 1
name: big_map
input_schema: {type: object, properties: {items: {type: array}}, required: [items]}
steps:
  - id: E0
    tool_name: map
    input:
      over: "{{ input.items }}"
      concurrency: 16
      do: {tool_name: user__noop, input: {i: "{{ item }}"}}
"""

NOTES = """\
version: 1
name: notes
input_schema: {type: object}
steps:
  - id: E0
    tool_name: map
    input:
      over: "{{ input.items }}"
      concurrency: 16
      do: {tool_name: user__note, input: {n: "{{ item }}"}}
"""


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _project(root: Path, level: str) -> Path:
    project = root / f"map-{level}"
    project.mkdir(parents=True, exist_ok=True)
    (project / "tools.py").write_text(TOOLS)
    (project / "big.plan.yaml").write_text(BIG_MAP)
    (project / "notes.plan.yaml").write_text(NOTES)
    (project / "flow.toml").write_text(
        '[tools]\nmodules = ["tools.py"]\nentry_points = false\n\n'
        f'[durable]\nsynchronous = "{level}"\n'
    )
    return project


def child_map(project: Path, n: int, durable: bool) -> None:
    """One big map in this (fresh) process; prints its figures as JSON."""
    import agentflow

    async def go() -> float:
        t0 = time.perf_counter()
        result = await agentflow.run(
            project / "big.plan.yaml",
            {"items": list(range(n))},
            config=project / "flow.toml",
            durable=durable,
            shape_cache=False,
        )
        assert result.status == "ok", result.error
        assert len(result.output) == n
        return time.perf_counter() - t0

    elapsed = asyncio.run(go())
    out = {"wall": elapsed, "rss": _peak_rss_mb()}
    if durable:
        from agentflow.runtime.durable import dbos_engine, items

        out["batches"], out["rows"] = items.WRITTEN["transactions"], items.WRITTEN["rows"]
        dbos_engine.shutdown()
        db = project / ".flowc" / "durable.sqlite"
        out["bytes"] = sum(
            f.stat().st_size for f in db.parent.glob("durable.sqlite*") if f.is_file()
        )
    print("MAP", json.dumps(out))


def _child(project: Path, n: int, durable: bool) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child-map", str(project), str(n), str(int(durable))],
        capture_output=True,
        text=True,
        cwd=project,
    )
    line = [x for x in proc.stdout.splitlines() if x.startswith("MAP ")]
    if not line:
        raise SystemExit(f"the map failed: {proc.stderr[-2000:]}")
    return json.loads(line[-1][4:])


def bench(root: Path, n: int, levels: list[str]) -> None:
    print(
        f"load average {os.getloadavg()[0]:.1f}; {n:,} items, concurrency 16, one no-op tool each"
    )
    plain = _child(_project(root, "full"), n, False)
    print(
        f"{'plain':<16} {plain['wall']:8.2f} s  {n / plain['wall']:>9,.0f} items/s  "
        f"peak RSS {plain['rss']:5.0f} MB"
    )
    for level in levels:
        project = _project(root, level)
        db = project / ".flowc" / "durable.sqlite"
        for f in db.parent.glob("durable.sqlite*") if db.parent.exists() else []:
            f.unlink()
        r = _child(project, n, True)
        print(
            f"{'durable ' + level:<16} {r['wall']:8.2f} s  {n / r['wall']:>9,.0f} items/s  "
            f"peak RSS {r['rss']:5.0f} MB  {r['wall'] / plain['wall']:5.2f}x plain  "
            f"database {r['bytes'] / n:6.0f} B/item  "
            f"{r['rows'] / max(1, r['batches']):5.1f} rows/transaction"
        )


def _flowc(project: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentflow", *args],
        cwd=project,
        env=env,
        capture_output=True,
        timeout=600,
    )


def battery(root: Path, kills: int, levels: list[str], n: int = 2000) -> None:
    """``kills`` SIGKILLs per level at random items, each resumed; prints what it checked."""
    rng = random.Random(35)
    for level in levels:
        bad = 0
        repeated_total = 0
        t0 = time.perf_counter()
        for k in range(kills):
            project = root / f"battery-{level}-{k}"
            project.mkdir(parents=True)
            (project / "tools.py").write_text(TOOLS)
            (project / "plan.yaml").write_text(NOTES)
            (project / "flow.toml").write_text(
                f'[tools]\nmodules = ["tools.py"]\n\n[durable]\nsynchronous = "{level}"\n'
            )
            log = project / "notes.log"
            at = rng.randrange(n // 10, n)
            env = {
                **os.environ,
                "NOTE_LOG": str(log),
                "KILL_AT": str(at),
                "KILL_MARKER": str(project / "killed"),
            }
            xs = json.dumps({"items": list(range(n))})
            first = _flowc(project, env, "run", "--durable", "--run-id", "b", "plan.yaml",
                           "--input", xs)  # fmt: skip
            if first.returncode != -9:
                print(f"  {level} #{k}: the run was not killed ({first.returncode})")
                bad += 1
                continue
            with sqlite3.connect(project / ".flowc" / "durable.sqlite") as conn:
                names = [r[0] for r in conn.execute("select name from agentflow_items")]
            recorded = {int(x.split("/do.")[1].split("/")[0]) for x in names}
            resumed = _flowc(project, env, "resume", "b")
            total = Counter(int(x) for x in log.read_text().split())
            ok = (
                resumed.returncode == 0
                and json.loads(resumed.stdout) == [2 * i for i in range(n)]
                and set(total) == set(range(n))
                and all(total[i] == 1 for i in recorded)
            )
            repeated_total += sum(1 for c in total.values() if c > 1)
            if not ok:
                bad += 1
                print(f"  {level} #{k} (killed at item {at}): WRONG", resumed.stderr[-500:])
        print(
            f"battery synchronous={level}: {kills} kills of a {n:,}-item map, {bad} wrong; "
            f"{repeated_total} in-flight item(s) ran twice in all (recorded ones: never); "
            f"{time.perf_counter() - t0:.0f} s"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--levels", default="full,normal")
    ap.add_argument("--kills", type=int, default=0)
    args = ap.parse_args()
    levels = [x for x in args.levels.split(",") if x]
    with tempfile.TemporaryDirectory() as tmp:
        if args.items:
            bench(Path(tmp), args.items, levels)
        if args.kills:
            battery(Path(tmp), args.kills, levels)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-map":
        child_map(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")
        sys.exit(0)
    main()
