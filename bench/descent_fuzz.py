"""Battery: the fast path of ``parse_module`` (grammar/descent.py) against the LALR path on
thousands of mutated programs (issue 35, docs/decisions.md "Checking speed").

Each mutant (one to three token edits of a repository `.flow` file or of the check-speed
benchmark's generated program: a token deleted or duplicated; a keyword, bracket, operator or
line break inserted; a name replaced by a keyword) is parsed both ways.  The fast path must
either decline or give exactly the LALR path's AST for a file the LALR path parses without a
diagnostic, and ``parse_module`` (which, after a syntax error, starts the LALR path after the
items the fast path kept) must give the LALR path's module and diagnostics.  Prints how many mutants the fast path took and how many disagreed (must be 0);
exits 1 on a disagreement, writing the mutant to ``descent-fuzz-<n>.flow``.  The suite runs 150
(``tests/grammar/test_descent.py``).

    .venv/bin/python bench/descent_fuzz.py [--count 5000] [--seed 1]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t = _load(ROOT / "tests" / "grammar" / "test_descent.py", "test_descent")
    texts = [p.read_text(encoding="utf-8") for p in t._corpus()] + [t._generated(300)]
    t0 = time.monotonic()
    taken = bad = 0
    for i, text in enumerate(t.mutants(texts, args.count, args.seed)):
        items = t.parse_clean(text, "m.flow", t.DRIVER)
        taken += items is not None
        try:
            t.assert_same_as_lalr(text, "m.flow")
        except AssertionError as e:
            bad += 1
            out = Path(f"descent-fuzz-{i}.flow")
            out.write_text(text, encoding="utf-8")
            print(f"DISAGREEMENT ({out}): {e}")
    print(
        f"{args.count} mutants in {time.monotonic() - t0:.0f} s: the fast path took {taken}, "
        f"{bad} disagreed with the LALR path"
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
