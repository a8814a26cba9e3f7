"""Workspace symbols (LSP ``workspace/symbol``, docs/editors.md): the declarations of the open
documents and of the workspace's `.flow` files on disk — types, tools, functions, stages, `use`
aliases, the `flow` header — found by a query whose characters appear in the name in order; an
open document gives its buffer's, hidden directories are not searched."""

from __future__ import annotations

import sys

import pytest

from agentflow.lsp.client import LspClient

LIB = """\
/// a reported problem
type Ticket { title: text }
extern type Blob
extern tool "web.search" as search(q: text) -> text
fn rank(t: Ticket) -> int = len(t.title)
"""

MAIN = """\
flow triage_flow "Triage"
import { Ticket, rank } from "../lib.flow"
use agent "triager" as bot
input Ticket
stage triage -> int { return rank(input) }
"""


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "lib.flow").write_text(LIB, encoding="utf-8")
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "main.flow").write_text(MAIN, encoding="utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "old.flow").write_text("type Tucket { a: int }\n", encoding="utf-8")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    caps = c.initialize(options={"debounce_ms": 0}, root=tmp_path.as_uri())
    try:
        yield c, tmp_path, caps
    finally:
        c.close()


def names(found: list[dict]) -> dict[str, tuple[int, str, int]]:
    """``name → (kind, file name, line)`` of the symbols found."""
    return {
        s["name"]: (
            s["kind"],
            s["location"]["uri"].rsplit("/", 1)[-1],
            s["location"]["range"]["start"]["line"],
        )
        for s in found
    }


def test_every_declaration_of_the_workspace_is_a_symbol(workspace):
    c, _root, caps = workspace
    assert caps["capabilities"]["workspaceSymbolProvider"]
    found = names(c.request("workspace/symbol", {"query": ""}, timeout=30))
    assert found == {
        "Ticket": (23, "lib.flow", 1),  # Struct
        "Blob": (23, "lib.flow", 2),
        "search": (12, "lib.flow", 3),  # Function
        "rank": (12, "lib.flow", 4),
        "triage_flow": (2, "main.flow", 0),  # Module
        "bot": (19, "main.flow", 2),  # Object
        "triage": (12, "main.flow", 4),
    }


def test_a_query_matches_its_characters_in_order_and_an_open_buffer_wins(workspace):
    c, root, _caps = workspace
    assert set(names(c.request("workspace/symbol", {"query": "tkt"}, timeout=30))) == {"Ticket"}
    found = names(c.request("workspace/symbol", {"query": "TRI"}, timeout=30))
    assert set(found) == {"triage", "triage_flow"}
    uri = (root / "flows" / "main.flow").as_uri()
    c.open(uri, MAIN.replace("stage triage", "stage sort"))  # not saved
    found = names(c.request("workspace/symbol", {"query": "sort"}, timeout=30))
    assert found == {"sort": (12, "main.flow", 4)}
