"""While `flowc test` runs, a request that would leave the machine fails the test that made it,
naming what tried to connect (docs/reference/testing.md "Running"): Python tools of
`[tools] modules` run unstubbed, under that guard; loopback requests go through."""

from __future__ import annotations

import httpx
import pytest
from click.testing import CliRunner

import agentflow
from agentflow.cli import main
from agentflow.testing import ChatServer


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """`flowc test` keeps its cache (.flowc-cache) in the current directory: a temporary one."""
    monkeypatch.chdir(tmp_path)


TOOLS = """\
import httpx


def fetch_title(url: str) -> str:
    \"\"\"The page's title.\"\"\"
    return httpx.get(url, timeout=5).text[:20]


def shout(text: str) -> str:
    \"\"\"The text in capitals.\"\"\"
    return text.upper()
"""

FLOW = """\
extern tool user__fetch_title(url: text) -> text
extern tool user__shout(text: text) -> text

stage title -> text {
  return user__fetch_title(url: "https://example.com/page?key=secret")
}

stage loud -> text {
  return user__shout(text: title)
}

test "unstubbed fetch" {
  expect loud == "X"
}

test "stubbed fetch" {
  stub tool user__fetch_title returns "hello"
  expect loud == "HELLO"
}
"""


def _project(tmp_path, flow=FLOW):
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    path = tmp_path / "page.flow"
    path.write_text(flow, encoding="utf-8")
    return path


def test_an_unstubbed_tool_reaching_the_network_fails_the_test_naming_it(tmp_path):
    path = _project(tmp_path)
    r = CliRunner().invoke(main, ["test", str(path)])
    assert r.exit_code == 1, r.output
    assert "unstubbed fetch FAILED" in r.output
    assert (
        "tool `user__fetch_title` tried to reach the network "
        "(GET https://example.com/page); tests run with no network" in r.output
    )
    assert "secret" not in r.output  # the query is never shown
    assert "stubbed fetch PASSED" in r.output  # the stubbed one; the Python tool ran
    assert "1 passed, 1 failed" in r.output


def test_the_guard_is_lifted_after_the_tests_and_loopback_is_allowed(tmp_path):
    with ChatServer() as server:
        flow = FLOW.replace("https://example.com/page?key=secret", server.url + "/models")
        path = _project(tmp_path, flow)
        report = agentflow.run_tests(path, pattern="unstubbed")
    (outcome,) = report.outcomes
    # the loopback request went through: the test fails on its expectation, not the guard
    assert not outcome.passed and "expect loud ==" in outcome.failures[0]
    before = httpx.HTTPTransport.handle_request
    agentflow.run_tests(path, pattern="stubbed")
    assert httpx.HTTPTransport.handle_request is before
