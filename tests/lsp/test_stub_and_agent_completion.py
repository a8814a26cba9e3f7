"""Completion where a name of one kind is written (docs/editors.md): inside `agent(` the `use`
aliases, and in a `test` block after `stub agent` the aliases, after `stub stage` the stages,
after `stub tool` the tools and after `stub ask` the `let`s bound to an `ask` and the stages
that ask — not every name of the flow (input, library functions, …). Driven as a real LSP
client over stdio, the cursor after a partly typed name as the battery found it."""

from __future__ import annotations

import sys

import pytest
from support.lsp_editor import opened

from agentflow.lsp.client import LspClient
from agentflow.lsp.positions import LineIndex

SOURCE = """\
use agent "writer" as writer
use agent "critic" as critic
type Rev { ok: bool }
extern tool look(q: text) -> int
input { q: text }
stage s -> Rev {
  let v = agent(wri) { task "x" expect Rev tools none }
  return v
}
stage confirm -> bool {
  let sure = ask "sure?" expect bool
  return sure
}
test "t" {
  stub agent crit returns { ok: true }
  stub stage s returns { ok: true }
  stub tool lo returns 1
  stub ask su returns true
}
"""


@pytest.fixture(scope="module")
def editor(tmp_path_factory):
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0})
    uri = (tmp_path_factory.mktemp("stubcomp") / "main.flow").as_uri()
    opened(c, uri, SOURCE)
    try:
        yield c, uri
    finally:
        c.close()


def labels(editor, needle: str) -> list[str]:
    """The completion labels with the cursor at the end of ``needle``."""
    c, uri = editor
    line, char = LineIndex(SOURCE, "utf-16").position(SOURCE.index(needle) + len(needle))
    got = c.request(
        "textDocument/completion",
        {"textDocument": {"uri": uri}, "position": {"line": line, "character": char}},
    )
    items = got["items"] if isinstance(got, dict) else got
    return [i["label"] for i in items]


def test_completion_inside_agent_paren_offers_the_agent_aliases(editor):
    assert labels(editor, "agent(wri") == ["writer", "critic"]


def test_completion_after_stub_agent_offers_the_agent_aliases(editor):
    assert labels(editor, "stub agent crit") == ["writer", "critic"]


def test_completion_after_stub_stage_offers_the_stages(editor):
    assert labels(editor, "stub stage s") == ["s", "confirm"]


def test_completion_after_stub_tool_offers_the_tools_only(editor):
    got = labels(editor, "stub tool lo")
    assert "look" in got
    assert not {"input", "writer", "s", "len"} & set(got)


def test_completion_after_stub_ask_offers_the_asks_and_the_stages_that_ask(editor):
    assert labels(editor, "stub ask su") == ["sure", "confirm"]
