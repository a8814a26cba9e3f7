"""Large fuzzing runs (issue 16) over :mod:`support.fuzz` (tests/support/fuzz.py): programs
(check, render, compile, fmt idempotence and meaning), plans (load, validate, resolve tools, dump,
plan fmt), templates (parse, render) and the language server (random sessions).

    .venv/bin/python bench/fuzz.py KIND N [--seed S] [--seeds A-B] [--log FILE]
                                          [--time-limit SECONDS] [--show K]

KIND: programs | plans | templates | lsp (N = messages). ``--seeds A-B`` runs N inputs for each
seed A..B in turn (a long run split into chunks, summed at the end); with ``--log FILE`` each
finished chunk is appended to FILE as one JSON line and chunks already there are skipped, so an
interrupted run resumes where it stopped. Prints progress every 1,000 inputs, each failure when it
is seen, then ``N inputs, N failures``, the per-input time distribution (p50/p99/max) and the
slowest inputs. Exit status 1 on any failure. Run it niced on a shared machine:
``nice -n 19 .venv/bin/python bench/fuzz.py programs 10000 --seeds 1-10 --log fuzz.jsonl``.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.fuzz import Outcome, run  # noqa: E402


def _seed_range(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def _chunk(args: argparse.Namespace, seed: int) -> dict:
    """Run one seed's chunk, printing progress and failures as they come; its JSON record."""
    shown = 0

    def report(outcome: Outcome) -> None:
        nonlocal shown
        print(f"  seed {seed}: {outcome.line()}", flush=True)
        for reason, text in outcome.samples[shown:]:
            print(f"--- {reason}\n{text[:2000]}", flush=True)
        shown = len(outcome.samples)

    outcome = run(
        args.kind, args.n, seed, time_limit=args.time_limit, keep=args.show, progress=report
    )
    for reason, text in outcome.samples[shown:]:
        print(f"--- {reason}\n{text[:2000]}", flush=True)
    print(f"seed {seed}: {outcome.line()}", flush=True)
    return {
        "kind": args.kind,
        "n": args.n,
        "seed": seed,
        "inputs": outcome.inputs,
        "failures": outcome.failures,
        "seconds": round(outcome.seconds, 1),
        "times": [round(t, 5) for t in outcome.times],
        "samples": outcome.samples,
        "slow": [(round(t, 3), text[:4000]) for t, text in outcome.slow],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["programs", "plans", "templates", "lsp"])
    ap.add_argument("n", type=int, help="inputs per seed (lsp: messages)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", help="a range A-B of seeds, N inputs each (overrides --seed)")
    ap.add_argument("--log", type=Path, help="JSON-lines file of finished chunks (resumable)")
    ap.add_argument("--time-limit", type=float, default=30.0, help="seconds before a hang")
    ap.add_argument("--show", type=int, default=5, help="failures and slow inputs to keep")
    args = ap.parse_args()
    seeds = _seed_range(args.seeds) if args.seeds else [args.seed]
    # the start-up objects (grammar tables, modules) never become garbage: keep the cyclic
    # collector from walking them again and again, and let it run less often (the front end
    # allocates many small acyclic objects per input)
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    records: dict[int, dict] = {}
    if args.log and args.log.exists():
        for raw in args.log.read_text().splitlines():
            rec = json.loads(raw)
            if rec["kind"] == args.kind and rec["n"] == args.n and rec["seed"] in seeds:
                records[rec["seed"]] = rec
    for seed in seeds:
        if seed in records:
            print(f"seed {seed}: done already ({records[seed]['inputs']} inputs)", flush=True)
            continue
        records[seed] = _chunk(args, seed)
        if args.log:
            with args.log.open("a") as f:
                f.write(json.dumps(records[seed]) + "\n")
    total = Outcome(args.kind)
    for rec in records.values():
        total.inputs += rec["inputs"]
        total.failures += rec["failures"]
        total.seconds += rec["seconds"]
        total.times += rec["times"]
        total.samples += [tuple(s) for s in rec["samples"]]
        total.slow += [tuple(s) for s in rec["slow"]]
    total.slowest = max(total.times, default=0.0)
    total.slow = sorted(total.slow, key=lambda p: -p[0])[: args.show]
    print(f"{total.inputs} inputs, {total.failures} failures")
    print(total.line())
    for took, text in total.slow:
        print(f"--- slow input ({took:.2f} s, {len(text)} characters)\n{text[:600]}")
    return 1 if total.failures else 0


if __name__ == "__main__":
    sys.exit(main())
