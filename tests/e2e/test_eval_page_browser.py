"""Acceptance (issue 30): the eval's HTML page opens in a real headless Chromium with no console
error, and a case's conversation is one click from its row.

Chromium and its driver come from the distribution's packages, driven with Selenium, as in
tests/e2e/test_report_browser.py; if the browser cannot be started the test fails (never skips).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from support.chat_server import TEST_API_KEY, answer

from agentflow import api
from agentflow.runtime.config import load_config

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

FLOW = """\
input { n: int }
type Parity { label: "even" | "odd" }
use agent "classifier" as classifier

stage classify -> Parity {
  return agent(classifier) { task "Is ${input.n} even or odd?" tools none expect Parity }
}

eval "parity" {
  score exact = output.label == expected.label
  judge explained "Is the label ${output.label} right for ${input.n}?" threshold 0.5
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


def _script(request: dict):
    system = request["messages"][0]["content"]
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    if "strict evaluator" in system:  # the judge scorer
        return answer({"score": 0.9, "reason": "the label matches the number"})
    n = int(re.search(r"Is (\d+) even", user).group(1))
    label = "even" if n % 2 == 0 else "odd"
    return answer({"label": "odd" if n == 4 else label})  # wrong on 4


def test_eval_page_loads_without_console_errors_and_opens_a_conversation_in_one_click(
    browser, chat_server, tmp_path
):
    chat_server.write_config(tmp_path)
    chat_server.script(_script)
    (tmp_path / "parity.flow").write_text(FLOW, encoding="utf-8")
    cases = "\n".join(
        f'{{"name": "n{n}", "input": {{"n": {n}}}, "expected": {{"label": '
        f'"{"even" if n % 2 == 0 else "odd"}"}}}}'
        for n in range(1, 6)
    )
    (tmp_path / "cases.jsonl").write_text(cases + "\n", encoding="utf-8")
    config = load_config(tmp_path / "flow.toml", env={"SCRIPTED_API_KEY": TEST_API_KEY})
    report = api.evaluate(
        tmp_path / "parity.flow", [tmp_path / "cases.jsonl"], config=config, cache=None
    )
    assert len(chat_server.requests) == 10  # five cases, each an agent and a judge
    page = tmp_path / "eval.html"
    page.write_text(api.eval_page(report), encoding="utf-8")

    browser.get_log("browser")
    browser.get(page.as_uri())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if browser.execute_script("return document.readyState") == "complete":
            break
        time.sleep(0.1)
    browser.save_screenshot(str(tmp_path / "eval.png"))
    logs = browser.get_log("browser")
    assert [e for e in logs if e.get("level") == "SEVERE"] == [], logs

    rows = browser.find_elements("css selector", "#cases-table tr.evalcase")
    assert [r.get_attribute("data-case") for r in rows] == [f"n{n}" for n in range(1, 6)]
    assert [r.get_attribute("data-passed") for r in rows] == [
        "true", "true", "true", "false", "true"
    ]  # fmt: skip
    rate = browser.find_element("css selector", '#scorers-table tr[data-scorer="exact"]')
    assert "80%" in rate.text

    # the failing case's conversation: hidden, then shown by one click on its row's summary
    drill = browser.find_element("css selector", 'tr.drill[data-run="run-3"]')
    agent = drill.find_element("css selector", "details.agent")
    assert not agent.is_displayed()
    drill.find_element("css selector", "details.conversation > summary").click()
    assert agent.is_displayed()
    assert "Is 4 even or odd?" in drill.text
    assert '"odd"' in drill.text  # the model's wrong answer
    assert "the label matches the number" in drill.text  # the judge's reason
