"""Long member chains, long stages and long literal unions cost the front end (check and
``fmt``) time roughly in proportion to their length, not its square (issue 16: earlier fuzzing
runs saw timeouts on long member chains). Four times the length must cost less than ten times
the CPU time (linear is 4, quadratic 16); best of three runs, CPU time of this process, so load
on a shared machine disturbs it little."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from agentflow.compiler.api import check_source
from agentflow.compiler.fmt import format_source


def _chain(n: int) -> str:
    return (
        "input { a: json }\nstage s -> json {\n  let v = input.a" + ".b" * n + "\n  return 1\n}\n"
    )


def _lets(n: int) -> str:
    body = "".join(f"  let v{i} = input.a + {i}\n" for i in range(n))
    return f"input {{ a: int }}\nstage s -> int {{\n{body}  return v{n - 1}\n}}\n"


def _union(n: int) -> str:
    members = " | ".join(f'"m{i}"' for i in range(n))
    return f"type U = {members}\ninput {{ a: U }}\nstage s -> U {{\n  return input.a\n}}\n"


def _cpu(f: Callable[[str], object], src: str) -> float:
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        f(src)
        best = min(best, time.process_time() - t)
    return max(best, 1e-4)


SHAPES = {"member chain": (_chain, 400), "let statements": (_lets, 120), "union": (_union, 600)}
PASSES = {
    "check": lambda src: check_source(src, "long.flow"),
    "fmt": lambda src: format_source(src, "long.flow"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("stage", list(PASSES))
def test_four_times_longer_costs_less_than_ten_times_more(shape, stage):
    make, n = SHAPES[shape]
    run = PASSES[stage]
    run(make(n))  # warm-up: grammar tables, caches
    short, long = _cpu(run, make(n)), _cpu(run, make(4 * n))
    assert long < 10 * short, f"{shape} {stage}: {short:.4f} s at {n}, {long:.4f} s at {4 * n}"
