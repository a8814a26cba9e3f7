"""Headless Chromium for the tests (the distribution's ``chromium`` and ``chromedriver``, which
scripts/system-packages.sh installs, driven with Selenium) and axe-core, the accessibility
checker (the npm package ``axe-core``, which scripts/npm-tools.sh installs into ``.ci/node/``),
run inside the page.  A test that cannot start the browser or find axe-core fails (never
skips)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.npm_tools import MODULES, need

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
AXE = MODULES / "axe-core" / "axe.min.js"
#: the axe-core rule tags of WCAG 2.0 and 2.1, levels A and AA
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def start_chromium(profile: Path, *, width: int = 1400, height: int = 1800) -> Any:
    """A headless Chromium window of ``width`` × ``height`` CSS pixels (the caller quits it)."""
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
        "--disable-dev-shm-usage", f"--window-size={width},{height}",
        f"--user-data-dir={profile}",
    ):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    if width < 500:
        screen(driver, width, height)
    return driver


def screen(driver: Any, width: int, height: int = 900) -> None:
    """Make the page ``width`` CSS pixels wide (a window is never narrower than 500 px: below
    that, a phone's screen is emulated)."""
    if width < 500:
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True},
        )
    else:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        driver.set_window_size(width, height)


def axe_violations(driver: Any) -> list[dict[str, Any]]:
    """Run axe-core in the page ``driver`` shows; its WCAG 2 A/AA violations, each as
    ``{id, impact, help, nodes: [target selectors…]}``."""
    source = need(AXE).read_text(encoding="utf-8")
    driver.execute_script(source)
    driver.set_script_timeout(60)
    result = driver.execute_async_script(
        "var done = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: {type: 'tag', values: arguments[0]}})"
        ".then(function (r) { done(r.violations.map(function (v) { return {id: v.id, "
        "impact: v.impact, help: v.help, nodes: v.nodes.map(function (n) { return "
        "String(n.target) + ' ' + (n.failureSummary || ''); })}; })); })"
        ".catch(function (e) { done([{id: 'axe-failed', help: String(e), nodes: []}]); });",
        WCAG_TAGS,
    )
    return list(result)
