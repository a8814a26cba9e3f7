"""Benchmark: front-end speed (issue #3, docs/spec/LANGUAGE.md §9).

Generates a valid, varied ``.flow`` program (named types, aliases, literal unions, maps, optional
fields, constraints, extern tools, agents, stages with lets, ``if``, ``map``/``parallel map``,
``filter``, ``reduce``, ``ask``, ``verify``, interpolation) that checks with **no** diagnostic,
and prints:

* parse speed (lines/s) and whole-check speed (parse + type check, lines/s) for a 10,000-line file;
* milliseconds for the whole check of a 500-line file;
* beside them, CPython's ``compile()`` of a Python file of the same line count (real code:
  standard-library modules, cut at a top-level statement) and the ratio of the whole check to it;
* the same figures with ``parse_module``'s fast path off (the LALR path alone,
  ``parse_module_lalr``), measured alternating with the others in the same rounds (A/B).

Targets: ≥ 40,000 lines/s for the whole check on one core; < 30 ms for 500 lines.  The Lark
parser is built once per process (a warm-up run precedes every measurement).  Times are CPU
time of this process (``time.process_time``), best of ``--repeat`` runs, so that other work on
a shared machine disturbs them less.

    .venv/bin/python bench/check_speed.py [--lines 10000] [--repeat 5] [--profile] [--dump FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from agentflow.compiler.api import check_source
from agentflow.grammar import parser
from agentflow.grammar.parser import parse_module, parse_module_lalr

_HEADER = """\
flow bench "Generated benchmark program"
input { repo: path, items: Item0[], limit: int, people: member[], tags: map<text> }
deadline 1h30m

use agent "analyst" as analyst
use team "core" as core

extern tool tracker__list(limit: int?) -> { items: Item0[] }

type Priority = "p0" | "p1" | "p2"

stage lead -> text {
  agent(core.main) {
    task "Summarise ${input.repo}"
    expect text
  }
}
"""


def _block(i: int) -> str:
    """One ~50-line chunk: two types, one alias, three stages (all reference earlier ones)."""
    prev = f"s{i - 1}_count" if i else "0"
    return f"""
/// An item of chunk {i}.
type Item{i} {{
  /// stable identifier
  id: text @length(1, 40)
  title: text
  labels: text[]
  owner: member?
  score: number @range(0, 1)
  meta: map<int>
}}
type Result{i} {{ id: text, priority: Priority, notes: text?, size: int }}
type Alias{i} = Result{i}[]

stage s{i}_fetch -> Item0[] {{
  let listed = tracker__list(limit: input.limit + {i})
  if listed.items.count == 0 {{
    return input.items
  }}
  return listed.items + input.items
}}

stage s{i}_triage -> Alias{i} {{
  parallel map s{i}_fetch as item limit 4 {{
    let label = item.labels[0] ?? "none"
    agent(analyst) {{
      task "Triage ${{item.id}} (${{index}}): ${{item.title}} [${{label}}] after {i}"
      input {{ item: item, repo: input.repo, n: {prev} }}
      tools [read_file, grep, glob]
      expect Result{i}
      timeout 2m
      retry {{ attempts: 2, on: [transient, rate_limit] }}
    }}
  }}
}}

stage s{i}_count -> int {{
  let urgent = filter s{i}_triage as t where t.priority == "p0" or (t.notes ?? "") != ""
  let total = reduce urgent as t, acc = 0 {{
    if t.size > 3 and t.id in input.tags {{
      return acc + t.size
    }}
    return acc + 1
  }}
  let names = map urgent as u {{ "${{u.id}}: ${{u.priority}}" }}
  require names.count in 0..100 else fail "too many in chunk {i}"
  let sizes = urgent[*].size
  return total + sizes.count
}}
"""


def generate(lines: int) -> str:
    """Return a valid program of about ``lines`` lines (at least the header)."""
    parts = [_HEADER]
    n = 0
    total = _HEADER.count("\n")
    while total < lines:
        b = _block(n)
        parts.append(b)
        total += b.count("\n")
        n += 1
    return "".join(parts)


def python_source(lines: int) -> str:
    """About ``lines`` lines of real Python (standard-library modules, repeated as needed),
    cut after a top-level statement so that it compiles."""
    import argparse as m1
    import dataclasses as m2
    import enum as m3
    import inspect
    import pathlib as m4
    import textwrap as m5
    import typing as m6

    text = "\n".join(inspect.getsource(m) for m in (m1, m6, m2, m3, m4, m5))
    while text.count("\n") < lines:
        text += "\n" + text
    rows = text.splitlines()[:lines]
    k = len(rows)
    while k > 0 and (
        rows[k - 1].startswith((" ", "\t", "@", ")", "]", "}")) or not rows[k - 1].strip()
    ):
        k -= 1
    return "\n".join(rows[: k - 1]) + "\n"


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def _lalr_only(fn):
    """``fn`` run with ``parse_module``'s fast path off (every file parsed the LALR way)."""

    def run():
        saved = parser.parse_fast
        parser.parse_fast = lambda text, file, driver: ([], 0)
        try:
            fn()
        finally:
            parser.parse_fast = saved

    return run


def _alternating(fns: dict[str, object], repeat: int) -> dict[str, float]:
    """The best CPU time of each function over ``repeat`` rounds, the functions run in turn
    within each round (so that a change of load hits them alike)."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="cProfile the whole check")
    ap.add_argument("--dump", help="write the generated 10k-line program to this file")
    args = ap.parse_args()

    big = generate(args.lines)
    small = generate(500)
    if args.dump:
        with open(args.dump, "w") as f:
            f.write(big)
    nbig = big.count("\n") + 1
    nsmall = small.count("\n") + 1

    res = check_source(big, "bench.flow")  # warm-up (builds the parser once)
    if res.diagnostics:
        for d in res.diagnostics[:10]:
            print("unexpected:", d.span.line, d.code, d.message)
        raise SystemExit("the generated program is not clean")

    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        check_source(big, "bench.flow")
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return

    py = python_source(nbig)
    npy = py.count("\n")
    t = _alternating(
        {
            "parse": lambda: parse_module(big, "bench.flow"),
            "parse_lalr": lambda: parse_module_lalr(big, "bench.flow"),
            "check": lambda: check_source(big, "bench.flow"),
            "check_lalr": _lalr_only(lambda: check_source(big, "bench.flow")),
            "compile": lambda: compile(py, "bench.py", "exec"),
        },
        args.repeat,
    )
    t_small = _best(lambda: check_source(small, "small.flow"), args.repeat * 4)
    t_py = t["compile"]
    for label, key in (("", ""), ("LALR path alone, ", "_lalr")):
        t_parse, t_check = t["parse" + key], t["check" + key]
        print(
            f"{label}parse:       {nbig} lines in {t_parse * 1000:.1f} ms = {nbig / t_parse:,.0f} lines/s"
        )
        print(
            f"{label}whole check: {nbig} lines in {t_check * 1000:.1f} ms = {nbig / t_check:,.0f} lines/s"
        )
        print(
            f"{label}whole check / compile() per line: {(t_check / nbig) / (t_py / npy):.2f}x (goal ≤ 2)"
        )
    print(f"small check: {nsmall} lines in {t_small * 1000:.2f} ms")
    print(f"compile():   {npy} lines of Python in {t_py * 1000:.1f} ms = {npy / t_py:,.0f} lines/s")


if __name__ == "__main__":
    main()
