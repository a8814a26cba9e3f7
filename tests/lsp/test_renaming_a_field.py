"""Rename of a record/type field (docs/editors.md): from its declaration or any use, the
declaration and every use — member reads (in `${…}` too), object-literal keys (quoted or not),
`sort_by`/`pick` field names — in the document, and, for a field of a `type` other files import,
in those files, open or on disk. Refused with a clear message: a new name that is not a name, a
field the type already has, a field declared in another file (rename it there). A stage named
with a word that starts an expression (`stage parallel`) is `reserved-name` at its declaration,
so a rename to such a word is refused even when nothing reads the stage yet."""

from __future__ import annotations

import sys

import pytest
from support.lsp_editor import applied

from agentflow.compiler.api import check_file, check_source
from agentflow.lsp.analysis import analyze
from agentflow.lsp.client import LspClient, LspError
from agentflow.lsp.positions import LineIndex

ONE_FILE = """\
type Report {
  title: text
  url: text
}
input Report
stage a -> Report {
  let r: Report = { "title": input.title, url: "u" }
  let xs = sort_by([r], "-title") + [pick(r, ["title", "url"])]
  return { title: "${r.title}", url: xs[0].url }
}
"""


def _renamed(text: str, needle: str, new: str, delta: int = 0) -> str:
    a = analyze(text, "x.flow")
    offset = text.index(needle) + delta
    assert a.rename_problem(offset, new) is None
    out = text
    for s in sorted(a.references_for_rename(offset) or [], key=lambda s: -s.start):
        out = out[: s.start] + new + out[s.end :]
    return out


def test_renaming_a_field_rewrites_its_declaration_and_every_use():
    for needle, delta in (("title: text", 0), ("r.title", 2), ("input.title", 6)):
        out = _renamed(ONE_FILE, needle, "headline", delta)
        assert out == ONE_FILE.replace("title", "headline"), needle
        assert check_source(out, "x.flow").errors == []


def test_renaming_a_field_of_an_inline_input_type():
    text = "input { n: int }\nstage a -> int {\n  return input.n + 1\n}\n"
    assert _renamed(text, "n: int", "count") == text.replace("n:", "count:").replace(
        ".n ", ".count "
    )


@pytest.mark.parametrize(
    ("new", "why"),
    [
        ("x y", "`x y` is not a valid field name"),
        ("2nd", "`2nd` is not a valid field name"),
        ("url", "`Report` already has a field `url` (line 3)"),
    ],
)
def test_a_field_rename_is_refused_with_a_clear_message(new, why):
    a = analyze(ONE_FILE, "x.flow")
    problem = a.rename_problem(ONE_FILE.index("title: text"), new)
    assert problem is not None and problem.startswith(why), problem


def test_a_word_of_the_language_is_a_field_name_like_any_other():
    """docs/reference/lexical.md: every word is fine as a field or key — `r.if`, `{ if: 1 }`."""
    out = _renamed(ONE_FILE, "title: text", "if")
    assert "  if: text\n" in out and "r.if" in out and check_source(out, "x.flow").errors == []


def test_a_stage_named_with_a_word_of_the_language_is_refused_at_its_declaration():
    [d] = check_source("stage parallel -> int {\n  return 1\n}\n", "x.flow").diagnostics
    assert d.code == "reserved-name" and d.span.line == 1 and "a stage" in d.message
    read = "stage parallel -> int {\n  return 1\n}\nstage b -> int {\n  return parallel + 1\n}\n"
    [d] = check_source(read, "x.flow").diagnostics
    assert d.code == "reserved-name" and d.span.line == 1  # not a syntax error at line 5
    assert "the parser stopped here" in d.notes[0].message
    text = "stage first -> int {\n  return 1\n}\n"  # nothing reads `first`
    a = analyze(text, "x.flow")
    problem = a.rename_problem(text.index("first"), "parallel")
    assert problem is not None and "could never be read" in problem
    assert (
        a.rename_problem(text.index("first"), "if") == "`if` is a reserved word: it is never a name"
    )


LIB = """\
type Ticket {
  title: text
  level: int
}
"""
#: on disk, never opened
MAIN = """\
import { Ticket } from "./lib.flow"
input Ticket
stage a -> text {
  return input.title
}
"""
#: opened
OTHER = """\
import { Ticket as Case } from "./lib.flow"
stage b -> Case {
  let c: Case = { title: "t", level: 1 }
  return { title: c.title, level: 2 }
}
"""


def pos(text: str, needle: str, delta: int = 0) -> dict:
    line, char = LineIndex(text, "utf-16").position(text.index(needle) + delta)
    return {"line": line, "character": char}


@pytest.fixture
def workspace(tmp_path):
    for name, text in (("lib.flow", LIB), ("main.flow", MAIN), ("other.flow", OTHER)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0}, root=tmp_path.as_uri())
    for name, text in (("lib.flow", LIB), ("other.flow", OTHER)):
        uri = (tmp_path / name).as_uri()
        c.open(uri, text)
        c.wait_notification("textDocument/publishDiagnostics", lambda p, u=uri: p["uri"] == u)
    try:
        yield c, tmp_path
    finally:
        c.close()


def test_renaming_a_field_edits_the_open_and_unopened_files_that_import_its_type(workspace):
    c, root = workspace
    lib, main, other = ((root / n).as_uri() for n in ("lib.flow", "main.flow", "other.flow"))
    edit = c.request(
        "textDocument/rename",
        {"textDocument": {"uri": lib}, "position": pos(LIB, "title"), "newName": "summary"},
        timeout=30,
    )
    assert set(edit["changes"]) == {lib, main, other}
    assert applied(edit["changes"][lib], LIB) == LIB.replace("title", "summary")
    assert applied(edit["changes"][main], MAIN) == MAIN.replace("title", "summary")
    assert applied(edit["changes"][other], OTHER) == OTHER.replace("title", "summary")
    for name, text in (("lib.flow", LIB), ("main.flow", MAIN), ("other.flow", OTHER)):
        uri = (root / name).as_uri()
        (root / name).write_text(applied(edit["changes"][uri], text), encoding="utf-8")
    assert check_file(root / "main.flow").errors == []
    assert check_file(root / "other.flow").errors == []
    # references from the declaration reach the importers too
    found = c.request(
        "textDocument/references",
        {
            "textDocument": {"uri": lib},
            "position": pos(LIB, "level"),
            "context": {"includeDeclaration": False},
        },
        timeout=30,
    )
    assert {x["uri"] for x in found} == {other}


def test_a_field_of_an_imported_type_is_renamed_where_it_is_declared(workspace):
    c, root = workspace
    other = (root / "other.flow").as_uri()
    with pytest.raises(LspError, match="field `title` is declared in `lib.flow`: rename it there"):
        c.request(
            "textDocument/rename",
            {"textDocument": {"uri": other}, "position": pos(OTHER, "c.title", 2), "newName": "x"},
            timeout=30,
        )
