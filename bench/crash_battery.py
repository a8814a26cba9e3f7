"""The crash battery of durable runs (issue 28): dozens of SIGKILLs — some of them double crashes,
a resuming process killed again — of `flowc run --durable` / `flowc resume` over a map of items
that each run a tool and an agent that calls a tool, against the scripted model server on
loopback.  Prints its figures as JSON: wrong outputs, duplicated and lost finished events in the
trace, finished events written before their operation was recorded, model requests sent again
although their reply had been sent before the kill (server log vs kill time), and how long after
its reply a model call is recorded.  The trials are tests/support/crash_battery.py; the suite runs
a few (tests/runtime/durable/test_crash_battery.py).

``--synchronous``: the database's ``[durable] synchronous`` level (``full``, the default,
``normal`` or ``extra``); a SIGKILL is a process crash, which every level survives.

    python bench/crash_battery.py [--kills 40] [--doubles 10] [--items 8] [--seed 0]
                                  [--synchronous full]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.crash_battery import run_battery  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--doubles", type=int, default=10)
    parser.add_argument("--items", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--synchronous", choices=["normal", "full", "extra"], default="full")
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="crash-battery-") as root:
        figures = run_battery(
            Path(root),
            kills=args.kills,
            doubles=args.doubles,
            items=args.items,
            seed=args.seed,
            synchronous=args.synchronous,
        )
    out = figures.summary()
    out["synchronous"] = args.synchronous
    out["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
