"""Fuzz the front end (issue #3): N random mutations of the checker's golden cases, the
specification's example programs (``tests/data/spec_examples``) and the hostile inputs, each
checked with ``check_source`` and rendered; prints the crash count.

A *crash* is an exception escaping the checker or a renderer, a diagnostic with an impossible
span (line/column < 1, end before start, offsets outside the text), or a mutant that checks
clean and then fails ``flowc compile`` (an internal compiler error).

    .venv/bin/python bench/fuzz_check.py N [--seed S] [--show K]

Exit status 0 when there was no crash, 1 otherwise.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.hostile import HOSTILE, mutate  # noqa: E402

from agentflow.api import CompileError, compile_checked  # noqa: E402
from agentflow.compiler.api import check_source  # noqa: E402
from agentflow.compiler.render import render_json, render_sarif, render_text  # noqa: E402
from agentflow.core.diagnostics import CODES  # noqa: E402


def _sources() -> list[str]:
    out = [p.read_text() for p in sorted((ROOT / "tests" / "compiler" / "check").glob("*.flow"))]
    spec = ROOT / "tests" / "data" / "spec_examples"
    for d in (spec, spec / "diagnostics"):
        out += [p.read_text() for p in sorted(d.glob("*.flow"))]
    # small hostile inputs only (the big ones are slow to mutate many times)
    out += [b.decode("utf-8", "replace") for b in HOSTILE.values() if len(b) < 5000]
    return out


def _problem(text: str) -> str | None:
    """None when ``text`` checks and renders sanely, else a description of the crash."""
    try:
        res = check_source(text, "fuzz.flow")
        for d in res.diagnostics:
            s = d.span
            if d.code not in CODES:
                return f"unregistered code {d.code}"
            if s.line < 1 or s.column < 1 or (s.end_line, s.end_column) < (s.line, s.column):
                return f"bad span {s} for {d.code}: {d.message}"
            if not 0 <= s.start <= s.end <= len(text):
                return f"bad offsets {s} for {d.code}"
        render_text(res.diagnostics, {"fuzz.flow": text})
        render_json(res.diagnostics)
        render_sarif(res.diagnostics)
        if res.ok:
            try:
                compile_checked(res, text, "fuzz.flow")
            except CompileError as e:
                return f"checks clean but does not compile: {e.diagnostics}"
    except Exception:  # noqa: BLE001 - any exception of the checker is the finding
        return traceback.format_exc(limit=3)
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", type=int, nargs="?", default=1000, help="number of mutations")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", type=int, default=3, help="print the first K crashes")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sources = _sources()
    crashes = 0
    t0 = time.perf_counter()
    for i in range(args.n):
        text = mutate(rng.choice(sources), rng)
        problem = _problem(text)
        if problem is not None:
            crashes += 1
            if crashes <= args.show:
                print(f"--- crash {crashes} (mutation {i}):\n{text[:300]!r}\n{problem}")
    dt = time.perf_counter() - t0
    print(f"{args.n} mutations in {dt:.1f} s: {crashes} crash(es)")
    sys.exit(1 if crashes else 0)


if __name__ == "__main__":
    main()
