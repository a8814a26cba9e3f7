"""Benchmark: `flowc lsp` latency from ``didChange`` to ``publishDiagnostics`` (issue #9).

Starts ``python -m agentflow lsp`` as a real client would (stdio, Content-Length framing), opens a
generated ~2,000-line `.flow` file, then sends full-text ``didChange`` notifications one at a
time — alternately introducing and fixing a type error — and times each until the
``publishDiagnostics`` for that version arrives.  Prints p50/p95/max for the server's default
debounce (which applies only while a check of the document is under way), for
``debounce_ms=0`` and for edits that introduce a *syntax* error (the incremental parser then
may fall back to a whole-file parse), and, for reference, the in-process time of a whole
``check_source`` and of the incremental analysis the server runs (the incremental parser and
the stage memo, issue 35).  Target (issue 35): p50 ≤ 15 ms and p95 ≤ 25 ms on 2,000 lines.

    .venv/bin/python bench/lsp_latency.py [--lines 2000] [--changes 100]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from agentflow.compiler.api import check_source
from agentflow.lsp.analysis import analyze
from agentflow.lsp.client import LspClient
from agentflow.lsp.incremental import IncrementalParser

_HEAD = """\
flow bench "LSP latency benchmark"
input Report
use agent "repo-investigator" as investigator
use team "dev-team" as dev

type Report {
  /// the title
  title: text
  files: path[]
  logs: text?
}
"""

_BLOCK = """\
/// Block {i}.
type Finding{i} {{
  /// where it is
  file: path
  line: int @range(1, 100000)
  severity: "low" | "medium" | "high"
  notes: text[]
}}

stage scan{i} -> Finding{i}[] {{
  let files = input.files
  let wanted = files.count > 0 and input.title != ""
  require wanted else fail "nothing to scan in block {i}"
  return parallel map files as f limit 4 {{
    agent(investigator) {{
      task "Inspect ${{f}} for: ${{input.title}} (${{input.logs ?? "no logs"}})"
      input {{ file: f, index: index }}
      tools [read_file, grep]
      expect Finding{i}
      timeout 2m
    }}
  }}
}}

stage count{i} -> int {{
  let found = scan{i}
  let high = filter found as x where x.severity == "high"
  return high.count + found.count * 2
}}
"""


def generate(lines: int) -> str:
    """A valid program of about ``lines`` lines (it checks with no error)."""
    parts = [_HEAD]
    i = 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.append(_BLOCK.format(i=i))
        i += 1
    return "\n".join(parts)


def measure(
    text: str, changes: int, debounce_ms: float | None, syntax: bool = False
) -> list[float]:
    """Milliseconds from each didChange to its publishDiagnostics; every other change breaks
    the last stage with a type error (or, with ``syntax``, a syntax error)."""
    uri = Path(__file__).with_suffix(".flow").as_uri()  # a buffer: the server never reads it
    options = None if debounce_ms is None else {"debounce_ms": debounce_ms}
    wrong = "return high.count + " if syntax else 'return high.count + "x"'
    broken = text.replace("return high.count + found.count * 2", wrong, 1)
    assert broken != text
    out: list[float] = []
    with LspClient() as c:
        c.initialize(options=options)
        c.open(uri, text)
        c.wait_notification("textDocument/publishDiagnostics", timeout=30)
        for v in range(2, changes + 2):
            body = broken if v % 2 else text
            t0 = time.perf_counter()
            c.change(uri, body, v)
            got = c.wait_notification(
                "textDocument/publishDiagnostics", lambda p, v=v: p.get("version") == v, timeout=30
            )
            out.append((time.perf_counter() - t0) * 1000)
            assert bool(got["diagnostics"]) == bool(v % 2), got
    return out


def _report(name: str, ms: list[float]) -> None:
    q = statistics.quantiles(ms, n=100)
    print(
        f"{name:<28} p50 {statistics.median(ms):6.1f} ms   p95 {q[94]:6.1f} ms   "
        f"max {max(ms):6.1f} ms   (n={len(ms)})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--changes", type=int, default=100)
    args = ap.parse_args()
    text = generate(args.lines)
    result = check_source(text, "bench.flow")
    if not result.ok:
        sys.exit(f"generated program does not check: {result.errors[:3]}")
    print(f"file: {text.count(chr(10))} lines, {len(text)} chars")
    check_source(text, "bench.flow")
    t = []
    for _ in range(20):
        t0 = time.perf_counter()
        check_source(text, "bench.flow")
        t.append((time.perf_counter() - t0) * 1000)
    _report("in-process check_source", t)
    parser = IncrementalParser("bench.flow")
    analyze(text, "bench.flow", parser)
    broken = text.replace("return high.count + found.count * 2", 'return high.count + "x"', 1)
    t = []
    for v in range(40):
        t0 = time.perf_counter()
        analyze(broken if v % 2 == 0 else text, "bench.flow", parser)
        t.append((time.perf_counter() - t0) * 1000)
    _report("in-process incremental", t)
    _report("didChange→diagnostics", measure(text, args.changes, None))
    _report("  … with debounce_ms=0", measure(text, args.changes, 0))
    _report("  … syntax-error edits", measure(text, args.changes, None, syntax=True))
    print("target: didChange→diagnostics p50 ≤ 15 ms, p95 ≤ 25 ms (2,000 lines)")


if __name__ == "__main__":
    main()
