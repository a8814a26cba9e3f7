"""The language server keeps the walk of the workspace's `.flow` files and their texts between
references, renames and workspace symbols (lsp/workspace_files.DiskFiles) instead of walking the
disk on each request — and still sees what changed on disk: a file added, a file rewritten, a
file the client reports changed (``didChangeWatchedFiles``) or saved."""

from __future__ import annotations

import itertools
import os
import sys
import time
from pathlib import Path

import pytest

from agentflow.compiler.imports import file_key
from agentflow.lsp.client import LspClient
from agentflow.lsp.positions import LineIndex
from agentflow.lsp.watch import RACY_NS
from agentflow.lsp.workspace_files import DiskFiles

LIB = """\
fn rank(n: int) -> int = n + 1
"""
MAIN = """\
import { rank } from "./lib.flow"
stage a -> int { return rank(1) }
"""


_AGES = itertools.count()


def _age(*paths: Path) -> None:
    """Set the modification time of ``paths`` well in the past (older than RACY_NS), one
    second apart so that each later call gives a different time."""
    old = (time.time_ns() - 10 * RACY_NS) // 1_000_000_000 - 100 + next(_AGES)
    for p in paths:
        os.utime(p, (old, old))


def test_the_walk_is_taken_again_only_when_a_directory_changed(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.flow").write_text(MAIN, encoding="utf-8")
    _age(tmp_path, tmp_path / "sub")
    disk = DiskFiles()
    assert disk.files([tmp_path]) == [file_key(tmp_path / "a.flow")]
    assert disk.files([tmp_path]) == [file_key(tmp_path / "a.flow")]
    assert disk.walks == 1  # nothing changed: the walk is kept
    (tmp_path / "sub" / "b.flow").write_text(MAIN, encoding="utf-8")
    assert file_key(tmp_path / "sub" / "b.flow") in disk.files([tmp_path])
    assert disk.walks == 2
    _age(tmp_path, tmp_path / "sub")
    disk.files([tmp_path])
    disk.forget(None)  # told: walked again, whatever the times say
    disk.files([tmp_path])
    assert disk.walks == 4


def test_a_file_rewritten_on_disk_is_read_again(tmp_path):
    path = tmp_path / "a.flow"
    path.write_text(MAIN, encoding="utf-8")
    _age(path)
    disk = DiskFiles()
    assert disk.text(path) == MAIN
    same_size = MAIN.replace("rank(1)", "rank(2)")
    path.write_text(same_size, encoding="utf-8")
    _age(path)  # another (old) time, the same size
    assert disk.text(path) == same_size
    path.unlink()
    with pytest.raises(OSError):
        disk.text(path)


def pos(text: str, needle: str) -> dict:
    line, char = LineIndex(text, "utf-16").position(text.index(needle))
    return {"line": line, "character": char}


@pytest.fixture
def editor(tmp_path):
    (tmp_path / "lib.flow").write_text(LIB, encoding="utf-8")
    (tmp_path / "main.flow").write_text(MAIN, encoding="utf-8")
    c = LspClient([sys.executable, "-m", "agentflow", "lsp"])
    c.initialize(options={"debounce_ms": 0}, root=tmp_path.as_uri())
    lib = (tmp_path / "lib.flow").as_uri()
    c.open(lib, LIB)
    c.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == lib, timeout=30)
    try:
        yield c, tmp_path
    finally:
        c.close()


def _referring_files(c: LspClient, root: Path) -> dict[str, int]:
    lib = (root / "lib.flow").as_uri()
    found = c.request(
        "textDocument/references",
        {
            "textDocument": {"uri": lib},
            "position": pos(LIB, "rank"),
            "context": {"includeDeclaration": False},
        },
        timeout=30,
    )
    out: dict[str, int] = {}
    for x in found:
        name = Path(x["uri"]).name
        out[name] = out.get(name, 0) + 1
    return out


def test_references_see_files_added_and_changed_on_disk_between_requests(editor):
    c, root = editor
    assert _referring_files(c, root) == {"main.flow": 2}  # its import item and its call
    # a new importer, and main.flow calling `rank` once more, written behind the editor's back
    (root / "more.flow").write_text(MAIN, encoding="utf-8")
    (root / "main.flow").write_text(MAIN.replace("rank(1)", "rank(rank(1))"), encoding="utf-8")
    assert _referring_files(c, root) == {"main.flow": 3, "more.flow": 2}


def test_a_watched_file_event_makes_the_server_read_the_file_again(editor):
    c, root = editor
    _age(root / "main.flow", root)
    assert _referring_files(c, root) == {"main.flow": 2}
    # the call moved by one character: the same size, the same (old) time — only the client's
    # event tells the server
    main = root / "main.flow"
    moved = MAIN.replace("return rank(1) }", "return  rank(1)}")
    stat = os.stat(main)
    main.write_text(moved, encoding="utf-8")
    os.utime(main, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    _age(root)
    c.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": main.as_uri(), "type": 2}]})
    lib = (root / "lib.flow").as_uri()
    edit = c.request(
        "textDocument/rename",
        {"textDocument": {"uri": lib}, "position": pos(LIB, "rank"), "newName": "score"},
        timeout=30,
    )
    [call] = [e for e in edit["changes"][main.as_uri()] if e["range"]["start"]["line"] == 1]
    assert call["range"]["start"]["character"] == moved.splitlines()[1].index("rank")
