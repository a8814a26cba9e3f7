"""The ``B`` of a test's ``stub step r.B`` names branch ``B`` of ``let r = parallel { … }``
(docs/reference/testing.md "Stubbing a parallel block", docs/editors.md): through the language
server's protocol, hover there gives the branch's type, definition goes to the branch's name in
the block, and references of the branch — from the stub or from the block — list the block's
name, its reads ``r.B`` and every stub naming it (the branch of each stage's ``let r`` block)."""

from __future__ import annotations

import sys

import pytest
from support.lsp_editor import errors, opened

from agentflow.lsp.client import LspClient
from agentflow.lsp.positions import LineIndex

SOURCE = """\
extern tool user__size(path: text) -> int
use agent "reviewer" as style
type Style { ok: bool }
input { diff: text, path: text }
stage review -> int {
  let both = parallel {
    style: agent(style) { task "Review ${input.diff}" expect Style },
    size: user__size(path: input.path),
  }
  return both.size
}
stage again -> int {
  let both = parallel {
    size: user__size(path: input.diff),
  }
  return both.size + 1
}
test "one branch is stubbed" {
  input { diff: "d", path: "a.txt" }
  stub step both.style returns { ok: false }
  expect review == 7
}
test "the other" {
  input { diff: "d", path: "a.txt" }
  stub step both.size returns 3
  stub agent style returns { ok: true }
  expect again == 4
}
"""


@pytest.fixture(scope="module")
def editor(tmp_path_factory):
    root = tmp_path_factory.mktemp("stubbranch")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0})
    uri = (root / "main.flow").as_uri()
    assert errors(opened(c, uri, SOURCE)) == []
    try:
        yield c, uri
    finally:
        c.close()


def at(needle: str, delta: int = 0, nth: int = 0) -> dict:
    offset = -1
    for _ in range(nth + 1):
        offset = SOURCE.index(needle, offset + 1)
    line, char = LineIndex(SOURCE, "utf-16").position(offset + delta)
    return {"line": line, "character": char}


def starts(locations: list[dict]) -> list[tuple[int, int]]:
    return sorted(
        (x["range"]["start"]["line"] + 1, x["range"]["start"]["character"] + 1) for x in locations
    )


def where(needle: str, delta: int = 0, nth: int = 0) -> tuple[int, int]:
    p = at(needle, delta, nth)
    return (p["line"] + 1, p["character"] + 1)


def _request(c: LspClient, uri: str, method: str, position: dict, **extra: object):
    return c.request(method, {"textDocument": {"uri": uri}, "position": position, **extra})


def test_hover_on_a_stubbed_branch_gives_the_branch_and_its_type(editor):
    c, uri = editor
    pos = at("both.style returns", len("both.") + 2)
    got = _request(c, uri, "textDocument/hover", pos)
    assert got["contents"]["value"] == "```flow\n(branch) style: Style\n```"
    r = got["range"]
    assert (r["start"], r["end"]) == (at("both.style returns", 5), at("both.style returns", 10))


def test_definition_of_a_stubbed_branch_is_the_branch_name_in_the_block(editor):
    c, uri = editor
    got = _request(c, uri, "textDocument/definition", at("both.style returns", 6))
    (loc,) = got if isinstance(got, list) else [got]
    assert loc["range"]["start"] == at("style: agent")
    assert loc["range"]["end"] == at("style: agent", len("style"))


def test_references_from_a_stubbed_branch_list_each_blocks_branch_its_reads_and_the_stub(editor):
    c, uri = editor
    got = _request(
        c,
        uri,
        "textDocument/references",
        at("both.size returns", 6),
        context={"includeDeclaration": True},
    )
    assert starts(got) == sorted(
        [
            where("size: user__size(path: input.path)"),  # stage review's block
            where("both.size\n}", 5),  # its read
            where("size: user__size(path: input.diff)"),  # stage again's block
            where("both.size + 1", 5),  # its read
            where("both.size returns", 5),  # the stub
        ]
    )


def test_references_from_the_block_branch_list_the_stub_naming_it(editor):
    c, uri = editor
    got = _request(
        c,
        uri,
        "textDocument/references",
        at("style: agent", 1),
        context={"includeDeclaration": False},
    )
    assert starts(got) == [where("both.style returns", 5)]


def test_the_stubbed_step_name_still_goes_to_its_let(editor):
    c, uri = editor
    got = _request(c, uri, "textDocument/definition", at("both.style returns", 1))
    (loc,) = got if isinstance(got, list) else [got]
    assert loc["range"]["start"] == at("both = parallel", 0)
