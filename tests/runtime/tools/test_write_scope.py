"""Write-scope battery (docs/spec/RUNTIME.md §4): the builtin write tools, called as an agent with
``write: [out]``, against ``../``, absolute paths, ``~``, symlinks pointing out, symlinked parents,
hard links, case variants, NUL bytes and ``.git`` — 0 escapes.

"Escape" = any change outside ``out/`` (inside the workspace) or outside the workspace at all,
checked by snapshotting both trees (paths, bytes) before and after the whole battery.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentflow.errors import RunError
from agentflow.runtime.tools.builtin import builtin_tools
from agentflow.runtime.tools.catalog import Catalog, ToolContext


def snapshot(root: Path, skip: Path | None = None) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        d = Path(dirpath)
        if skip is not None and (d == skip or skip in d.parents):
            dirnames[:] = []
            continue
        for name in sorted(dirnames + filenames):
            p = d / name
            if skip is not None and p == skip:
                continue
            if p.is_symlink():
                out[str(p)] = "link->" + os.readlink(p)
            elif p.is_file():
                out[str(p)] = p.read_bytes()
            else:
                out[str(p)] = "dir"
    return out


@pytest.fixture
def setup(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("original\n")
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('app')\n")
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    out = ws / "out"
    out.mkdir()
    (out / "notes.md").write_text("notes\n")
    # links planted inside the scope
    os.symlink(outside / "victim.txt", out / "link_out")
    os.symlink(outside / "new.txt", out / "dangling_out")
    os.symlink(outside, out / "linkdir")
    os.symlink(ws / "src", out / "to_src")
    os.symlink(ws / ".git", out / "gitlink")
    os.link(outside / "victim.txt", out / "hard")
    os.symlink(outside, ws / "outlink")
    return tmp_path, ws, out, outside


def attempts(tmp_path: Path, outside: Path) -> list[str]:
    return [
        "../escape.txt",
        "../outside/victim.txt",
        "out/../../escape.txt",
        "out/../src/app.py",
        "out/../escape_in_root.txt",
        "src/app.py",
        str(outside / "victim.txt"),
        str(outside / "new.txt"),
        str(tmp_path / "escape.txt"),
        "~/agentflow-escape-test.txt",
        "out/link_out",
        "out/dangling_out",
        "out/linkdir/victim.txt",
        "out/linkdir/new.txt",
        "out/to_src/app.py",
        "out/to_src/new.py",
        "out/gitlink/config",
        "out/gitlink/hooks/pre-commit",
        "outlink/victim.txt",
        "OUT/notes.md",
        "Out/new.md",
        ".git/config",
        ".GIT/config",
        "out/.git/config",
        "out/.Git/hooks/x",
        "out/x\x00.txt",
        "out/\x00/../../escape.txt",
        "out\\..\\..\\escape.txt",
        "",
        ".",
        "out",
        "/",
    ]


async def test_write_battery_zero_escapes(setup):
    tmp_path, ws, out, outside = setup
    catalog = Catalog(builtin_tools())
    ctx = ToolContext(workspace=ws, write_scope=[Path("out")])
    before_outside = snapshot(outside)
    before_ws = snapshot(ws, skip=out)
    home_file = Path("~/agentflow-escape-test.txt").expanduser()
    refused = 0
    allowed: list[str] = []
    for path in attempts(tmp_path, outside):
        for tool, args in (
            ("builtin__write_file", {"path": path, "content": "PWNED"}),
            ("builtin__edit_file", {"path": path, "old": "original", "new": "PWNED"}),
        ):
            try:
                await catalog.get(tool).func(args, ctx)
            except RunError as exc:
                assert exc.code in ("tool_error", "write_scope"), (path, exc)
                refused += 1
            else:
                allowed.append(f"{tool} {path!r}")
    assert allowed == []  # every attempt in the battery is refused
    assert snapshot(outside) == before_outside
    assert snapshot(ws, skip=out) == before_ws
    assert not (tmp_path / "escape.txt").exists()
    assert not home_file.exists()
    assert (outside / "victim.txt").read_text() == "original\n"
    assert refused == 2 * len(attempts(tmp_path, outside))


async def test_hard_link_in_scope_is_replaced_not_written_through(setup):
    tmp_path, ws, out, outside = setup
    catalog = Catalog(builtin_tools())
    ctx = ToolContext(workspace=ws, write_scope=[Path("out")])
    result = await catalog.get("builtin__edit_file").func(
        {"path": "out/hard", "old": "original", "new": "changed"}, ctx
    )
    assert result == {"path": "out/hard", "replacements": 1}
    assert (out / "hard").read_text() == "changed\n"
    assert (outside / "victim.txt").read_text() == "original\n"
    await catalog.get("builtin__write_file").func({"path": "out/hard", "content": "x"}, ctx)
    assert (outside / "victim.txt").read_text() == "original\n"


async def test_writes_inside_scope_work(setup):
    tmp_path, ws, out, outside = setup
    catalog = Catalog(builtin_tools())
    ctx = ToolContext(workspace=ws, write_scope=[Path("out")])
    res = await catalog.get("builtin__write_file").func(
        {"path": "out/deep/new.md", "content": "hé"}, ctx
    )
    assert res == {"path": "out/deep/new.md", "bytes": 3}
    res = await catalog.get("builtin__write_file").func(
        {"path": str(out / "abs.md"), "content": "a"}, ctx
    )
    assert res["path"] == "out/abs.md"
    res = await catalog.get("builtin__edit_file").func(
        {"path": "out/notes.md", "old": "notes", "new": "NOTES"}, ctx
    )
    assert (out / "notes.md").read_text() == "NOTES\n"
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]  # no temp files left


async def test_no_scope_still_confined_to_workspace_and_never_git(setup):
    tmp_path, ws, out, outside = setup
    catalog = Catalog(builtin_tools())
    ctx = ToolContext(workspace=ws, write_scope=None)
    before_outside = snapshot(outside)
    git_before = snapshot(ws / ".git")
    for path in attempts(tmp_path, outside):
        try:
            await catalog.get("builtin__write_file").func({"path": path, "content": "P"}, ctx)
        except RunError:
            continue
        # allowed writes stay in the workspace, outside .git
        target = (ws / path).resolve()
        assert ws.resolve() in target.parents, path
    assert snapshot(outside) == before_outside
    assert snapshot(ws / ".git") == git_before


async def test_edit_file_refuses_ambiguous_and_missing(setup):
    tmp_path, ws, out, outside = setup
    (out / "dup.txt").write_text("a\na\n")
    catalog = Catalog(builtin_tools())
    ctx = ToolContext(workspace=ws, write_scope=[Path("out")])
    with pytest.raises(RunError, match="occurs 2 times"):
        await catalog.get("builtin__edit_file").func(
            {"path": "out/dup.txt", "old": "a", "new": "b"}, ctx
        )
    with pytest.raises(RunError, match="not found"):
        await catalog.get("builtin__edit_file").func(
            {"path": "out/dup.txt", "old": "zzz", "new": "b"}, ctx
        )
    assert (out / "dup.txt").read_text() == "a\na\n"
