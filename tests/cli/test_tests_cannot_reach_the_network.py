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


OTHER_CLIENTS = """\
import socket
import urllib.request


def by_urllib(url: str) -> str:
    \"\"\"The page, fetched with the standard library.\"\"\"
    with urllib.request.urlopen(url, timeout=5) as page:
        return page.read().decode()[:20]


def by_socket(host: str) -> str:
    \"\"\"A raw TCP connection to port 80 of an address.\"\"\"
    with socket.create_connection((host, 80), timeout=5):
        return "connected"
"""

OTHER_FLOW = """\
extern tool user__by_urllib(url: text) -> text
extern tool user__by_socket(host: text) -> text

stage page -> text {
  return user__by_urllib(url: "http://example.com/index.html")
}

stage raw -> text {
  return user__by_socket(host: "192.0.2.7")
}

test "urllib" {
  stub tool user__by_socket returns "stubbed"
  expect page == "X"
}

test "raw socket" {
  stub tool user__by_urllib returns "stubbed"
  expect raw == "X"
}
"""


def test_clients_other_than_httpx_are_refused_too(tmp_path):
    """urllib (a DNS lookup of a name) and a raw socket (a connection to an address) are refused
    by the socket-level guard, naming the tool and the host, not only httpx requests."""
    (tmp_path / "tools.py").write_text(OTHER_CLIENTS, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    path = tmp_path / "other.flow"
    path.write_text(OTHER_FLOW, encoding="utf-8")
    report = agentflow.run_tests(path)
    failures = {o.name: "\n".join(o.failures) for o in report.outcomes}
    assert set(failures) == {"urllib", "raw socket"}
    assert (
        "tool `user__by_urllib` tried to reach the network (example.com:80)" in (failures["urllib"])
    ), failures
    assert (
        "tool `user__by_socket` tried to reach the network (192.0.2.7:80)"
        in (failures["raw socket"])
    ), failures
    # outside a test the hook does nothing: a lookup of a name off this machine goes to the
    # resolver (which knows no `.invalid` name) instead of being refused by the guard
    import socket

    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("flowc-guard-check.invalid", 80)
