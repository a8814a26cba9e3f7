"""Large fuzzing runs (issue 16) over :mod:`support.fuzz` (tests/support/fuzz.py): programs
(check, render, compile, fmt idempotence and meaning), plans (load, validate, resolve tools, dump,
plan fmt), templates (parse, render) and the language server (random sessions).

    .venv/bin/python bench/fuzz.py KIND N [--seed S] [--time-limit SECONDS] [--show K]

KIND: programs | plans | templates | lsp (N = messages). Prints progress every 1,000 inputs and
``N inputs, N failures`` at the end, then up to K failing inputs. Exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.fuzz import Outcome, run  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["programs", "plans", "templates", "lsp"])
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--show", type=int, default=5)
    args = ap.parse_args()
    shown = 0

    def report(outcome: Outcome) -> None:  # progress, and each kept failure as soon as it is seen
        nonlocal shown
        print(outcome.line(), flush=True)
        for reason, text in outcome.samples[shown:]:
            print(f"--- {reason}\n{text[:2000]}", flush=True)
        shown = len(outcome.samples)

    outcome = run(
        args.kind,
        args.n,
        args.seed,
        time_limit=args.time_limit,
        keep=args.show,
        progress=report,
    )
    print(f"{outcome.inputs} inputs, {outcome.failures} failures")
    print(outcome.line())
    for reason, text in outcome.samples[shown:]:
        print(f"--- {reason}\n{text[:2000]}")
    return 1 if outcome.failures else 0


if __name__ == "__main__":
    sys.exit(main())
