"""Battery: the language server's incremental analysis equals a full check on random edits
(issue 35; the suite runs a small version, tests/lsp/test_incremental_check.py).

For each `.flow` file under ``tests/`` and ``examples/`` plus the generated programs of
``bench/check_speed.py`` and ``bench/lsp_latency.py``, applies ``--edits`` random edits (names
swapped, lines duplicated or removed, brackets, quotes, keywords, ``///`` lines typed, characters
deleted; every fourth version goes back to the original text) and after each compares what
:func:`agentflow.lsp.analysis.analyze` with the document's incremental parser and stage memo
gives with :func:`agentflow.compiler.api.check_source`: the items (kind, span, doc comment), the
diagnostics (with notes and hints), the stage types and the tools.  Prints the counts (versions,
incremental parses, stages replayed / checked) and exits 1 at the first difference.

    .venv/bin/python bench/lsp_incremental_fuzz.py [--edits 60] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from pathlib import Path

from agentflow.compiler.api import check_source
from agentflow.compiler.checker import CheckResult
from agentflow.lsp.analysis import analyze
from agentflow.lsp.incremental import IncrementalParser

sys.path.insert(0, str(Path(__file__).parent))
import check_speed  # noqa: E402
import lsp_latency  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
_WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
_PIECES = ["{", "}", "(", ")", '"', "stage ", "type ", "\n", "x", ".", " + ", "/// d\n", "// c"]


def _span(s) -> tuple | None:
    return None if s is None else (s.line, s.column, s.end_line, s.end_column, s.start, s.end)


def summary(r: CheckResult) -> tuple:
    """What a check says, positions as values."""
    return (
        [(type(i).__name__, _span(i.span), getattr(i, "doc", None)) for i in r.module.items],
        [
            (
                d.code,
                d.message,
                _span(d.span),
                d.hint,
                [(n.message, _span(n.span)) for n in d.notes],
            )
            for d in r.diagnostics
        ],
        {k: str(v) for k, v in r.stage_types.items()},
        list(r.tools),
    )


def edit(text: str, rnd: random.Random) -> str:
    """One random edit (see the module docstring)."""
    r = rnd.random()
    words = list(_WORD.finditer(text))
    if r < 0.4 and words:
        m = rnd.choice(words)
        return text[: m.start()] + rnd.choice(words).group() + text[m.end() :]
    lines = text.split("\n")
    k = rnd.randrange(len(lines))
    if r < 0.5:
        lines.insert(k, lines[k])
        return "\n".join(lines)
    if r < 0.6:
        del lines[k]
        return "\n".join(lines)
    i = rnd.randrange(len(text) + 1)
    if r < 0.85:
        return text[:i] + rnd.choice(_PIECES) + text[i:]
    return text[:i] + text[i + rnd.randrange(1, 4) :]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edits", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    files = [("check_speed.flow", check_speed.generate(400))]
    files.append(("lsp_latency.flow", lsp_latency.generate(400)))
    for root in (REPO / "tests", REPO / "examples"):
        files += [(str(f), f.read_text(encoding="utf-8")) for f in sorted(root.rglob("*.flow"))]
    versions = incremental = replayed = checked = 0
    for name, base in files:
        parser = IncrementalParser(name)
        rnd = random.Random(f"{args.seed}:{name}")
        text = base
        for k in range(args.edits):
            got = analyze(text, name, parser).result
            versions += 1
            incremental += parser.last_mode == "incremental"
            replayed += parser.memo.replayed
            checked += parser.memo.checked
            if summary(got) != summary(check_source(text, name)):
                print(f"DIFFERENT: {name} after {k} edits", file=sys.stderr)
                sys.exit(1)
            text = base if k % 4 == 3 else edit(text, rnd)
    print(
        f"{len(files)} files, {versions} versions: {incremental} parsed incrementally, "
        f"stages replayed {replayed}, checked {checked}; all equal to a full check"
    )


if __name__ == "__main__":
    main()
