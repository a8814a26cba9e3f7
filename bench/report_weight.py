"""The demo run's report: its weight and how soon its graph is on screen (issue 31: ≤ 300 KB,
graph drawn < 0.5 s after load), in headless Chromium (Chromium's performance timing).

    nice -n 19 .venv/bin/python bench/report_weight.py [--runs N]

Runs examples/bug-triage.flow and examples/issue-review.flow replayed from their cassettes (as
scripts/demo.sh does), writes each report, opens each N times (a fresh page each) and prints its
size, the time from navigation start to the graph's first paint (the page marks it in a
``requestAnimationFrame`` after the inline SVG is parsed: ``data-drawn-ms``), first contentful
paint and load, as median and worst.  Exit 1 when a report is over 300 KB or its graph takes
0.5 s or more (median)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.browser import start_chromium  # noqa: E402

from agentflow import api  # noqa: E402

EX = ROOT / "examples"
DEMOS = [
    ("bug-triage", json.loads((EX / "bug-report.json").read_text()), EX / "flow.toml"),
    ("issue-review", {"limit": 50}, EX / "issue-review.toml"),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        browser = start_chromium(out / "profile", width=1280, height=900)
        try:
            for name, inp, config in DEMOS:
                trace = out / f"{name}.jsonl"
                result = api.run_sync(
                    EX / f"{name}.flow", inp, config=config, workspace=EX / "workspace",
                    replay=EX / f"{name}.cassette.jsonl", trace=trace, shape_cache=False,
                )  # fmt: skip
                assert result.ok, result.error
                page = out / f"{name}.html"
                page.write_text(api.report(trace), encoding="utf-8")
                size = page.stat().st_size
                drawn, fcp, load = [], [], []
                for _ in range(args.runs):
                    browser.get("about:blank")
                    browser.get(page.as_uri())
                    d, f, lo = browser.execute_script(
                        "var p = performance.getEntriesByName('first-contentful-paint')[0];"
                        "var n = performance.getEntriesByType('navigation')[0];"
                        "return [Number(document.body.getAttribute('data-drawn-ms')),"
                        " p ? p.startTime : null, n.loadEventEnd];"
                    )
                    drawn.append(d)
                    if f is not None:
                        fcp.append(f)
                    load.append(lo)
                med = statistics.median(drawn)
                print(
                    f"{name}: {size:,} bytes; graph drawn {med:.0f} ms (worst {max(drawn):.0f}), "
                    f"first contentful paint "
                    f"{f'{statistics.median(fcp):.0f} ms' if fcp else '—'}, load "
                    f"{statistics.median(load):.0f} ms, over {args.runs} loads"
                )
                failed |= size > 300_000 or med >= 500
        finally:
            browser.quit()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
