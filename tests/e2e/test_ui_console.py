"""Acceptance (issue 31, item 1): ``flowc ui`` drives real durable runs from a headless
Chromium (Selenium).  Two real ``flowc run --durable`` processes wait on an ``ask``; a real
``flowc ui`` process serves the database they write.  In the page: the runs list shows both
waiting; one run's page shows its graph coloured by its steps' states, its agent's
conversation and a number field for its question; a wrong answer is refused beside the field
with ``flowc answer``'s own words; a right one finishes the run (its process prints the answer
and exits 0) and the page updates itself to ``ok`` (Server-Sent Events); the flow, edited, is run
again from the page reusing the run (its answer is taken: the new run ends ok); the other run is
cancelled from its page and its process exits, then redriven from the page; the redriven run's
process is killed, the page says it stopped, it is resumed from the page and cancelled.  axe-core finds no WCAG 2 A/AA violation on the
list, on a run page with its question form, and on a refused answer."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from support.browser import axe_violations, screen, start_chromium
from support.durable_questions import flowc, start_flowc, wait_asked

APPROVE = """\
flow approve
input { topic: text }

type Draft {
  title: text
  words: int
}

use agent "writer" as writer

stage write -> Draft {
  agent(writer) {
    task "Draft a post about ${input.topic}"
    expect Draft
  }
}

stage publish -> int {
  let copies = ask "How many copies of the post?" expect int default 0
  return copies
}
"""

HOLD = """\
flow holder
stage hold -> text {
  let why = ask "Why go on?" expect text default "no"
  return why
}
"""


def _until(check, what: str, limit: float = 60.0):
    """``check()``'s first true value, tried every 0.1 s for ``limit`` seconds (a page that
    replaced its content meanwhile — a live update — is looked at again)."""
    from selenium.common.exceptions import StaleElementReferenceException

    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            found = check()
        except StaleElementReferenceException:
            found = None
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never: {what}")


def _click(browser, selector: str) -> None:
    """Click the element ``selector`` names (found again if a live update replaced it)."""

    def click():
        browser.find_element("css selector", selector).click()
        return True

    _until(click, f"clicked {selector}")


@pytest.fixture
def console(tmp_path):
    """Two waiting durable runs (``asks``: an agent, then an int question; ``holds``: a text
    question) and a ``flowc ui`` serving their database; yields ``(address, processes)``."""
    (tmp_path / "approve.flow").write_text(APPROVE, encoding="utf-8")
    (tmp_path / "hold.flow").write_text(HOLD, encoding="utf-8")
    db = tmp_path / ".flowc" / "durable.sqlite"
    runs = {
        "asks": start_flowc(
            tmp_path,
            "run",
            "--durable",
            "--run-id",
            "asks",
            "--model",
            "test",
            "approve.flow",
            "--input",
            '{"topic": "owls"}',
        ),  # fmt: skip
    }
    runs["holds"] = start_flowc(tmp_path, "run", "--durable", "--run-id", "holds", "hold.flow")
    for run_id, proc in runs.items():
        wait_asked(db, run_id, proc)
    ui = subprocess.Popen(
        flowc("ui", "--port", "0"),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = ui.stderr.readline() if ui.stderr else ""
        m = re.match(r"flowc ui: (http://127\.0\.0\.1:\d+/)$", line.strip())
        assert m, f"flowc ui said {line!r}"
        yield m.group(1), runs
    finally:
        for proc in [ui, *runs.values()]:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        _end_spawned(str(db))


def _end_spawned(database: str, command: str | None = None) -> int:
    """Kill (SIGKILL) the ``flowc`` processes the console started on this test's database (a
    redrive, in a session of its own, outlives the console) that are still there — those of
    ``command`` only, when given; returns how many."""
    import os
    import signal

    ended = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"agentflow" in argv and any(database.encode() in a for a in argv):
            if command is not None and command.encode() not in argv:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)
                ended += 1
    return ended


def test_a_question_answered_in_the_page_finishes_the_run_and_another_is_cancelled(
    console, tmp_path
):
    address, runs = console
    browser = start_chromium(tmp_path / "profile", width=1280, height=1000)
    try:
        browser.get(address)
        _until(lambda: browser.find_elements("css selector", "#runs tr[data-run]"), "runs listed")
        listed = {
            r.get_attribute("data-run"): r.get_attribute("data-status")
            for r in browser.find_elements("css selector", "#runs tr[data-run]")
        }
        assert listed == {"asks": "waiting", "holds": "waiting"}
        assert axe_violations(browser) == []

        # open the run from the list
        browser.find_element("link text", "asks").click()
        _until(lambda: browser.find_elements("css selector", "form.question"), "question form")
        field = browser.find_element("css selector", "form.question input[name=value]")
        assert field.get_attribute("type") == "number"  # generated from `expect int`
        ask_node = browser.find_element("css selector", "#graph svg g.node[data-path='E1']")
        assert ask_node.get_attribute("data-status") == "waiting"
        agent_node = browser.find_element("css selector", "#graph svg g.node[data-path='E0']")
        assert agent_node.get_attribute("data-status") == "ok"
        agent = browser.find_element("css selector", "#agents details.agent[data-path='E0']")
        assert "write › agent(writer)" in agent.text and "reply" in agent.text
        step = browser.find_element("css selector", "#steps-table tr[data-path='E0']")
        assert "write › agent(writer)" in step.text
        assert axe_violations(browser) == []

        # a wrong answer is refused as `flowc answer` refuses it, beside the field
        browser.execute_script(
            "var f = document.querySelector('form.question input[name=value]');"
            "f.type = 'text'; f.value = '2.5';"
        )
        browser.find_element("css selector", "form.question button[type=submit]").click()
        problem = _until(
            lambda: browser.find_elements("css selector", "form.question .form-problem"),
            "refusal shown",
        )
        from agentflow.runtime.control import check_answer

        why = check_answer(2.5, {"type": "integer"}, None)  # what `flowc answer` checks with
        assert problem[0].text == f"answer to `How many copies of the post?`: {why}"
        assert axe_violations(browser) == []

        field = browser.find_element("css selector", "form.question input[name=value]")
        field.clear()
        field.send_keys("3")
        browser.find_element("css selector", "form.question button[type=submit]").click()
        out, err = runs["asks"].communicate(timeout=120)
        assert runs["asks"].returncode == 0, err.decode()[-2000:]
        assert json.loads(out) == 3
        # the page follows the run to its end by itself (Server-Sent Events)
        _until(
            lambda: browser.find_elements("css selector", "#run-facts .badge.ok"),
            "the page shows the run ok",
        )
        assert "3" in browser.find_element("css selector", "#output").text

        # run the flow again as edited since, reusing this run: the agent's task changed, so
        # it runs again; the question did not, so its answer is taken and the new run ends ok
        flow = tmp_path / "approve.flow"
        flow.write_text(APPROVE.replace("Draft a post", "Write a post"), encoding="utf-8")
        _click(browser, "button.reuse")
        _until(
            lambda: [
                r
                for r in browser.find_elements("css selector", "#runs tr[data-status=ok]")
                if r.get_attribute("data-run") != "asks" and "approve" in r.text
            ],
            "the edited flow's run listed ok",
        )

        # cancel the other run from its page
        browser.get(address + "runs/holds")
        _click(browser, "button.cancel")
        _, err = runs["holds"].communicate(timeout=120)
        assert runs["holds"].returncode == 1 and b"cancelled" in err, err.decode()[-2000:]
        _until(
            lambda: browser.find_elements("css selector", "#run-facts .badge.cancelled"),
            "the page shows the run cancelled",
        )
        # the list, filtered by status
        browser.get(address + "?status=cancelled")
        rows = browser.find_elements("css selector", "#runs tr[data-run]")
        assert [r.get_attribute("data-run") for r in rows] == ["holds"]

        # redrive the cancelled run: a new run (`holds~xxxxxx`, a flowc redrive process the
        # console started) asks its question again; cancel that one from its page too
        browser.get(address + "runs/holds")
        _click(browser, "button.redrive")
        again = _until(
            lambda: [
                r.get_attribute("data-run")
                for r in browser.find_elements("css selector", "#runs tr[data-status=waiting]")
                if (r.get_attribute("data-run") or "").startswith("holds~")
            ],
            "the redriven run listed, waiting",
        )
        # its process dies (kill -9): the page says `stopped`; resumed from the page (a flowc
        # resume process), it waits on its question again; cancelled from the page, it ends
        browser.get(address + f"runs/{again[0]}")
        assert _end_spawned(str(tmp_path / ".flowc" / "durable.sqlite"), "redrive") == 1
        _until(
            lambda: browser.find_elements("css selector", "#run-facts .badge.stopped"),
            "the redriven run stopped",
        )
        _click(browser, "button.resume")
        _until(
            lambda: browser.find_elements("css selector", "#run-facts .badge.waiting"),
            "the resumed run waiting again",
        )
        _click(browser, "button.cancel")
        _until(
            lambda: browser.find_elements("css selector", "#run-facts .badge.cancelled"),
            "the redriven run cancelled",
        )

        # at a phone's width: no violation, nothing off the page
        screen(browser, 390)
        browser.get(address + "runs/asks")
        assert axe_violations(browser) == []
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
    finally:
        browser.quit()


def test_the_console_refuses_what_it_must_and_keeps_its_assets_in_the_package(tmp_path):
    from starlette.testclient import TestClient

    from agentflow.ui.app import Console, build_app

    url = f"sqlite:///{tmp_path / 'none.sqlite'}"
    local = TestClient(build_app(Console(url)), base_url="http://127.0.0.1:8421")
    page = local.get("/")
    assert page.status_code == 200 and "no durable runs" in page.text
    assert "<script src" not in page.text and "<link " not in page.text  # nothing fetched
    assert "default-src 'none'" in page.headers["content-security-policy"]
    # a page elsewhere that names our port under its own name (DNS rebinding) is refused
    assert local.get("/", headers={"host": "evil.example:8421"}).status_code == 421
    assert local.get("/", headers={"host": "localhost.evil.example"}).status_code == 421
    # a form without the page's token (cross-site request forgery) is refused
    assert local.post("/runs/x/cancel", data={"csrf": "guess"}).status_code == 403
    # bound elsewhere: the token first, then its cookie
    remote = TestClient(build_app(Console(url, token="s3cret")), base_url="http://10.0.0.5:8421")
    assert remote.get("/").status_code == 401
    first = remote.get("/?token=s3cret")
    assert first.status_code == 200 and "flowc_ui_token" in first.headers["set-cookie"]
    assert remote.get("/").status_code == 200  # the cookie carries it
    assert not (tmp_path / "none.sqlite").exists()  # looking creates no database
    # `flowc ui` bound elsewhere prints the address with its token
    ui = subprocess.Popen(
        flowc("ui", "--host", "0.0.0.0", "--port", "0", "--database", url),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = ui.stderr.readline() if ui.stderr else ""
        m = re.fullmatch(r"flowc ui: http://0\.0\.0\.0:(\d+)/\?token=([\w-]{32})\n", said)
        assert m, said
        # stopped (SIGTERM, as Ctrl-C) while a page's live-update stream is open: it ends quietly
        import httpx

        with httpx.stream(
            "GET", f"http://127.0.0.1:{m[1]}/events?token={m[2]}", timeout=30
        ) as stream:
            assert next(stream.iter_lines()).startswith("retry:")
            ui.terminate()
            _, rest = ui.communicate(timeout=30)
        # (uvicorn ends the process by the signal it caught, once it has shut down)
        assert ui.returncode in (0, -15) and "Traceback" not in rest and "ERROR" not in rest, rest
    finally:
        if ui.poll() is None:
            ui.kill()
            ui.wait()
    assets = Path(__file__).resolve().parents[2] / "src/agentflow/ui/assets"
    assert {p.name for p in assets.iterdir()} == {"ui.css", "ui.js"}


def test_every_spelling_of_a_loopback_host_is_answered_and_no_other(tmp_path):
    """docs/reference/ui.md "Safety": loopback names are accepted with or without a port, in
    any case (host names are case-insensitive), an IPv6 literal with or without its port."""
    from starlette.testclient import TestClient

    from agentflow.ui.app import Console, build_app

    local = TestClient(build_app(Console(f"sqlite:///{tmp_path / 'none.sqlite'}")))
    for host in (
        "127.0.0.1",
        "127.0.0.1:8421",
        "localhost",
        "LOCALHOST:8421",
        "Localhost",
        "[::1]",
        "[::1]:80",
        "127.0.0.2:9",
    ):
        assert local.get("/", headers={"host": host}).status_code == 200, host
    for host in (
        "evil.example",
        "EVIL.example:8421",
        "[::2]",
        "[::2]:80",
        "10.0.0.5",
        "localhost.evil.example",
        "[::1",
        "::1:80",
    ):
        assert local.get("/", headers={"host": host}).status_code == 421, host
