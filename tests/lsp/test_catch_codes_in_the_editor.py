"""`catch on [ … ]` in the editor, over the real server protocol (``python -m agentflow lsp``):
completion offers the codes the guarded expression can fail with — a tool call, an agent and a
division differ — most likely first with their meanings, every catchable code where the analysis
cannot tell (a sub-plan); hover on a written code says what it means and why it can occur."""

from __future__ import annotations

import sys

import pytest
from support.paths import TESTS

from agentflow.core.vocabulary import ERROR_CODES, HARD_STOP_CODES
from agentflow.lsp.client import LspClient
from agentflow.lsp.positions import LineIndex

SOURCE = """\
input { a: int, b: int }
extern tool user__fetch(url: text) -> text
extern tool plan__summarise(text: text) -> text
use agent "writer" as writer

stage tool_call -> text {
  user__fetch(url: "x") catch on [] { "" }
}

stage by_agent -> text {
  agent(writer) {
    task "write"
    expect text
  } catch on [output_validation, ] { "" }
}

stage arithmetic -> int {
  input.a / input.b catch on [arithmetic] { 0 }
}

stage sub_plan -> text {
  plan__summarise(text: "x") catch on [] { "" }
}
"""

URI = (TESTS / "lsp" / "buffers" / "catch_codes.flow").as_uri()
CATCHABLE = [c for c in ERROR_CODES if c not in HARD_STOP_CODES]


def _pos(needle: str, delta: int, nth: int = 0) -> dict:
    off = -1
    for _ in range(nth + 1):
        off = SOURCE.index(needle, off + 1)
    line, char = LineIndex(SOURCE).position(off + delta)
    return {"line": line, "character": char}


@pytest.fixture(scope="module")
def client():
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize()
    c.open(URI, SOURCE)
    c.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == URI)
    try:
        yield c
    finally:
        c.close()


def _items(c: LspClient, p: dict) -> list[dict]:
    r = c.request("textDocument/completion", {"textDocument": {"uri": URI}, "position": p})
    return r["items"] if isinstance(r, dict) else r


def _labels(c: LspClient, p: dict) -> list[str]:
    return [i["label"] for i in _items(c, p)]


def _hover(c: LspClient, p: dict) -> str:
    r = c.request("textDocument/hover", {"textDocument": {"uri": URI}, "position": p})
    assert r is not None
    return r["contents"]["value"]


def test_a_tool_call_offers_tool_failures_first_and_no_model_or_agent_codes(client):
    got = _labels(client, _pos("catch on []", len("catch on [")))
    assert got[:3] == ["tool_error", "timeout", "transient"]
    assert {"output_validation", "tool_denied", "validation"} <= set(got)
    assert not {"model_error", "content_filter", "write_scope", "invalid_member"} & set(got)
    assert not {"failed", "bad_path", "truncated"} & set(got)
    assert not HARD_STOP_CODES & set(got)


def test_an_agent_offers_model_and_agent_codes_not_yet_listed(client):
    got = _labels(client, _pos("output_validation, ]", len("output_validation, ")))
    assert got[:2] == ["timeout", "model_error"]  # output_validation is written already
    assert "output_validation" not in got
    assert {"content_filter", "write_scope", "invalid_member", "rate_limit"} <= set(got)
    assert "outcome_unknown" not in got and "failed" not in got


def test_a_division_offers_arithmetic_and_the_reads_of_its_operands(client):
    text = SOURCE.replace("catch on [arithmetic]", "catch on []")
    client.change(URI, text, 2)
    try:
        off = text.index("catch on []", text.index("stage arithmetic")) + len("catch on [")
        line, char = LineIndex(text).position(off)
        got = _labels(client, {"line": line, "character": char})
    finally:
        client.change(URI, SOURCE, 3)
    assert got == ["arithmetic", "bad_path"]


def test_each_offered_code_carries_its_registry_meaning_and_why_it_can_occur(client):
    items = {i["label"]: i for i in _items(client, _pos("catch on []", len("catch on [")))}
    tool_error = items["tool_error"]
    assert tool_error["detail"] == ERROR_CODES["tool_error"].summary
    why = tool_error["documentation"]["value"]
    assert "`user__fetch(…)` is a tool call" in why and "line 7" in why


def test_a_sub_plan_falls_back_to_every_catchable_code(client):
    got = _labels(client, _pos("catch on []", len("catch on ["), nth=1))
    assert got == CATCHABLE


def test_hover_on_a_code_gives_its_meaning_and_why_the_guarded_expression_raises_it(client):
    text = _hover(client, _pos("output_validation, ]", 3))
    assert "(error code) output_validation" in text
    assert ERROR_CODES["output_validation"].summary in text
    assert "the agent's reply is checked against its `expect` type (line 11)" in text
    text = _hover(client, _pos("[arithmetic]", 2))
    assert ERROR_CODES["arithmetic"].summary in text
    assert "the division `/` fails when the divisor is 0" in text


def test_hover_on_a_code_that_cannot_occur_says_so(client):
    text = SOURCE.replace("catch on [arithmetic]", "catch on [tool_error]")
    client.change(URI, text, 4)
    try:
        off = text.index("tool_error]", text.index("stage arithmetic")) + 2
        line, char = LineIndex(text).position(off)
        r = client.request(
            "textDocument/hover",
            {"textDocument": {"uri": URI}, "position": {"line": line, "character": char}},
        )
    finally:
        client.change(URI, SOURCE, 5)
    value = r["contents"]["value"]
    assert ERROR_CODES["tool_error"].summary in value
    assert "What is guarded cannot fail with it." in value


def test_a_half_typed_on_list_at_the_end_of_a_line_still_gets_the_narrowed_codes(client):
    text = SOURCE.replace(
        '  user__fetch(url: "x") catch on [] { "" }\n',
        '  let page = user__fetch(url: "x") catch on [\n  return page\n',
    )
    client.change(URI, text, 6)
    try:
        line, char = LineIndex(text).position(text.index("catch on [\n") + len("catch on ["))
        got = _labels(client, {"line": line, "character": char})
    finally:
        client.change(URI, SOURCE, 7)
    assert got[:2] == ["tool_error", "timeout"]
    assert "model_error" not in got
