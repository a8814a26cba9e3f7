"""A test's ``stub`` line names what it stubs (docs/reference/testing.md, docs/editors.md):
``stub stage total`` the stage, ``stub agent w`` the ``use agent`` alias, ``stub tool look``
the tool, ``stub ask ok``/``stub step n`` the stage's ``let``. Through the language server's
protocol, renaming the stage or alias edits the stub's name too (it was refused as making the
program invalid), references list the stub, and hover and definition work from the stub."""

from __future__ import annotations

import sys

import pytest
from support.lsp_editor import applied

from agentflow.lsp.client import LspClient, LspError
from agentflow.lsp.positions import LineIndex

SOURCE = """\
use agent "w" as w
type R { score: int }
extern tool look(q: text) -> int
stage total -> R {
  let n = look(q: "a")
  let ok = ask "ok?" expect bool
  return agent(w) { task "x ${n} ${ok}" expect R tools none }
}
stage after -> int { total.score }
test "t" {
  stub stage total returns { score: 1 }
  stub agent w returns { score: 2 }
  stub tool look returns 3
  stub ask ok returns true
  stub step n returns 2
  expect total.score == 1
}
"""

#: two stages each with a `let n`, and a test stubbing `n` (both of them)
SHARED = """\
extern tool look(q: text) -> int
stage a -> int {
  let n = look(q: "a")
  return n
}
stage b -> int {
  let n = look(q: "b")
  return n
}
test "t" {
  stub step n returns 2
  expect a == 2
}
"""


@pytest.fixture(scope="module")
def editor(tmp_path_factory):
    root = tmp_path_factory.mktemp("stubs")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0})
    uris = {}
    for name, text in (("main", SOURCE), ("shared", SHARED)):
        uri = (root / f"{name}.flow").as_uri()
        c.open(uri, text)
        got = c.wait_notification(
            "textDocument/publishDiagnostics", lambda p, u=uri: p["uri"] == u, timeout=30
        )
        assert [d for d in got["diagnostics"] if d["severity"] == 1] == []
        uris[name] = uri
    try:
        yield c, uris
    finally:
        c.close()


def at(text: str, needle: str, delta: int = 0) -> dict:
    line, char = LineIndex(text, "utf-16").position(text.index(needle) + delta)
    return {"line": line, "character": char}


def lines_of(locations: list[dict]) -> list[tuple[int, int]]:
    return sorted(
        (x["range"]["start"]["line"] + 1, x["range"]["start"]["character"] + 1) for x in locations
    )


def rename(c: LspClient, uri: str, text: str, needle: str, delta: int, new: str) -> str:
    got = c.request(
        "textDocument/rename",
        {"textDocument": {"uri": uri}, "position": at(text, needle, delta), "newName": new},
    )
    return applied(got["changes"][uri], text)


@pytest.mark.parametrize("needle", ["stage total ->", "stub stage total"])
def test_renaming_a_stubbed_stage_edits_the_stub_too(editor, needle):
    c, uris = editor
    delta = needle.index("total")
    out = rename(c, uris["main"], SOURCE, needle, delta, "grand")
    assert "stub stage grand returns" in out
    assert "stage grand -> R" in out and "grand.score" in out and "total" not in out


@pytest.mark.parametrize("needle", ["as w", "stub agent w"])
def test_renaming_a_stubbed_agent_alias_edits_the_stub_too(editor, needle):
    c, uris = editor
    out = rename(c, uris["main"], SOURCE, needle, len(needle) - 1, "writer")
    assert 'use agent "w" as writer' in out
    assert "agent(writer)" in out and "stub agent writer returns" in out


def test_renaming_a_stubbed_let_edits_the_stub_step_and_stub_ask(editor):
    c, uris = editor
    out = rename(c, uris["main"], SOURCE, "stub step n", len("stub step "), "count")
    assert "let count = look" in out and "${count}" in out and "stub step count" in out
    out = rename(c, uris["main"], SOURCE, "let ok", 4, "fine")
    assert "let fine = ask" in out and "${fine}" in out and "stub ask fine" in out


def test_a_let_a_stub_names_in_several_stages_is_not_renamed_alone(editor):
    c, uris = editor
    with pytest.raises(LspError, match="other stages too"):
        rename(c, uris["shared"], SHARED, "let n", 4, "m")


def references(c: LspClient, uri: str, text: str, needle: str, delta: int) -> list[tuple[int, int]]:
    got = c.request(
        "textDocument/references",
        {
            "textDocument": {"uri": uri},
            "position": at(text, needle, delta),
            "context": {"includeDeclaration": True},
        },
    )
    return lines_of(got)


def test_references_of_a_stage_alias_and_tool_include_the_stubs(editor):
    c, uris = editor
    main = uris["main"]
    stage = [(4, 7), (9, 22), (11, 14), (16, 10)]
    assert references(c, main, SOURCE, "stage total ->", 6) == stage
    assert references(c, main, SOURCE, "stub stage total", 11) == stage
    assert references(c, main, SOURCE, "as w", 3) == [(1, 18), (7, 16), (12, 14)]
    assert references(c, main, SOURCE, "stub agent w", 11) == [(1, 18), (7, 16), (12, 14)]
    assert references(c, main, SOURCE, "stub tool look", 10) == [(3, 13), (5, 11), (13, 13)]


@pytest.mark.parametrize(
    ("needle", "shown", "declared"),
    [
        ("stub stage total", "(stage) total: R", (4, 7)),
        ("stub agent w", 'use agent "w" as w', (1, 18)),
        ("stub tool look", "(tool) look(q: text) -> int", (3, 13)),
        ("stub ask ok", "(let) ok: bool", (6, 7)),
        ("stub step n", "(let) n: int", (5, 7)),
    ],
)
def test_hover_and_definition_work_from_a_stub_name(editor, needle, shown, declared):
    c, uris = editor
    main = uris["main"]
    word = needle.rsplit(" ", 1)[1]
    pos = at(SOURCE, needle, len(needle) - len(word))
    hover = c.request("textDocument/hover", {"textDocument": {"uri": main}, "position": pos})
    assert shown in hover["contents"]["value"]
    assert hover["range"]["start"] == pos  # the stub's name, not the declaration
    got = c.request("textDocument/definition", {"textDocument": {"uri": main}, "position": pos})
    assert lines_of([got] if isinstance(got, dict) else got) == [declared]
