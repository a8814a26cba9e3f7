"""The failure ``try { … } catch … as err`` binds is a caught error, not a loop variable: hover
labels it ``(error) err: Error`` at its uses and where it is declared, and go to definition
reaches its ``as err`` (docs/editors.md)."""

from __future__ import annotations

import sys

import pytest
from support.lsp_editor import errors, opened

from agentflow.lsp.client import LspClient
from agentflow.lsp.positions import LineIndex

MAIN = """\
extern tool fetch(url: text) -> text
stage s -> text {
  let got = try {
    fetch(url: "a")
  } catch on [failed, tool_error] as err {
    err.message
  }
  return got
}
"""


@pytest.fixture(scope="module")
def editor(tmp_path_factory):
    root = tmp_path_factory.mktemp("trycatch")
    (root / "main.flow").write_text(MAIN, encoding="utf-8")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0})
    uri = (root / "main.flow").as_uri()
    assert errors(opened(c, uri, MAIN)) == []
    try:
        yield c, uri
    finally:
        c.close()


def _at(needle: str) -> dict:
    line, char = LineIndex(MAIN, "utf-16").position(MAIN.index(needle))
    return {"line": line, "character": char}


@pytest.mark.parametrize("needle", ["err.message", "err {"])
def test_a_try_catch_binding_hovers_as_a_caught_error(editor, needle: str):
    c, uri = editor
    got = c.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": _at(needle)})
    assert got is not None
    assert got["contents"]["value"].split("\n")[1] == "(error) err: Error"


def test_go_to_definition_of_a_try_catch_binding_reaches_its_as(editor):
    c, uri = editor
    got = c.request(
        "textDocument/definition", {"textDocument": {"uri": uri}, "position": _at("err.message")}
    )
    target = got[0] if isinstance(got, list) else got
    assert target["range"]["start"] == _at("err {")
