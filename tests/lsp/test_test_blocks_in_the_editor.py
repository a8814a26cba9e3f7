"""`test` blocks in the language server (docs/reference/testing.md), driven as a real LSP client:
a "run test" code lens per test, test diagnostics, outline entries, and completion of test items."""

from __future__ import annotations

import sys

import pytest
from support.paths import TESTS

from agentflow.lsp.client import LspClient
from agentflow.lsp.positions import LineIndex

SOURCE = """\
type Summary { top: text[], count: int }
use agent "helper" as helper
stage todos -> Summary {
  agent(helper) { task "pick" expect Summary }
}

test "picks one" {
  stub agent helper returns { top: ["a"], count: "one" }
  expect todos.count == 1
}

test "second" {
  stub agent helper returns { top: [], count: 0 }
<blank line holding the cursor>
}
""".replace("<blank line holding the cursor>", "  ")
URI = (TESTS / "lsp" / "buffers" / "tests.flow").as_uri()


def _pos(text: str, needle: str, delta: int = 0) -> dict:
    line, char = LineIndex(text, "utf-16").position(text.index(needle) + delta)
    return {"line": line, "character": char}


@pytest.fixture(scope="module")
def client():
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize()
    c.open(URI, SOURCE)
    c.diagnostics = c.wait_notification(
        "textDocument/publishDiagnostics", lambda p: p["uri"] == URI
    )
    try:
        yield c
    finally:
        c.close()


def test_each_test_has_a_run_test_code_lens(client):
    lenses = client.request("textDocument/codeLens", {"textDocument": {"uri": URI}})
    assert [lens["command"]["arguments"] for lens in lenses] == [
        [URI, "picks one"],
        [URI, "second"],
    ]
    assert {lens["command"]["command"] for lens in lenses} == {"agentflow.runTest"}
    assert lenses[0]["range"]["start"] == _pos(SOURCE, '"picks one"')


def test_a_stub_that_does_not_fit_is_a_diagnostic_at_the_stub(client):
    (diag,) = client.diagnostics["diagnostics"]
    assert diag["code"] == "stub-mismatch"
    assert diag["range"]["start"] == _pos(SOURCE, '"one"')


def test_tests_are_in_the_outline(client):
    syms = client.request("textDocument/documentSymbol", {"textDocument": {"uri": URI}})
    assert [s["name"] for s in syms if s.get("detail") == "test"] == ["picks one", "second"]


def test_completion_offers_the_items_of_a_test(client):
    r = client.request(
        "textDocument/completion",
        {"textDocument": {"uri": URI}, "position": _pos(SOURCE, "  \n}", 2)},
    )
    items = r["items"] if isinstance(r, dict) else r
    assert [i["label"] for i in items] == ["input", "expect", "stub", "replay"]


def test_completion_after_fails_offers_the_codes_the_stubbed_thing_can_fail_with():
    from agentflow.compiler.check_errors import agent_error_codes
    from agentflow.lsp.analysis import analyze

    text = SOURCE
    a = analyze(text, "tests.flow")

    def at(line: str) -> list[str]:
        patched = text.replace("  \n}", f"  {line}\n}}")
        offset = patched.index(line) + len(line)
        return [c.label for c in a.completions(offset, patched)]

    agent = at("stub agent helper fails ")
    assert agent == [f'"{c}"' for c in agent_error_codes()]
    assert agent[:2] == ['"output_validation"', '"timeout"'] and '"bad_path"' not in agent
    assert at("stub stage todos returns { top: [], count: 0 } then fails ") == agent
    tool = at("stub tool grep fails ")
    assert '"bad_path"' in tool and '"aborted"' not in tool
