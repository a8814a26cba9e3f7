"""The builtin file tools stay beneath the workspace under concurrent change, never open a FIFO
or device, read large files in bounded memory, and honour write scopes under a relative
``--workspace`` (docs/spec/RUNTIME.md §4; issue 16)."""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from support.chat_server import TEST_API_KEY, text, tool_calls
from support.symlink_race import TOOLS, race
from support.timing import scaled

from agentflow import api
from agentflow.errors import RunError
from agentflow.ir import load_plan_text
from agentflow.runtime.config import load_config
from agentflow.runtime.tools import builtin
from agentflow.runtime.tools.catalog import ToolContext

#: Operations per tool in CI; bench/symlink_race.py runs 10,000 per tool.
RACE_OPS = 300


def call(name, args, workspace, scope=None):
    func = getattr(builtin, name)
    return func(args, ToolContext(workspace=workspace, write_scope=scope))


@pytest.mark.parametrize("tool", TOOLS)
def test_swapping_a_directory_for_a_symlink_never_leads_outside(tmp_path, tool):
    result = race(tmp_path, tool, RACE_OPS)
    print(result.line())
    assert result.escaped == 0 and result.crashed == 0, result.line()
    assert result.swaps > 0
    assert result.answered + result.refused == RACE_OPS


def test_links_inside_the_workspace_still_resolve(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("root readme\n")
    os.symlink("../README.md", tmp_path / "docs" / "README.md")  # relative, stays inside
    os.symlink(tmp_path / "docs", tmp_path / "abs_docs")  # absolute, under the workspace
    assert call("read_file", {"path": "docs/README.md"}, tmp_path) == "root readme\n"
    assert call("read_file", {"path": "abs_docs/README.md"}, tmp_path) == "root readme\n"
    assert {"path": "abs_docs", "kind": "dir"} in call("list_dir", {}, tmp_path)
    os.symlink("loop", tmp_path / "loop")
    with pytest.raises(RunError, match="symbolic links"):
        call("read_file", {"path": "loop"}, tmp_path)


def test_an_absolute_link_through_the_workspace_parent_resolves_inside(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("inside\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    # `/…/ws/../ws/a.txt` climbs to the workspace's parent and comes back: inside
    os.symlink(f"{ws}/../ws/a.txt", ws / "inlnk")
    assert call("read_file", {"path": "inlnk"}, ws) == "inside\n"
    # through the parent to a sibling, or above the root from inside, stays refused
    os.symlink(f"{ws}/../secret.txt", ws / "outlnk")
    os.symlink(f"{ws}/../ws/../secret.txt", ws / "outlnk2")
    os.symlink(f"{ws}/..", ws / "parent")
    for name in ("outlnk", "outlnk2", "parent/secret.txt"):
        with pytest.raises(RunError, match="outside the workspace"):
            call("read_file", {"path": name}, ws)


def test_a_refused_write_creates_no_directory_on_its_way(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(str(tmp_path), ws / "out")
    for path in ("zz2/../../x", "zz3/a/../../../x", "zz4/../out/x", "zz5/b/../../out/x"):
        with pytest.raises(RunError, match="outside the workspace"):
            call("write_file", {"path": path, "content": "pwn"}, ws)
    assert sorted(p.name for p in ws.iterdir()) == ["out"]
    assert not (tmp_path / "x").exists()
    # a path that stays inside still makes its directories
    assert call("write_file", {"path": "new/deep/../f.txt", "content": "ok"}, ws)["path"] == (
        "new/f.txt"
    )
    assert (ws / "new" / "deep").is_dir() and (ws / "new" / "f.txt").read_text() == "ok"


def test_a_path_ending_with_a_slash_names_a_directory_not_a_file(tmp_path):
    (tmp_path / "a.txt").write_text("text\n")
    (tmp_path / "d").mkdir()
    with pytest.raises(RunError, match="ends with '/'"):
        call("write_file", {"path": "newdir/", "content": "x"}, tmp_path)
    with pytest.raises(RunError, match="ends with '/'"):
        call("write_file", {"path": "a.txt/", "content": "x"}, tmp_path)
    assert not (tmp_path / "newdir").exists() and (tmp_path / "a.txt").read_text() == "text\n"
    for tool, args in (("read_file", {}), ("edit_file", {"old": "text", "new": "t"})):
        with pytest.raises(RunError, match="is not a directory"):
            call(tool, {"path": "a.txt/", **args}, tmp_path)
        with pytest.raises(RunError, match="is not a directory"):
            call(tool, {"path": "a.txt/.", **args}, tmp_path)
        with pytest.raises(RunError, match="is a directory"):
            call(tool, {"path": "d/", **args}, tmp_path)
    assert (tmp_path / "a.txt").read_text() == "text\n"


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "a.txt").write_text("needle\n")
    started = time.monotonic()
    with pytest.raises(RunError, match="FIFO"):
        call("read_file", {"path": "pipe"}, tmp_path)
    with pytest.raises(RunError, match="FIFO"):
        call("grep", {"pattern": "x", "path": "pipe"}, tmp_path)
    with pytest.raises(RunError, match="FIFO"):
        call("edit_file", {"path": "pipe", "old": "a", "new": "b"}, tmp_path)
    with pytest.raises(RunError, match="not a regular file"):
        call("write_file", {"path": "pipe", "content": "x"}, tmp_path)
    # a directory search skips it
    assert call("grep", {"pattern": "needle"}, tmp_path) == [
        {"path": "a.txt", "line": 1, "text": "needle"}
    ]
    assert call("list_dir", {}, tmp_path) == [{"path": "a.txt", "kind": "file"}]  # and listing
    assert time.monotonic() - started < scaled(5)


def test_reading_a_huge_file_takes_bounded_memory(tmp_path):
    big = tmp_path / "big.log"
    with open(big, "wb") as fh:
        fh.write(b"".join(b"line %d\n" % i for i in range(200_000)))
        fh.truncate(1 << 30)  # 1 GiB, sparse after the text
    tracemalloc.start()
    try:
        out = call("read_file", {"path": "big.log"}, tmp_path)
        grep_out = call("grep", {"pattern": "line 5$"}, tmp_path)  # too large: skipped
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.startswith("line 0\nline 1\n")
    assert f"showing {builtin.MAX_READ_CHARS} of more than" in out
    assert grep_out == []
    assert peak < 64 << 20, peak
    with pytest.raises(RunError, match="too large to edit"):
        call("edit_file", {"path": "big.log", "old": "line 1\n", "new": "x"}, tmp_path)


def test_read_window_counts_lines_like_splitlines_across_chunks(tmp_path):
    lines = [f"{i}:" + "x" * (i * 37 % 900) for i in range(400)]
    body = "\r\n".join(lines[:200]) + "\r\n" + "\n".join(lines[200:]) + "\n"
    (tmp_path / "f.txt").write_text(body, newline="")
    got = call("read_file", {"path": "f.txt", "offset": 150, "limit": 100}, tmp_path)
    assert got == "".join(body.splitlines(keepends=True)[149:249])
    single = "z" * (builtin.MAX_READ_CHARS * 2)
    (tmp_path / "one.txt").write_text(single)
    out = call("read_file", {"path": "one.txt"}, tmp_path)
    assert "line 1 alone is longer" in out and f"of {len(single)} characters" in out


def test_glob_of_the_base_itself_and_double_star(tmp_path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "m.py").write_text("")
    (tmp_path / "src" / "top.py").write_text("")
    assert call("glob", {"pattern": "."}, tmp_path) == ["."]
    assert call("glob", {"pattern": "**/*.py"}, tmp_path) == ["src/pkg/m.py", "src/top.py"]
    assert call("glob", {"pattern": "src/**"}, tmp_path) == [
        "src",
        "src/pkg",
        "src/pkg/m.py",
        "src/top.py",
    ]
    assert call("glob", {"pattern": "*/*.py"}, tmp_path) == ["src/top.py"]


def test_writes_create_no_temp_file_outside_and_keep_the_mode(tmp_path):
    (tmp_path / "run.sh").write_text("echo hi\n")
    os.chmod(tmp_path / "run.sh", 0o751)
    call("edit_file", {"path": "run.sh", "old": "hi", "new": "ho"}, tmp_path)
    assert (tmp_path / "run.sh").read_text() == "echo ho\n"
    assert (tmp_path / "run.sh").stat().st_mode & 0o777 == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]


def test_concurrent_writers_to_one_file_leave_one_whole_version(tmp_path):
    errors = []

    def writer(n):
        try:
            for _ in range(50):
                call("write_file", {"path": "shared.txt", "content": str(n) * 1000}, tmp_path)
        except Exception as exc:  # noqa: BLE001  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    content = (tmp_path / "shared.txt").read_text()
    assert len(set(content)) == 1 and len(content) == 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.txt"]


PLAN = """
version: 1
name: w
steps:
  - id: E1
    tool_name: agent
    input:
      prompt: Write the notes
      output_schema: { type: object }
      tools: ["builtin__write_file"]
      write: ["out"]
"""


async def test_a_relative_workspace_does_not_prefix_the_write_scope_twice(
    tmp_path, chat_server, monkeypatch
):
    (tmp_path / "ws" / "out").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    cfg = load_config(chat_server.write_config(tmp_path), env={"SCRIPTED_API_KEY": TEST_API_KEY})
    chat_server.script(
        [
            tool_calls(("builtin__write_file", {"path": "out/notes.md", "content": "ok"})),
            text("{}"),
        ]
    )
    result = await api.run(load_plan_text(PLAN, "w.yaml"), {}, config=cfg, workspace="ws")
    assert result.status == "ok", result.error
    assert (tmp_path / "ws" / "out" / "notes.md").read_text() == "ok"
    assert not Path(tmp_path / "ws" / "ws").exists()
