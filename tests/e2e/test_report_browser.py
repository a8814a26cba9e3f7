"""Acceptance (issue 22): run reports and flow graphs open in a real headless Chromium.

Chromium and its driver come from the distribution's packages (scripts/system-packages.sh
installs them; .ci/run calls it) and are driven with Selenium. Each page must load without a
console error, draw its Mermaid graph, and show what the run did; a screenshot of each is
saved in the test's temporary directory. If the browser cannot be started the tests fail (they
never skip).
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest
from support.chat_server import answer, tool_calls

from agentflow import api

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

TWENTY = """\
// Summarise each of twenty notes, five at a time.
flow twenty "Summarise notes"
input { notes: text[] }

use agent "summariser" as summariser

type Summary {
  note: text
  words: int
}

stage summarise -> Summary[] {
  return parallel map input.notes as note limit 5 {
    agent(summariser) {
      task "Summarise the note: ${note}"
      tools [read_file]
      expect Summary
    }
  }
}
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """A headless Chromium driven by the distribution's chromedriver (Selenium)."""
    for exe in (CHROMIUM, CHROMEDRIVER):
        if not Path(exe).exists():
            pytest.fail(f"{exe} is missing: run scripts/system-packages.sh (as root)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-dev-shm-usage", "--window-size=1400,1800",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def _open(browser, page: Path, screenshot: Path) -> list[dict]:
    """Load ``page``, wait until its graph is drawn (or failed), save a screenshot; returns the
    browser console's entries."""
    browser.get_log("browser")  # drop what an earlier page logged
    browser.get(page.as_uri())
    deadline = time.monotonic() + 60
    state = None
    while time.monotonic() < deadline:
        state = browser.execute_script("return document.body.getAttribute('data-graph')")
        if state in ("rendered", "failed"):
            break
        time.sleep(0.2)
    assert state == "rendered", f"graph state {state!r}: {browser.get_log('browser')}"
    browser.save_screenshot(str(screenshot))
    assert screenshot.stat().st_size > 10_000
    return browser.get_log("browser")


def _errors(logs: list[dict]) -> list[dict]:
    return [e for e in logs if e.get("level") == "SEVERE"]


def _script(request: dict):
    """Each note's agent: one read_file call for note 3, then a Summary of its note."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    note = re.search(r"Summarise the note: (.*)", user).group(1).strip()
    called = any(m["role"] == "tool" for m in request["messages"])
    if note == "note 3" and not called:
        return tool_calls(("builtin__read_file", {"path": "missing.txt"}), delay=0.05)
    return answer({"note": note, "words": len(note.split())}, delay=0.05)


def test_report_of_a_twenty_item_map_run_loads_without_console_errors(
    browser, chat_server, tmp_path
):
    chat_server.script(_script)
    config = chat_server.write_config(
        tmp_path, extra='[agents.summariser]\nsystem_prompt = "Be brief."\n'
    )
    flow = tmp_path / "twenty.flow"
    flow.write_text(TWENTY, encoding="utf-8")
    trace = tmp_path / "trace.jsonl"
    from support.chat_server import TEST_API_KEY

    from agentflow.runtime.config import load_config

    result = api.run_sync(
        flow,
        {"notes": [f"note {i}" for i in range(20)]},
        config=load_config(config, env={"SCRIPTED_API_KEY": TEST_API_KEY}),
        workspace=tmp_path,
        trace=trace,
        shape_cache=False,
    )
    assert result.status == "ok", result.error
    assert len(result.output) == 20

    page = tmp_path / "report.html"
    page.write_text(api.report(trace), encoding="utf-8")
    html = page.read_text(encoding="utf-8")
    assert "http://" not in re.sub(r"http://www\.w3\.org[^\"' ]*", "", html.split("<script>")[0])
    logs = _open(browser, page, tmp_path / "report-twenty.png")
    assert _errors(logs) == [], logs

    items = browser.find_elements("css selector", "#steps-table tr.item")
    assert len(items) == 20
    assert sorted(i.get_attribute("data-path") for i in items) == sorted(
        f"E0/do.{i}" for i in range(20)
    )
    assert all(i.get_attribute("data-status") == "ok" for i in items)
    assert len(browser.find_elements("css selector", ".gantt .row[data-item]")) == 20
    # the map ran five at a time: some item bars overlap in the timeline
    starts = sorted(
        (e["time"] - e["data"]["elapsed_ms"] / 1000, e["time"])
        for e in map(json.loads, trace.read_text().splitlines())
        if e["kind"] == "step_finished" and e["path"].startswith("E0/do.")
    )
    assert any(b[0] < a[1] for a, b in zip(starts, starts[1:], strict=False))
    # the conversation of the note that called a tool shows the call and its error result
    card = browser.find_element("css selector", "details.agent[data-path='E0/do.3']")
    assert "read_file" in card.text and "agent turn 2" in card.text
    assert "conforms to Summary" in card.text
    svg = browser.find_elements("css selector", "#graph svg")
    assert svg and "summariser" in svg[0].get_attribute("textContent")


def test_report_of_the_bug_triage_example_shows_every_step(browser, tmp_path):
    trace = tmp_path / "trace.jsonl"
    result = api.run_sync(
        EXAMPLES / "bug-triage.flow",
        json.loads((EXAMPLES / "bug-report.json").read_text()),
        config=EXAMPLES / "flow.toml",
        workspace=EXAMPLES / "workspace",
        replay=EXAMPLES / "bug-triage.cassette.jsonl",
        trace=trace,
        shape_cache=False,
    )
    assert result.ok
    page = tmp_path / "bug-triage.html"
    page.write_text(api.report(trace), encoding="utf-8")
    logs = _open(browser, page, tmp_path / "report-bug-triage.png")
    assert _errors(logs) == [], logs
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    paths = {e["path"] for e in events if e["kind"] == "step_started"}
    rows = browser.find_elements("css selector", "#steps-table tbody tr")
    assert {r.get_attribute("data-path") for r in rows} == paths
    agents = browser.find_elements("css selector", "details.agent")
    assert len(agents) == 4  # E0, E2 and the two map items
    investigator = agents[0].text
    for tool in ("builtin__list_dir", "builtin__grep", "builtin__read_file"):
        assert tool in investigator
    assert "agent turn 4" in investigator and "conforms to Reproduction" in investigator
    assert "drafted a fix" in browser.find_element("css selector", "#output").text


GRAPH_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{name}</title></head>
<body><pre class="mermaid">{graph}</pre><script>{js}</script><script>
mermaid.initialize({{startOnLoad: false, securityLevel: "strict"}});
mermaid.run({{nodes: document.querySelectorAll("pre.mermaid")}})
  .then(function () {{ document.body.setAttribute("data-graph", "rendered"); }})
  .catch(function (e) {{ document.body.setAttribute("data-graph", "failed");
                         console.error(String(e)); }});
</script></body></html>"""


@pytest.mark.parametrize(
    "example",
    # and a loop whose body is outlined, drawn inside the loop's box (nested groups)
    [*sorted(p.name for p in EXAMPLES.glob("*.flow")), "patterns/evaluator-optimizer.flow"],
    ids=lambda n: n,
)
def test_flowc_graph_of_each_shipped_example_renders_in_the_browser(browser, tmp_path, example):
    import html

    js = (ROOT / "src/agentflow/runtime/report_assets/mermaid.min.js").read_text(encoding="utf-8")
    text = api.graph(EXAMPLES / example)
    page = tmp_path / f"{example.replace('/', '_')}.html"
    page.write_text(
        GRAPH_PAGE.format(name=example, graph=html.escape(text), js=js), encoding="utf-8"
    )
    logs = _open(browser, page, tmp_path / f"graph-{example.replace('/', '_')}.png")
    assert _errors(logs) == [], logs
    assert browser.find_elements("css selector", "svg g.node")


def test_the_vendored_mermaid_cannot_end_its_script_element_early():
    js = (ROOT / "src/agentflow/runtime/report_assets/mermaid.min.js").read_text(encoding="utf-8")
    assert not re.search(r"</?script", js, re.I)
    assert shutil.which("chromium") or Path(CHROMIUM).exists()
