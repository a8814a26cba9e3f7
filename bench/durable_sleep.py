"""The durable timer under kills (docs/durable.md "Sleeping"): `flowc run --durable` of a flow
that sleeps, killed with SIGKILL at a random point of its sleep — and, in a double crash, its
`flowc resume` killed again — then resumed to the end.  Prints JSON figures: how late each run
woke after its recorded wake-up time (its sleep step's end in the resume's trace: after the
time when the resume reached the sleep before it, else the resume's start-up), how long the
resumes slept, and how many woke early or slept the whole duration again (both must be 0).  The
suite runs one kill (tests/runtime/durable/test_a_durable_sleep_resumes_with_what_is_left.py).

    python bench/durable_sleep.py [--kills 10] [--doubles 3] [--sleep 8.0] [--seed 0]
                                  [--engine dbos|temporal]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentflow", *args]


def _wake(project: Path, run_id: str) -> float | None:
    """The wake-up time ``run_id`` recorded for its sleep, or None before it did: read from
    the SQLite database (DBOS), or as `flowc runs show` reads it (Temporal)."""
    if "temporal" in (project / "flow.toml").read_text():
        return _shown_wake(project, run_id)
    db = project / ".flowc" / "durable.sqlite"
    if not db.exists():
        return None
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            row = conn.execute(
                "select output from operation_outputs where workflow_uuid = ? and "
                "function_name = 'E0/sleep#1'",
                (run_id,),
            ).fetchone()
    except sqlite3.OperationalError:
        return None
    return float(json.loads(row[0])["v"]) if row else None


def _shown_wake(project: Path, run_id: str) -> float | None:
    import asyncio

    from agentflow import api
    from agentflow.errors import InputError
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs

    url = runs.database_for(load_config(project / "flow.toml"))
    try:
        info = asyncio.run(api.show_durable_run(url, run_id))
    except InputError:  # not started yet
        return None
    wakes = [s["wakes_at"] for s in info.steps if s.get("wakes_at") is not None]
    return float(wakes[0]) if wakes else None


def _kill_while_asleep(
    project: Path, cmd: list[str], run_id: str, rng: random.Random
) -> tuple[float, float]:
    """Start ``cmd``, wait for the recorded wake-up time, kill it at a random point before it;
    the wake-up time and when it was killed."""
    proc = subprocess.Popen(cmd, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    wake = _wake(project, run_id)
    while wake is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(proc.communicate()[1].decode()[-2000:])
        time.sleep(0.02)
        wake = _wake(project, run_id)
    left = wake - time.time()
    time.sleep(max(0.0, left * rng.uniform(0.1, 0.8)))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return wake, time.time()


def trial(project: Path, run_id: str, seconds: float, double: bool, rng: random.Random) -> dict:
    flow = f"stage nap -> int {{\n  sleep {int(seconds * 1000)}ms\n  return 7\n}}\n"
    (project / "nap.flow").write_text(flow)
    run = _flowc("run", "--durable", "--run-id", run_id, "nap.flow")
    wake, killed = _kill_while_asleep(project, run, run_id, rng)
    if double and wake - time.time() > 1.5:  # the resume killed again, while it still sleeps
        _, killed = _kill_while_asleep(project, _flowc("resume", run_id), run_id, rng)
    trace = project / f"{run_id}.jsonl"
    done = subprocess.run(
        _flowc("resume", run_id, "--trace", str(trace)), cwd=project, capture_output=True
    )
    if done.returncode != 0 or done.stdout.decode().strip() != "7":
        raise RuntimeError(done.stderr.decode()[-2000:])
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    ends = [e for e in events if e["kind"] == "step_finished" and e["path"] == "E0"]
    if len(ends) != 1:
        raise RuntimeError(f"the resume's trace has {len(ends)} ends of the sleep: {events}")
    end = ends[0]
    slept = end["data"]["elapsed_ms"] / 1000  # the resume's sleep: what was left of it
    return {"late_s": end["time"] - wake, "slept_s": slept, "early": end["time"] < wake,
            "whole_again": slept >= seconds - 0.05, "left_at_kill_s": wake - killed}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--doubles", type=int, default=3)
    parser.add_argument("--sleep", type=float, default=8.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine", choices=["dbos", "temporal"], default="dbos")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    trials = []
    with contextlib.ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="durable-sleep-")))
        config = ""
        if args.engine == "temporal":  # a dev server of this process (tests/support/temporal.py)
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
            from support.temporal import TemporalServer

            server = stack.enter_context(TemporalServer())
            config = f'[durable]\nengine = "temporal"\naddress = "{server.address}"\n'
        (root / "flow.toml").write_text(config)
        for i in range(args.kills):
            trials.append(trial(root, f"nap-{i}", args.sleep, i < args.doubles, rng))
    late = [t["late_s"] for t in trials]
    print(json.dumps({
        "engine": args.engine,
        "trials": len(trials),
        "woke_early": sum(t["early"] for t in trials),
        "slept_the_whole_duration_again": sum(t["whole_again"] for t in trials),
        "late_s_median": round(statistics.median(late), 3),
        "late_s_max": round(max(late), 3),
        "slept_s_median": round(statistics.median(t["slept_s"] for t in trials), 3),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
