"""Inside a string's ``${…}`` the editor treats the interpolation as the expression it is
(docs/editors.md): signature help names the call being typed there — also with strings nested
in its arguments — hover describes the names in it, completion offers the names in scope;
in the string's own text (or a string nested in the call) there is no signature help."""

from __future__ import annotations

import itertools
import sys

import pytest
from support.lsp_editor import opened

from agentflow.lsp.client import LspClient
from agentflow.lsp.positions import LineIndex

SOURCE = """\
/// joins a count and a text
fn tag(n: int, s: text) -> text = "${n}:${s}"
input { name: text }
stage s -> text {
  let who = input.name
  return "hi ${tag(1, "x")} ${who}"
}
"""

_VERSIONS = itertools.count(2)


@pytest.fixture(scope="module")
def editor(tmp_path_factory):
    root = tmp_path_factory.mktemp("interp")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0})
    uri = (root / "main.flow").as_uri()
    opened(c, uri, SOURCE)
    try:
        yield c, uri
    finally:
        c.close()


def ask(c: LspClient, uri: str, method: str, text: str, offset: int):
    """``method`` at ``offset`` of ``text`` (sent as the document's new content first)."""
    c.change(uri, text, next(_VERSIONS))
    line, char = LineIndex(text, "utf-16").position(offset)
    return c.request(
        method, {"textDocument": {"uri": uri}, "position": {"line": line, "character": char}}
    )


@pytest.mark.parametrize(
    ("typed", "active"),
    [
        ('"hi ${tag(', 0),  # the string and the interpolation still open
        ('"hi ${tag(1, ', 1),
        ('"hi ${tag(1, "x", ', None),  # a nested string in the arguments, closed
        ('"""\n  hi ${tag(1, ', 1),  # a triple-quoted string
        ('"a ${"b ${tag(', 0),  # an interpolation inside a string inside an interpolation
    ],
)
def test_signature_help_names_the_call_typed_inside_an_interpolation(editor, typed, active):
    c, uri = editor
    text = SOURCE.replace('"hi ${tag(1, "x")} ${who}"', typed)
    got = ask(c, uri, "textDocument/signatureHelp", text, text.index(typed) + len(typed))
    assert got is not None, typed
    (sig,) = got["signatures"]
    assert sig["label"] == "tag(n: int, s: text) -> text"
    assert sig["documentation"]["value"] == "joins a count and a text"
    assert got.get("activeParameter") == active


def test_signature_help_in_the_complete_line_inside_the_interpolation(editor):
    c, uri = editor
    at = SOURCE.index("tag(1, ") + len("tag(1, ")
    got = ask(c, uri, "textDocument/signatureHelp", SOURCE, at)
    assert got is not None
    assert got["signatures"][0]["label"] == "tag(n: int, s: text) -> text"
    assert got["activeParameter"] == 1


@pytest.mark.parametrize(
    "before",
    ['"hi ${tag(1, "', '"hi ${tag(1, "x ', '"hi tag('],  # in a string's own text
)
def test_no_signature_help_in_the_text_of_a_string(editor, before):
    c, uri = editor
    text = SOURCE.replace('"hi ${tag(1, "x")} ${who}"', before)
    assert ask(c, uri, "textDocument/signatureHelp", text, text.index(before) + len(before)) is None


def test_hover_describes_names_inside_an_interpolation(editor):
    c, uri = editor
    got = ask(c, uri, "textDocument/hover", SOURCE, SOURCE.index("${tag(") + 3)
    assert "(function) fn tag(n: int, s: text) -> text" in got["contents"]["value"]
    got = ask(c, uri, "textDocument/hover", SOURCE, SOURCE.index("${who}") + 3)
    assert "(let) who: text" in got["contents"]["value"]


@pytest.mark.parametrize("typed", ["${wh", "${wh}"])
def test_completion_inside_an_interpolation_offers_the_names_in_scope(editor, typed):
    c, uri = editor
    text = SOURCE.replace("${who}", typed)
    got = ask(c, uri, "textDocument/completion", text, text.index("${wh") + len("${wh"))
    items = got["items"] if isinstance(got, dict) else got
    labels = [i["label"] for i in items]
    assert "who" in labels and "input" in labels and "tag" in labels


@pytest.mark.parametrize("typed", ["${input.}", "${input.", "${ {a: input}.a."])
def test_completion_after_a_dot_inside_an_interpolation_offers_the_fields(editor, typed):
    c, uri = editor
    text = SOURCE.replace("${who}", typed)
    got = ask(c, uri, "textDocument/completion", text, text.index(typed) + len(typed.rstrip("}")))
    items = got["items"] if isinstance(got, dict) else got
    assert [i["label"] for i in items] == ["name"]
