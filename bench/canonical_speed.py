"""Benchmark: ``canonical(value, shape)`` over 30,000 objects (docs/reference/functions.md).

The objects are ``{id, title, n, tags, owner, t}``; the cases: a shape with no duration
(``{items: {fields: {}}}``), ``t`` null everywhere, ``t`` a duration to rewrite (``90s``) and
one already canonical (``1m30s``) under ``{items: {fields: {t: "duration"}}}``; then the same
call through the evaluator (``canonical(input.xs, …)``, ``xs == ys``, ``index_of``) as the
compiler writes it for a comparison of lists of objects holding a ``duration?``. Prints CPU
milliseconds, best of ``--repeat``; ``--profile`` prints cProfile's top functions of the
``90s`` case.

    .venv/bin/python bench/canonical_speed.py [--repeat 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections.abc import Callable
from typing import Any

from agentflow.grammar.parser import parse_expression
from agentflow.runtime.expressions import evaluate
from agentflow.runtime.functions import IMPLEMENTATIONS

_N = 30_000
_SHAPE = {"items": {"fields": {"t": "duration"}}}
_WRITTEN = '{items: {fields: {t: "duration"}}}'


def _objects(t: str | None) -> list[dict[str, Any]]:
    return [
        {
            "id": f"item-{i}",
            "title": f"title {i}",
            "n": i,
            "tags": ["a", "b"],
            "owner": None,
            "t": t,
        }
        for i in range(_N)
    ]


def _best(work: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    canonical = IMPLEMENTATIONS["canonical"]
    plain, held, rewrite, already = (
        _objects(None),
        _objects(None),
        _objects("90s"),
        _objects("1m30s"),
    )
    cases: list[tuple[str, Callable[[], object]]] = [
        (
            "no duration in the shape, {items: {fields: {}}}",
            lambda: canonical(plain, {"items": {"fields": {}}}),
        ),
        ("t null everywhere", lambda: canonical(held, _SHAPE)),
        ("t 90s everywhere (rewritten)", lambda: canonical(rewrite, _SHAPE)),
        ("t 1m30s everywhere (already canonical)", lambda: canonical(already, _SHAPE)),
    ]
    scope = {"input": {"xs": plain, "ys": plain}}
    for text in (
        f"canonical(input.xs, {_WRITTEN})",
        f"canonical(input.xs, {_WRITTEN}) == canonical(input.ys, {_WRITTEN})",
        f'index_of(canonical(input.xs, {_WRITTEN}), canonical(input.ys[{_N - 1}], {{fields: {{t: "duration"}}}}))',
    ):
        expr = parse_expression(text)
        cases.append((f"evaluator: {text[:58]}…", lambda e=expr: evaluate(e, scope)))
    print("| case (30,000 objects) | CPU ms |")
    print("| --- | ---: |")
    for name, work in cases:
        print(f"| {name} | {_best(work, args.repeat):.1f} |", flush=True)
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(canonical, rewrite, _SHAPE)
        pstats.Stats(profile).sort_stats("tottime").print_stats(8)


if __name__ == "__main__":
    main()
