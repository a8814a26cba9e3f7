"""`import` in the editor (docs/reference/programs.md "import"): a document that imports is
checked with the imported file (its open buffer when it is open, else the file on disk); hover
and go to definition reach into the imported file; editing, saving or closing the imported file
checks the documents that import it again."""

from __future__ import annotations

import sys

import pytest

from agentflow.lsp.client import LspClient, LspError
from agentflow.lsp.positions import LineIndex

SHARED = """\
/// how bad it is
type Severity = "low" | "medium" | "high"
/// a reported problem
type Ticket {
  title: text
  severity: Severity
}
"""

MAIN = """\
import { Ticket, Severity } from "./shared.flow"
input Ticket
stage triage -> Severity {
  return input.severity
}
"""


def pos(text: str, needle: str, delta: int = 0) -> dict:
    line, char = LineIndex(text, "utf-16").position(text.index(needle) + delta)
    return {"line": line, "character": char}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "shared.flow").write_text(SHARED, encoding="utf-8")
    (tmp_path / "main.flow").write_text(MAIN, encoding="utf-8")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0})
    try:
        yield c, tmp_path
    finally:
        c.close()


def _diagnostics(c: LspClient, uri: str, code: str | None = None) -> list[dict]:
    """The next diagnostics published for ``uri`` (with ``code``: the next that hold one of
    that code; without: the next that are empty — the document may be checked more than once)."""

    def wanted(p: dict) -> bool:
        codes = [d["code"] for d in p["diagnostics"]]
        return p["uri"] == uri and (code in codes if code else not codes)

    return c.wait_notification("textDocument/publishDiagnostics", wanted, timeout=30)["diagnostics"]


def test_an_importing_document_checks_clean_and_reaches_into_the_imported_file(project):
    c, root = project
    uri = (root / "main.flow").as_uri()
    c.open(uri, MAIN)
    assert _diagnostics(c, uri) == []
    # hover of an imported type shows it as written in its file, with its doc
    r = c.request(
        "textDocument/hover", {"textDocument": {"uri": uri}, "position": pos(MAIN, "Ticket\n")}
    )
    shown = r["contents"]["value"]
    assert "title: text" in shown and "a reported problem" in shown
    assert f"from `{root / 'shared.flow'}`" in shown
    # completion: the fields of an imported type, and the types of the file in the braces
    typed = MAIN.replace("return input.severity", "return input.")
    c.change(uri, typed, 2)
    at = pos(typed, "input.", 6)
    got = c.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": at})
    assert {"title", "severity"} <= {i["label"] for i in got["items"]}
    braces = MAIN.replace("{ Ticket, Severity }", "{ Ticket,  }")
    c.change(uri, braces, 3)
    at = pos(braces, "Ticket, ", 8)
    got = c.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": at})
    assert [(i["label"], i["detail"]) for i in got["items"]] == [("Severity", "type Severity = …")]
    c.change(uri, MAIN, 4)
    # an imported type is renamed in its own file, not here
    with pytest.raises(LspError, match="is declared in .*shared.flow.: rename it there"):
        c.request(
            "textDocument/rename",
            {"textDocument": {"uri": uri}, "position": pos(MAIN, "Ticket\n"), "newName": "T"},
        )
    # go to definition: from a use, and from the name in the braces, into shared.flow
    shared_uri = (root / "shared.flow").as_uri()
    for at in (pos(MAIN, "Severity {"), pos(MAIN, "Ticket,")):
        loc = c.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": at})
        assert loc["uri"] == shared_uri
        name = "Severity" if at == pos(MAIN, "Severity {") else "Ticket"
        assert loc["range"]["start"] == pos(SHARED, f"{name} ")


def test_editing_the_imported_file_checks_the_importer_again(project):
    c, root = project
    uri = (root / "main.flow").as_uri()
    shared_uri = (root / "shared.flow").as_uri()
    c.open(uri, MAIN)
    assert _diagnostics(c, uri) == []
    c.open(shared_uri, SHARED)
    assert _diagnostics(c, shared_uri) == []
    # the unsaved buffer of shared.flow is what main.flow imports
    c.change(
        shared_uri,
        SHARED.replace("type Severity", "type Sevrity").replace(": Severity", ": Sevrity"),
        2,
    )
    [d] = _diagnostics(c, uri, "unknown-import")
    assert "did you mean `Sevrity`" in d["message"]
    assert d["range"]["start"] == pos(MAIN, "Severity }")
    # an error inside the imported file: one diagnostic at the import, related to its place
    broken = SHARED.replace("title: text", "title: txt")
    c.change(shared_uri, broken, 3)
    [d] = _diagnostics(c, uri, "import-error")
    [related] = d["relatedInformation"]
    assert related["location"]["uri"] == shared_uri
    assert related["location"]["range"]["start"] == pos(broken, "txt")
    # closing the buffer: main.flow imports the file on disk again
    c.notify("textDocument/didClose", {"textDocument": {"uri": shared_uri}})
    assert _diagnostics(c, uri) == []
    # a file that does not exist yet: opening a buffer of it checks the importer again
    later = MAIN.replace("./shared.flow", "./later.flow")
    c.change(uri, later, 2)
    _diagnostics(c, uri, "import-not-found")
    c.open((root / "later.flow").as_uri(), SHARED)
    assert _diagnostics(c, uri) == []


def test_the_incremental_check_sees_a_change_of_an_imported_type(tmp_path):
    """The editor's check reuses the stage checks nothing can have changed: a change of an
    imported type is such a change (the stage reading its field is checked again)."""
    from pathlib import Path

    from agentflow.compiler.imports import Importer
    from agentflow.lsp.analysis import analyze
    from agentflow.lsp.incremental import IncrementalParser

    shared = tmp_path / "shared.flow"
    shared.write_text(SHARED, encoding="utf-8")
    main = str(tmp_path / "main.flow")
    texts = {shared: SHARED}
    cache: dict[Path, object] = {}

    def checked():
        return analyze(MAIN, main, parser, Importer(lambda p: texts[p], cache)).result

    parser = IncrementalParser(main)
    assert checked().ok
    assert checked().ok and parser.memo.replayed == 1  # nothing changed: replayed
    texts[shared] = SHARED.replace("severity: Severity", "level: Severity")
    Importer(lambda p: texts[p], cache).forget(shared)
    [d] = checked().diagnostics
    assert d.code == "unknown-field" and d.span.line == 4


RENAMED = """\
import { Ticket as Case } from "./shared.flow"
input Case
stage pick -> Case {
  return input
}
"""


def test_a_renamed_import_is_this_files_name_for_hover_definition_and_rename(project):
    c, root = project
    uri = (root / "main.flow").as_uri()
    c.open(uri, RENAMED)
    assert _diagnostics(c, uri) == []
    # hover of the local name: the type as written in its file, and its name there
    r = c.request(
        "textDocument/hover", {"textDocument": {"uri": uri}, "position": pos(RENAMED, "Case\n")}
    )
    shown = r["contents"]["value"]
    assert "title: text" in shown and "where it is `Ticket`" in shown
    # definition, from a use and from either name in the braces: the declaration in its file
    shared_uri = (root / "shared.flow").as_uri()
    for at in (pos(RENAMED, "Case {"), pos(RENAMED, "Ticket as"), pos(RENAMED, "Case }")):
        loc = c.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": at})
        assert (loc["uri"], loc["range"]["start"]) == (shared_uri, pos(SHARED, "Ticket "))
    # the `as` name is this file's: renaming it edits this file only; the other name is not
    edit = c.request(
        "textDocument/rename",
        {"textDocument": {"uri": uri}, "position": pos(RENAMED, "Case {"), "newName": "Issue"},
    )
    edits = edit["changes"][uri]
    assert list(edit["changes"]) == [uri] and len(edits) == 3
    assert {e["newText"] for e in edits} == {"Issue"}
    assert pos(RENAMED, "Case }") in [e["range"]["start"] for e in edits]
    with pytest.raises(LspError, match="is declared in .*shared.flow.: rename it there"):
        c.request(
            "textDocument/rename",
            {"textDocument": {"uri": uri}, "position": pos(RENAMED, "Ticket as"), "newName": "T"},
        )
