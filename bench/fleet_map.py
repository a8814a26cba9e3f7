"""Benchmark: a 100,000-item durable map of a trivial tool across 3 ``flowc worker`` processes on
PostgreSQL, beside the same map in one process on SQLite (issue 29, "Scale"; docs/durable.md
"Big maps on a fleet").

- **fleet**: a PostgreSQL server of the distribution (tests/support/postgres.py, ``fsync=on``
  unless ``--no-fsync``) on a loopback port, W ``flowc worker`` processes, and ``flowc run
  --durable --fleet``: the map's items run as batch units ``RUN/E0/batch.K`` of ``[durable]
  map_batch`` items (default 1,000), each item an item record of its batch (group commit);
- **one process**: ``flowc run --durable`` of the same plan on SQLite (``synchronous =
  "full"``), its items item records of the run's own unit.

Printed side by side: wall time and items/s (the run's command, from its start to its end),
peak RSS of each worker and of the run's process (VmHWM), the database's growth per item
(PostgreSQL: ``pg_database_size`` before and after; SQLite: the file and its WAL), and how long
``flowc runs show RUN`` (its first page: 200 steps) takes as a command, with its interpreter's
start, and in this process (on the fleet: once the workers have stopped, and once while they
idle on the same cores, polling their queues).

    .venv/bin/python bench/fleet_map.py [--items 100000] [--workers 3] [--concurrency 192]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.postgres import PostgresServer  # noqa: E402
from wide_map import flowc, hwm_mb, write_project  # noqa: E402


class _Peak:
    """The peak RSS of process ``pid``, read until :meth:`stop` (a process that ends cannot be
    read afterwards)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self.mb = max(self.mb, hwm_mb(self.pid))
            except (OSError, ValueError):
                return

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.mb


def _project(root: Path, concurrency: int, durable: str) -> Path:
    project = root
    project.mkdir(parents=True, exist_ok=True)
    write_project(project, concurrency)
    (project / "flow.toml").write_text(
        f'[tools]\nmodules = ["tools.py"]\nentry_points = false\n\n[durable]\n{durable}'
    )
    return project


def _pg_size(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return int(row[0]) if row else 0


def _run(project: Path, env: dict, run_id: str, *extra: str) -> dict:
    """``flowc run --durable [extra] map.yaml``: its wall time, peak RSS and output check."""
    out = project / "out.json"
    t0 = time.perf_counter()
    with out.open("wb") as fh:
        proc = subprocess.Popen(
            flowc("run", "--durable", *extra, "--run-id", run_id, "map.yaml",
                   "--input", "@input.json"),
            cwd=project, env=env, stdout=fh, stderr=subprocess.PIPE,
        )  # fmt: skip
        peak = _Peak(proc.pid)
        _, err = proc.communicate()
    wall = time.perf_counter() - t0
    rss = peak.stop()
    if proc.returncode != 0:
        sys.exit(f"the run failed ({proc.returncode}): {err.decode()[-3000:]}")
    return {"wall": wall, "rss": rss, "output": json.loads(out.read_text())}


def _shown(project: Path, env: dict, url: str, run_id: str) -> tuple[float, float, int]:
    """``flowc runs show RUN`` (first page) as a command and in this process: seconds each,
    and the steps in all."""
    t0 = time.perf_counter()
    cli = subprocess.run(
        flowc("runs", "show", run_id, "--database", url), cwd=project, env=env,
        capture_output=True,
    )  # fmt: skip
    cli_s = time.perf_counter() - t0
    if cli.returncode != 0:
        sys.exit(f"runs show failed: {cli.stderr.decode()[-2000:]}")

    from agentflow.runtime.durable import runs
    from agentflow.runtime.durable.dbos_engine import shutdown

    async def show() -> tuple[float, int]:
        t1 = time.perf_counter()
        info = await runs.show_run(url, run_id, limit=200)
        return time.perf_counter() - t1, int(info.steps_total or 0)

    try:
        asyncio.run(show())  # the engine launched and the connections made: not counted
        in_s, total = asyncio.run(show())
    finally:
        shutdown()
    return cli_s, in_s, total


def fleet(root: Path, n: int, workers: int, concurrency: int, fsync: bool, batch: int) -> dict:
    env = {**os.environ, "NO_COLOR": "1"}
    with PostgresServer(fsync=fsync) as pg:
        url = pg.url
        per_worker = -(-concurrency // workers)
        durable = f'database = "{url}"\nworker_concurrency = {per_worker}\n'
        if batch:
            durable += f"map_batch = {batch}\n"
        project = _project(root / "fleet", concurrency, durable)
        (project / "input.json").write_text(json.dumps({"items": list(range(n))}))
        logs = [(root / f"w{k}.log").open("wb") for k in range(workers)]
        procs = [
            subprocess.Popen(
                flowc("worker", "--name", f"w{k}"),
                cwd=project,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=logs[k],
            )  # fmt: skip
            for k in range(workers)
        ]
        try:
            from agentflow.runtime.durable.liveness import worker_alive

            deadline = time.monotonic() + 120
            for k in range(workers):
                while not worker_alive(url, f"w{k}"):
                    if time.monotonic() > deadline or procs[k].poll() is not None:
                        sys.exit((root / f"w{k}.log").read_text()[-3000:])
                    time.sleep(0.2)
            peaks = [_Peak(p.pid) for p in procs]
            before = _pg_size(url)
            result = _run(project, env, "wide", "--fleet")
            grown = _pg_size(url) - before
            rss = [p.stop() for p in peaks]
            import psycopg

            with psycopg.connect(url) as conn:
                units = conn.execute(
                    "SELECT count(*) FROM dbos.workflow_status WHERE workflow_uuid LIKE 'wide/%'"
                ).fetchone()
                rows = conn.execute("SELECT count(*) FROM agentflow_items").fetchone()
                by_worker = conn.execute(
                    "SELECT executor_id, count(*) FROM dbos.workflow_status "
                    "WHERE workflow_uuid LIKE 'wide/%' GROUP BY executor_id ORDER BY 1"
                ).fetchall()
            # with the workers idle on the same cores (polling their queues), then without
            busy_cli_s, busy_in_s, total = _shown(project, env, url, "wide")
        finally:
            for p in procs:
                p.send_signal(signal.SIGINT)
            for p in procs:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        cli_s, in_s, total = _shown(project, env, url, "wide")
    return {
        **result,
        "worker_rss": rss,
        "bytes": grown,
        "units": int(units[0]) if units else 0,
        "rows": int(rows[0]) if rows else 0,
        "by_worker": {str(e): int(c) for e, c in by_worker},
        "show_cli": cli_s,
        "show_in": in_s,
        "busy_cli": busy_cli_s,
        "busy_in": busy_in_s,
        "steps": total,
    }


def one_process(root: Path, n: int, concurrency: int) -> dict:
    env = {**os.environ, "NO_COLOR": "1"}
    project = _project(root / "sqlite", concurrency, 'synchronous = "full"\n')
    (project / "input.json").write_text(json.dumps({"items": list(range(n))}))
    result = _run(project, env, "wide")
    db = project / ".flowc" / "durable.sqlite"
    grown = sum(p.stat().st_size for p in db.parent.glob("durable.sqlite*") if p.is_file())
    url = f"sqlite:///{db}"
    cli_s, in_s, total = _shown(project, env, url, "wide")
    return {**result, "bytes": grown, "show_cli": cli_s, "show_in": in_s, "steps": total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=192)
    ap.add_argument("--batch", type=int, default=0, help="[durable] map_batch (0: default)")
    ap.add_argument("--no-fsync", action="store_true", help="PostgreSQL with fsync=off")
    ap.add_argument("--skip-sqlite", action="store_true")
    args = ap.parse_args()
    n = args.items
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="fleet-map-") as tmp:
        f = fleet(Path(tmp), n, args.workers, args.concurrency, not args.no_fsync, args.batch)
        s = None if args.skip_sqlite else one_process(Path(tmp), n, args.concurrency)
    expected = list(range(n))
    rows = [
        ("output correct", str(f["output"] == expected), str(s["output"] == expected) if s else ""),
        ("wall", f"{f['wall']:.1f} s", f"{s['wall']:.1f} s" if s else ""),
        ("items/s", f"{n / f['wall']:,.0f}", f"{n / s['wall']:,.0f}" if s else ""),
        (
            "peak RSS per worker",
            " / ".join(f"{r:.0f}" for r in f["worker_rss"]) + " MiB",
            "(no workers)" if s else "",
        ),
        ("peak RSS, the run's process", f"{f['rss']:.0f} MiB", f"{s['rss']:.0f} MiB" if s else ""),
        (
            "database growth per item",
            f"{f['bytes'] / n:,.0f} B ({f['bytes'] / 2**20:.1f} MiB)",
            f"{s['bytes'] / n:,.0f} B ({s['bytes'] / 2**20:.1f} MiB)" if s else "",
        ),
        ("flowc runs show (1st page)", f"{f['show_cli']:.2f} s", f"{s['show_cli']:.2f} s" if s else ""),
        ("runs show, in process", f"{f['show_in']:.2f} s", f"{s['show_in']:.2f} s" if s else ""),
        ("  the same, workers idle", f"{f['busy_cli']:.2f} s / {f['busy_in']:.2f} s", ""),
        ("steps (all pages)", f"{f['steps']:,}", f"{s['steps']:,}" if s else ""),
    ]  # fmt: skip
    print(
        f"{n:,} items of a no-op tool, map concurrency {args.concurrency}; fleet: "
        f"{args.workers} workers on PostgreSQL (fsync {'off' if args.no_fsync else 'on'}), "
        f"{f['units']:,} units (batches, or items when unbatched), {f['rows']:,} item records, "
        "units by executor "
        f"{f['by_worker']}"
    )
    print(f"{'':<28} {'fleet (PostgreSQL)':>28} {'one process (SQLite)':>24}")
    for name, a, b in rows:
        print(f"{name:<28} {a:>28} {b:>24}")
    print(f"load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end (2 cores)")


if __name__ == "__main__":
    main()
