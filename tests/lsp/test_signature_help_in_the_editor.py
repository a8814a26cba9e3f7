"""Signature help through the language server's protocol (docs/editors.md): while a call's
arguments are typed — the text not parsing yet — the signature of the user function, library
function or tool called, with the parameter being written (by position, or by name for a
tool's named argument) and the doc; none outside a call's parentheses."""

from __future__ import annotations

import itertools
import sys

import pytest
from support.lsp_editor import opened

from agentflow.lsp.client import LspClient
from agentflow.lsp.positions import LineIndex

SOURCE = """\
type Sev = "low" | "high"
/// how urgent a severity is
fn rank(s: Sev, k: int) -> int = if s == "high" then 3 * k else k
/// looks a text up
extern tool lookup(q: text, limit: int) -> Sev
input { sev: Sev }
stage s -> int {
  return rank(input.sev, 2)
}
"""


@pytest.fixture(scope="module")
def editor(tmp_path_factory):
    root = tmp_path_factory.mktemp("sig")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    caps = c.initialize(options={"debounce_ms": 0})
    uri = (root / "main.flow").as_uri()
    opened(c, uri, SOURCE)
    try:
        yield c, uri, caps
    finally:
        c.close()


_VERSIONS = itertools.count(2)


def help_after(c: LspClient, uri: str, typed: str) -> dict | None:
    """Signature help with ``return rank(input.sev, 2)`` replaced by ``return TYPED`` and the
    cursor after it."""
    text = SOURCE.replace("rank(input.sev, 2)", typed)
    c.change(uri, text, next(_VERSIONS))
    line, char = LineIndex(text, "utf-16").position(text.index(typed) + len(typed))
    got: dict | None = c.request(
        "textDocument/signatureHelp",
        {"textDocument": {"uri": uri}, "position": {"line": line, "character": char}},
    )
    return got


def test_the_server_offers_signature_help_on_open_paren_and_comma(editor):
    _c, _uri, caps = editor
    assert set(caps["capabilities"]["signatureHelpProvider"]["triggerCharacters"]) == {"(", ","}


@pytest.mark.parametrize(
    ("typed", "label", "active", "doc"),
    [
        ("rank(", "rank(s: Sev, k: int) -> int", 0, "how urgent a severity is"),
        ("rank(input.sev, ", "rank(s: Sev, k: int) -> int", 1, "how urgent a severity is"),
        ("rank([1, 2].count, ", "rank(s: Sev, k: int) -> int", 1, None),
        ("len(upper(", "upper(s: text) -> text", 0, "`s` in upper case"),
        ("len(upper(input.sev), ", "len(x: text | json[] | map<json>) -> int", None, None),
        ('lookup(limit: 3, q: "x', None, None, None),  # in an unterminated string: none
        ("lookup(limit: ", "lookup(q: text, limit: int) -> Sev", 1, "looks a text up"),
    ],
)
def test_signature_help_names_the_call_being_typed_and_its_parameter(
    editor, typed, label, active, doc
):
    c, uri, _caps = editor
    got = help_after(c, uri, typed)
    if label is None:
        assert got is None
        return
    assert got is not None
    [sig] = got["signatures"]
    assert sig["label"] == label
    assert got.get("activeParameter") == active
    for p in sig["parameters"]:
        assert p["label"] in label
    if doc is not None:
        assert doc in sig["documentation"]["value"]


def test_no_signature_help_outside_a_call(editor):
    c, uri, _caps = editor
    assert help_after(c, uri, "[1, ") is None
    assert help_after(c, uri, "(1 + ") is None
