"""Rename and references of an importable name (a type, a user function) reach the `.flow` files
of the workspace on disk that import it, not only the open documents (docs/editors.md): a rename
that edited only the open files would leave the others naming what no longer exists. A file
that does not parse is left out, and one that merely mentions the name is not touched."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.lsp_editor import applied

from agentflow.compiler.api import check_file
from agentflow.lsp.client import LspClient, LspError
from agentflow.lsp.positions import LineIndex

LIB = """\
type Severity = "low" | "medium" | "high"
fn rank(s: Severity) -> int = if s == "high" then 3 else 1
"""

#: on disk, never opened
MAIN = """\
import { rank, Severity } from "../lib.flow"
input { severity: Severity }
stage a -> int {
  return rank(input.severity) + rank("high")
}
"""
ALIASED = """\
import { Severity as Level } from "../lib.flow"
input { level: Level }
stage a -> Level { return input.level }
"""
#: names `rank` without importing it from lib.flow
UNRELATED = """\
fn rank(n: int) -> int = n
stage a -> int { return rank(1) }
"""
#: imports and calls `rank`, but another of its stages does not parse
BROKEN = """\
import { rank } from "./lib.flow"
stage a -> int { return rank("low") }
stage b -> int { return 1 +  }
"""


def pos(text: str, needle: str, delta: int = 0) -> dict:
    line, char = LineIndex(text, "utf-16").position(text.index(needle) + delta)
    return {"line": line, "character": char}


def _write(root: Path) -> dict[str, Path]:
    files = {
        "lib": root / "lib.flow",
        "main": root / "flows" / "main.flow",
        "aliased": root / "flows" / "aliased.flow",
        "unrelated": root / "unrelated.flow",
        "broken": root / "broken.flow",
    }
    texts = {"lib": LIB, "main": MAIN, "aliased": ALIASED, "unrelated": UNRELATED}
    texts["broken"] = BROKEN
    for key, path in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(texts[key], encoding="utf-8")
    return files


@pytest.fixture
def workspace(tmp_path):
    files = _write(tmp_path)
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0}, root=tmp_path.as_uri())
    lib = files["lib"].as_uri()
    c.open(lib, LIB)
    got = c.wait_notification(
        "textDocument/publishDiagnostics", lambda p: p["uri"] == lib, timeout=30
    )
    assert got["diagnostics"] == []
    try:
        yield c, files
    finally:
        c.close()


def ask(c: LspClient, method: str, uri: str, at: dict, **extra: object) -> object:
    return c.request(method, {"textDocument": {"uri": uri}, "position": at, **extra}, timeout=30)


def test_renaming_a_function_edits_the_unopened_files_that_import_it(workspace):
    c, files = workspace
    lib, main = files["lib"].as_uri(), files["main"].as_uri()
    edit = ask(c, "textDocument/rename", lib, pos(LIB, "rank("), newName="urgency")
    assert set(edit["changes"]) == {lib, main}  # not unrelated.flow, not the broken file
    assert applied(edit["changes"][main], MAIN) == MAIN.replace("rank", "urgency")
    # the importer that does not parse is named to the user, who renames it there by hand
    shown = c.wait_notification("window/showMessage", timeout=30)
    assert shown["type"] == 2 and "`broken.flow` left out (it does not parse)" in shown["message"]
    # the workspace checks clean once the edits are applied
    files["lib"].write_text(applied(edit["changes"][lib], LIB), encoding="utf-8")
    files["main"].write_text(applied(edit["changes"][main], MAIN), encoding="utf-8")
    assert check_file(files["main"]).errors == []


def test_renaming_a_type_edits_the_unopened_importers_and_keeps_an_as_name(workspace):
    c, files = workspace
    lib, main, aliased = (files[k].as_uri() for k in ("lib", "main", "aliased"))
    edit = ask(c, "textDocument/rename", lib, pos(LIB, "Severity ="), newName="Urgency")
    assert set(edit["changes"]) == {lib, main, aliased}
    assert applied(edit["changes"][main], MAIN) == MAIN.replace("Severity", "Urgency")
    assert applied(edit["changes"][aliased], ALIASED) == ALIASED.replace(
        "Severity as", "Urgency as"
    )


def test_a_rename_that_clashes_in_an_unopened_importer_is_refused(workspace):
    c, files = workspace
    clash = files["lib"].parent / "clash.flow"
    clash.write_text(
        'import { rank } from "./lib.flow"\n'
        "fn level(n: int) -> int = n\n"
        'stage b -> int { return level(rank("low")) }\n',
        encoding="utf-8",
    )
    with pytest.raises(LspError, match="`clash.flow` imports `rank` and already has a function"):
        ask(c, "textDocument/rename", files["lib"].as_uri(), pos(LIB, "rank("), newName="level")


def test_references_reach_the_unopened_importers_and_the_unopened_declaring_file(workspace):
    c, files = workspace
    lib, main, aliased = (files[k].as_uri() for k in ("lib", "main", "aliased"))
    context = {"context": {"includeDeclaration": True}}
    found = ask(c, "textDocument/references", lib, pos(LIB, "Severity ="), **context)
    where = {
        (x["uri"], x["range"]["start"]["line"], x["range"]["start"]["character"]) for x in found
    }
    line_char = LineIndex(MAIN, "utf-16")
    assert (main, *line_char.position(MAIN.index("Severity } from"))) in where
    assert (main, *line_char.position(MAIN.index("Severity }\n"))) in where
    assert (aliased, 0, ALIASED.index("Severity")) in where
    assert (aliased, 1, ALIASED.splitlines()[1].index("Level")) in where
    # from an importer, with the declaring file closed: its `fn`, calls and other importers
    c.notify("textDocument/didClose", {"textDocument": {"uri": lib}})
    other = files["lib"].parent / "flows" / "other.flow"
    text = 'import { rank } from "../lib.flow"\nstage b -> int { return rank("low") }\n'
    other.write_text(text, encoding="utf-8")
    c.open(other.as_uri(), text)
    found = ask(c, "textDocument/references", other.as_uri(), pos(text, 'rank("'), **context)
    uris = {x["uri"] for x in found}
    assert {other.as_uri(), lib, main} <= uris
    assert files["unrelated"].as_uri() not in uris


def test_without_a_workspace_folder_the_files_near_the_declaring_one_are_reached(tmp_path):
    """A client that gives no workspace (a single file opened): the importers in the declaring
    file's directory, the one above and their sub-directories are edited."""
    files = _write(tmp_path / "project")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    try:
        c.initialize(options={"debounce_ms": 0})
        lib, main = files["lib"].as_uri(), files["main"].as_uri()
        c.open(lib, LIB)
        c.wait_notification(
            "textDocument/publishDiagnostics", lambda p: p["uri"] == lib, timeout=30
        )
        edit = ask(c, "textDocument/rename", lib, pos(LIB, "rank("), newName="urgency")
        assert set(edit["changes"]) == {lib, main}
    finally:
        c.close()
