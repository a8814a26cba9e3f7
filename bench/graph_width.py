"""Benchmark: how wide and tall `flowc graph` draws a flow (issue 31 item 3: "a 10-stage flow is
2,727 px wide" when the layout followed data dependencies only).

Renders Mermaid text with the Mermaid library the run report ships
(src/agentflow/runtime/report_assets/mermaid.min.js) in headless Chromium (the distribution's
chromium and chromedriver, driven with Selenium, as tests/e2e/test_report_browser.py does) and
prints the drawn SVG's width and height in CSS pixels.

    .venv/bin/python bench/graph_width.py                 # the generated 10-stage flow
    .venv/bin/python bench/graph_width.py FLOW_OR_PLAN    # any flow
    .venv/bin/python bench/graph_width.py --mermaid FILE  # Mermaid text drawn by another flowc
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MERMAID = ROOT / "src" / "agentflow" / "runtime" / "report_assets" / "mermaid.min.js"

#: ten stages, each reading the input and calling a tool: nothing in the data orders them
TEN_STAGES = "flow ten\ninput { n: int }\nextern tool user__f(n: int) -> int\n" + "".join(
    f"stage s{i} -> int {{\n  return user__f(n: input.n + {i})\n}}\n" for i in range(10)
)


def draw(mermaid_text: str) -> tuple[float, float]:
    """(width, height) in CSS px of ``mermaid_text`` drawn by Mermaid in headless Chromium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    page = (
        "<!doctype html><html><body><pre class='mermaid'></pre><script>"
        + MERMAID.read_text(encoding="utf-8")
        + "</script><script>const pre=document.querySelector('pre');pre.textContent="
        + json.dumps(mermaid_text)
        + ";mermaid.initialize({startOnLoad:false,maxTextSize:10000000});"
        + "mermaid.run({nodes:[pre]});</script></body></html>"
    )
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "graph.html"
        html.write_text(page, encoding="utf-8")
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=4000,3000"):
            options.add_argument(arg)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            driver.get(html.as_uri())
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                box = driver.execute_script(
                    "const s=document.querySelector('pre svg');"
                    "if(!s) return null; const b=s.getBBox(); return [b.width, b.height];"
                )
                if box:
                    return float(box[0]), float(box[1])
                time.sleep(0.2)
            raise SystemExit("Mermaid drew nothing within 60 s")
        finally:
            driver.quit()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("flow", nargs="?", help="a .flow or plan file (default: 10 stages)")
    parser.add_argument("--mermaid", help="a file of Mermaid text to draw instead")
    args = parser.parse_args()
    if args.mermaid:
        text = Path(args.mermaid).read_text(encoding="utf-8")
        what = args.mermaid
    else:
        from agentflow import api

        with tempfile.TemporaryDirectory() as tmp:
            target = Path(args.flow) if args.flow else Path(tmp) / "ten.flow"
            if not args.flow:
                target.write_text(TEN_STAGES, encoding="utf-8")
            text = api.graph(target)
        what = args.flow or "10 stages, each reading only the input"
    width, height = draw(text)
    print(f"{what}: {width:.0f} × {height:.0f} px")
    return 0


if __name__ == "__main__":
    sys.exit(main())
