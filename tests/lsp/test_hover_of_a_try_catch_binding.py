"""The failure ``try { … } catch … as err`` binds is a caught error, not a loop variable: hover
labels it ``(error) err: Error`` at its uses and where it is declared, and go to definition
reaches its ``as err`` (docs/editors.md)."""

from __future__ import annotations

import pytest
from support.lsp_editor import editing, position

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
    with editing(tmp_path_factory.mktemp("trycatch"), {"main.flow": MAIN}) as session:
        yield session


def _at(needle: str) -> dict:
    return position(MAIN, needle)


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
