"""Benchmark: evaluation that ends when it must (docs/decisions.md "Evaluation that ends when it
must").

Prints, for the code on ``sys.path`` (run it once as is, once with ``PYTHONPATH`` at another
checkout's ``src`` to compare):

- ``doubling``: ``loop up to 40 as r, s: json = [1] { [s, s] }`` with a JSON Lines trace — the
  run's wall and CPU seconds to its size limit (round 22) and the trace's size;
- ``deadline``: a 1 s ``deadline`` over an output that evaluates for tens of seconds (300
  ``count_by`` calls over 100,000 pairs) — seconds until the run ends;
- ``unique``: ``unique(xs)`` of N distinct ints — seconds (pairwise before: quadratic);
- ``overhead``: the evaluator's hot path — µs per evaluation of expression-heavy templates
  (arithmetic, members, interpolation, projections over 10,000 elements, library calls, user
  functions: one call, a tree of 63 calls, 8 calls side by side), best of several
  repetitions — the cost of the checkpoints and of the call limit.

    .venv/bin/python bench/evaluation_ends.py [--skip-slow]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from agentflow import api
from agentflow.grammar import ast
from agentflow.grammar.parser import parse_expression
from agentflow.ir.loader import load_plan_data
from agentflow.runtime.events import JsonlSink
from agentflow.runtime.expressions import evaluate

DOUBLING = (
    "stage a -> int {\n  let t = loop up to 40 as r, s: json = [1] { [s, s] }\n  return 1\n}\n"
)
BUSY = "sum([" + ", ".join(['len(count_by(zip(input.xs, input.xs), "first"))'] * 300) + "])"

HOT = [
    ("arithmetic", "(a + b) * 2 - c / 4 + (a % 7)", {"a": 12, "b": 30, "c": 8}),
    (
        "members",
        'x.y.z == "ok" and x.n > 3 or x.flag',
        {"x": {"y": {"z": "ok"}, "n": 5, "flag": False}},
    ),
    (
        "interpolation",
        '"${x.name} has ${x.n} items: ${x.tags}"',
        {"x": {"name": "a", "n": 3, "tags": ["p", "q"]}},
    ),
    ("projection 10k", "xs[*].a", {"xs": [{"a": i} for i in range(10_000)]}),
    ("count_by 10k", 'count_by(xs, "a")', {"xs": [{"a": i % 50} for i in range(10_000)]}),
    ("len+sum 10k", "len(ys) + sum(ys)", {"ys": list(range(10_000))}),
    ("in 10k", "-1 in ys", {"ys": list(range(10_000))}),
]


#: user functions for the hot path: ``inc(x) = x + 1``; ``t0(x) = inc(x)``, ``tk(x) = t(k-1)(x) +
#: t(k-1)(x) - x`` (t5: 63 calls per call)
USER = {"inc": (("x",), "x + 1"), "t0": (("x",), "inc(x)")}
USER.update({f"t{k}": (("x",), f"t{k - 1}(x) + t{k - 1}(x) - x") for k in range(1, 6)})
HOT_CALLS = [
    ("user call", "inc(a) * 2", {"a": 12}),
    ("user tree 63", "t5(a)", {"a": 12}),
    ("user calls x8", " + ".join(["inc(a)"] * 8), {"a": 12}),
]


def _bound(expr: ast.Expr) -> ast.Expr:
    """``expr`` with its calls of :data:`USER` bound (as the plan loader binds them)."""
    table: dict[str, ast.UserFunction] = {}
    for name, (params, body) in USER.items():
        table[name] = ast.UserFunction(name, params, parse_expression(body, "<b>"))
    for fn in [*table.values(), expr]:
        for node in ast.walk(fn.body if isinstance(fn, ast.UserFunction) else fn):
            if isinstance(node, ast.UserCall):
                node.function = table[node.name]
    return expr


def _run(source: str, name: str, trace: Path | None, inp: dict | None = None) -> tuple:
    plan = load_plan_data(api.compile_source(source, name).plan, name)
    sinks = [JsonlSink(trace)] if trace is not None else []
    wall, cpu = time.perf_counter(), time.process_time()
    result = api.run_sync(
        plan, inp or {}, workspace=str(trace.parent if trace else "."), sinks=sinks
    )
    return result, time.perf_counter() - wall, time.process_time() - cpu


def doubling(tmp: Path) -> None:
    trace = tmp / "d.jsonl"
    result, wall, cpu = _run(DOUBLING, "d.flow", trace)
    print(
        f"doubling: {result.error.code if result.error else result.status} at "
        f"{result.error.step_path if result.error else '-'}; wall {wall:.2f} s, cpu {cpu:.2f} s, "
        f"trace {trace.stat().st_size / 1e6:.1f} MB"
    )


def deadline(tmp: Path) -> None:
    plan = load_plan_data(
        {
            "version": 1,
            "name": "fin",
            "deadline": "1s",
            "input_schema": {"type": "object"},
            "steps": [{"id": "E0", "tool_name": "value", "input": {"value": 1}}],
            "finish": {"mode": "output", "output": "{{ " + BUSY + " }}"},
        },
        "fin.plan.yaml",
    )
    wall = time.perf_counter()
    result = api.run_sync(plan, {"xs": list(range(100_000))}, workspace=str(tmp))
    took = time.perf_counter() - wall
    print(
        f"deadline 1s: {result.status} {result.error.code if result.error else ''} after {took:.2f} s"
    )


def unique(n: int) -> None:
    expr = parse_expression("unique(xs)", "<b>")
    xs = list(range(n))
    t = time.process_time()
    evaluate(expr, {"xs": xs})
    print(f"unique of {n:,}: {time.process_time() - t:.2f} s")


def overhead(reps: int = 15) -> None:
    for label, text, scope in HOT + HOT_CALLS:
        expr = _bound(parse_expression(text, "<b>"))
        n = 2000 if "k" not in label else 20
        best = float("inf")
        for _ in range(reps):
            t = time.process_time()
            for _ in range(n):
                evaluate(expr, scope)
            best = min(best, (time.process_time() - t) / n)
        print(f"overhead {label:15s} {best * 1e6:10.2f} µs")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-slow", action="store_true", help="only the fast figures")
    args = parser.parse_args()
    print(f"code: {api.__file__.rsplit('/src/', 1)[0]}  (pid {os.getpid()})")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        overhead()
        unique(20_000)
        if not args.skip_slow:
            doubling(tmp)
            deadline(tmp)


if __name__ == "__main__":
    main()
