"""Benchmark: `flowc check` on error-heavy files (the error path re-reads the failed chunk to
compute exact expectations, recovery finds the next item, the renderer prints each line).

Prints, for a ~10,000-line file: check time of a clean file, of the same size with a syntax
error on every line (one per item), and the text rendering of those diagnostics; and the
rendering of one error on a line of 50,000 tabs.  Error recovery and rendering should stay
linear: a few times the clean figure, not hundreds.  CPU time, best of ``--repeat``.

    .venv/bin/python bench/check_errors_speed.py [--lines 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse

from check_speed import _best  # same directory: best-of-N process time

from agentflow.compiler.api import check_source
from agentflow.compiler.render import render_text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.lines
    clean = "flow x\n" + "".join(
        f"stage s{i} -> int {{ let x = {i}\n x }}\n" for i in range(n // 2)
    )
    broken = "flow x\n" + "stage s -> int { let x = = 1 }\n" * n
    tabs = "stage s -> int {\n" + "\t" * 50_000 + "@\n}\n"
    check_source(clean[:2000], "warm.flow")
    for name, text in (("clean", clean), ("error every line", broken)):
        lines = text.count("\n")
        dt = _best(lambda t=text: check_source(t, "b.flow"), args.repeat)
        print(f"check {name:<17} {lines:>6} lines in {dt * 1000:7.1f} ms = {lines / dt:>9,.0f} l/s")
    diags = check_source(broken, "b.flow").diagnostics
    dt = _best(lambda: render_text(diags, {"b.flow": broken}), args.repeat)
    print(f"render {len(diags)} diagnostics in {dt * 1000:7.1f} ms")
    diags = check_source(tabs, "t.flow").diagnostics
    dt = _best(lambda: render_text(diags, {"t.flow": tabs}), args.repeat)
    print(f"render an error on a line of 50,000 tabs in {dt * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
