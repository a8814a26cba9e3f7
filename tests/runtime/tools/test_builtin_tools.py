"""The builtin file tools and the catalog (docs/spec/RUNTIME.md §4), on real temp directories."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from agentflow.errors import RunError
from agentflow.runtime.tools.builtin import MAX_READ_CHARS, default_catalog
from agentflow.runtime.tools.catalog import Catalog, Tool, ToolContext


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    return 'héllo'\n")
    (root / "src" / "util.py").write_text("def helper():\n    pass\n# TODO tidy\n")
    (root / "README.md").write_text("# Project\nTODO: docs\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\nTODO = hidden\n")
    (root / "bin.dat").write_bytes(b"\x00\x01TODO")
    (tmp_path / "outside.txt").write_text("secret TODO\n")
    return root


@pytest.fixture
def catalog():
    return default_catalog()


async def call(catalog, name, args, ctx):
    return await catalog.get(f"builtin__{name}").func(args, ctx)


def ctx_for(root, scope=None):
    return ToolContext(workspace=root, write_scope=scope, step_path="E1")


def test_catalog_contents(catalog):
    assert catalog.names() == [
        "builtin__edit_file",
        "builtin__glob",
        "builtin__grep",
        "builtin__list_dir",
        "builtin__read_file",
        "builtin__write_file",
    ]
    for name in catalog.names():
        tool = catalog.get(name)
        assert tool.source == "builtin" and tool.description
        assert tool.input_schema["type"] == "object"
    assert catalog.match("builtin__*") == catalog.names()
    assert catalog.match("*__grep") == ["builtin__grep"]
    assert catalog.match("builtin__[a]*") == []  # only * is a wildcard
    assert catalog.match("builtin__read_file") == ["builtin__read_file"]
    assert "builtin" in catalog.configured_prefixes


async def test_register_function_sync_and_async(ws):
    catalog = Catalog()
    seen_threads = []

    def list_issues(limit: int = 10, ctx=None):
        """List issues."""
        seen_threads.append(threading.current_thread().name)
        return [{"id": i} for i in range(limit)]

    async def ping(args, ctx):
        return {"pong": args, "path": ctx.step_path}

    catalog.register_function("linear__list_issues", list_issues)
    catalog.register(Tool("user__ping", "Ping.", {"type": "object"}, ping))
    assert catalog.configured_prefixes == {"linear", "user"}
    tool = catalog.get("linear__list_issues")
    assert tool.description == "List issues."
    assert tool.input_schema == {"type": "object", "properties": {"limit": {"type": "integer"}}}
    assert await tool.func({"limit": 2}, ctx_for(ws)) == [{"id": 0}, {"id": 1}]
    assert seen_threads[0] != threading.current_thread().name  # ran in a worker thread
    assert await catalog.get("user__ping").func({"a": 1}, ctx_for(ws)) == {
        "pong": {"a": 1},
        "path": "E1",
    }
    assert catalog.match("linear__*") == ["linear__list_issues"]
    with pytest.raises(ValueError):
        catalog.register_function("user__ping", ping)


async def test_read_file(catalog, ws):
    ctx = ctx_for(ws)
    assert (
        await call(catalog, "read_file", {"path": "src/app.py"}, ctx)
        == (ws / "src/app.py").read_text()
    )
    part = await call(catalog, "read_file", {"path": "src/app.py", "offset": 3, "limit": 1}, ctx)
    assert part == "def main():\n"
    (ws / "big.txt").write_text("y" * (MAX_READ_CHARS + 10))
    big = await call(catalog, "read_file", {"path": "big.txt"}, ctx)
    assert big.startswith("y" * MAX_READ_CHARS) and "[truncated:" in big
    for bad in ({"path": "missing.txt"}, {"path": "src"}, {"path": "bin.dat"}, {}):
        with pytest.raises(RunError) as info:
            await call(catalog, "read_file", bad, ctx)
        assert info.value.code == "tool_error"


async def test_list_dir(catalog, ws):
    ctx = ctx_for(ws)
    top = await call(catalog, "list_dir", {}, ctx)
    assert top == [
        {"path": "README.md", "kind": "file"},
        {"path": "bin.dat", "kind": "file"},
        {"path": "src", "kind": "dir"},
    ]
    everything = await call(catalog, "list_dir", {"path": ".", "recursive": True}, ctx)
    assert {"path": "src/app.py", "kind": "file"} in everything
    assert not any(".git" in e["path"] for e in everything)


async def test_glob(catalog, ws):
    ctx = ctx_for(ws)
    assert await call(catalog, "glob", {"pattern": "**/*.py"}, ctx) == ["src/app.py", "src/util.py"]
    assert await call(catalog, "glob", {"pattern": "*.py", "path": "src"}, ctx) == [
        "src/app.py",
        "src/util.py",
    ]
    assert await call(catalog, "glob", {"pattern": "**/config"}, ctx) == []  # .git skipped
    for bad in ("../*", "/etc/*", "src/../../*"):
        with pytest.raises(RunError):
            await call(catalog, "glob", {"pattern": bad}, ctx)


async def test_grep(catalog, ws):
    ctx = ctx_for(ws)
    hits = await call(catalog, "grep", {"pattern": "TODO"}, ctx)
    assert hits == [
        {"path": "README.md", "line": 2, "text": "TODO: docs"},
        {"path": "src/util.py", "line": 3, "text": "# TODO tidy"},
    ]  # not .git, not the binary file, not outside the workspace
    assert await call(
        catalog, "grep", {"pattern": "todo", "glob": "*.py", "ignore_case": True}, ctx
    ) == [{"path": "src/util.py", "line": 3, "text": "# TODO tidy"}]
    assert len(await call(catalog, "grep", {"pattern": ".", "max_results": 2}, ctx)) == 2
    with pytest.raises(RunError, match="invalid regular expression"):
        await call(catalog, "grep", {"pattern": "("}, ctx)


async def test_write_and_edit(catalog, ws):
    ctx = ctx_for(ws)
    assert await call(
        catalog, "write_file", {"path": "out/new.txt", "content": "héllo\n"}, ctx
    ) == {
        "path": "out/new.txt",
        "bytes": 7,
    }
    assert (ws / "out/new.txt").read_text() == "héllo\n"
    result = await call(
        catalog,
        "edit_file",
        {"path": "src/app.py", "old": "return 'héllo'", "new": "return 1"},
        ctx,
    )
    assert result == {"path": "src/app.py", "replacements": 1}
    assert "return 1" in (ws / "src/app.py").read_text()
    (ws / "dup.txt").write_text("a a")
    with pytest.raises(RunError, match="occurs 2 times"):
        await call(catalog, "edit_file", {"path": "dup.txt", "old": "a", "new": "b"}, ctx)
    with pytest.raises(RunError, match="not found"):
        await call(catalog, "edit_file", {"path": "dup.txt", "old": "zzz", "new": "b"}, ctx)
    assert (ws / "dup.txt").read_text() == "a a"


async def test_never_write_inside_git(catalog, ws):
    ctx = ctx_for(ws)
    for path in (".git/config", ".git/hooks/pre-commit", "src/../.git/x"):
        with pytest.raises(RunError, match=".git"):
            await call(catalog, "write_file", {"path": path, "content": "x"}, ctx)
    with pytest.raises(RunError, match=".git"):
        await call(catalog, "edit_file", {"path": ".git/config", "old": "core", "new": "x"}, ctx)
    assert (ws / ".git/config").read_text().startswith("[core]")


async def test_write_scope(catalog, ws):
    ctx = ctx_for(ws, scope=[ws / "out", "notes.md"])
    await call(catalog, "write_file", {"path": "out/deep/a.txt", "content": "1"}, ctx)
    await call(catalog, "write_file", {"path": "notes.md", "content": "1"}, ctx)
    for path in ("src/app.py", "outx/a.txt", "notes.md.bak"):
        with pytest.raises(RunError) as info:
            await call(catalog, "write_file", {"path": path, "content": "x"}, ctx)
        assert info.value.code == "write_scope"
    with pytest.raises(RunError) as info:
        await call(catalog, "edit_file", {"path": "src/app.py", "old": "import os", "new": ""}, ctx)
    assert info.value.code == "write_scope"


@pytest.mark.parametrize("tool", ["read_file", "list_dir", "grep", "write_file", "edit_file"])
async def test_escapes_refused(catalog, ws, tool):
    outside = ws.parent / "outside.txt"
    os.symlink(outside, ws / "link.txt")
    os.symlink(ws.parent, ws / "linkdir")
    ctx = ctx_for(ws)
    attempts = [
        "../outside.txt",
        str(outside),
        "link.txt",
        "linkdir/outside.txt",
        "src/../../outside.txt",
    ]
    for path in attempts:
        args = {
            "path": path,
            "content": "pwned",
            "old": "secret",
            "new": "pwned",
            "pattern": "TODO",
        }
        args = {
            k: v
            for k, v in args.items()
            if k in catalog.get(f"builtin__{tool}").input_schema["properties"]
        }
        with pytest.raises(RunError) as info:
            await call(catalog, tool, args, ctx)
        assert info.value.code == "tool_error"
        assert "outside the workspace" in info.value.message
    assert outside.read_text() == "secret TODO\n"


async def test_symlinks_not_followed_out_by_listing(catalog, ws):
    os.symlink(ws.parent, ws / "linkdir")
    ctx = ctx_for(ws)
    assert "linkdir/outside.txt" not in await call(catalog, "glob", {"pattern": "**/*.txt"}, ctx)
    assert all(
        h["path"] != "linkdir/outside.txt"
        for h in await call(catalog, "grep", {"pattern": "secret"}, ctx)
    )
    listing = await call(catalog, "list_dir", {"recursive": True}, ctx)
    assert not any(e["path"] == "linkdir" for e in listing)  # leads out: not listed
    assert not any(e["path"].startswith("linkdir/") for e in listing)


async def test_absolute_path_inside_workspace_is_fine(catalog, ws):
    text = await call(catalog, "read_file", {"path": str(ws / "README.md")}, ctx_for(ws))
    assert text.startswith("# Project")


async def test_tools_run_concurrently(catalog, ws):
    ctx = ctx_for(ws)
    results = await asyncio.gather(
        *(call(catalog, "read_file", {"path": "README.md"}, ctx) for _ in range(5))
    )
    assert len(set(results)) == 1


def test_policy_and_effective_tools(catalog):
    from agentflow.runtime.tools.catalog import effective_tools, policy_allows

    catalog.register_function("linear__list_issues", lambda: [])
    assert not policy_allows("builtin__write_file", None)
    assert policy_allows("builtin__write_file", None, write_granted=True)
    assert policy_allows("linear__list_issues", ["linear__*"])
    assert not policy_allows("builtin__read_file", ["linear__*"])
    default = effective_tools(catalog, None, None)
    assert "builtin__write_file" not in default and "linear__list_issues" in default
    assert effective_tools(
        catalog, ["builtin__*"], ["builtin__*"], write_granted=True
    ) == catalog.match("builtin__*")
    assert effective_tools(catalog, ["*__list_*", "builtin__grep"], None) == [
        "builtin__list_dir",
        "linear__list_issues",
        "builtin__grep",
    ]
    with pytest.raises(RunError) as info:
        effective_tools(catalog, ["linaer__*"], None)
    assert "linaer__*" in info.value.message


async def test_list_dir_leaves_out_a_fifo_and_a_link_to_it_which_no_file_tool_reads(catalog, ws):
    os.mkfifo(ws / "pipe")
    (ws / "to-pipe").symlink_to("pipe")
    ctx = ctx_for(ws)
    listed = await call(catalog, "list_dir", {"recursive": True}, ctx)
    assert not any(e["path"] in ("pipe", "to-pipe") for e in listed), listed
    assert {"path": "README.md", "kind": "file"} in listed
    # every entry listed is one read_file (a file) or list_dir (a directory) takes
    for entry in listed:
        tool = "read_file" if entry["kind"] == "file" else "list_dir"
        try:
            await call(catalog, tool, {"path": entry["path"]}, ctx)
        except RunError as e:  # bin.dat: read, and refused for what it holds
            assert "binary" in str(e), e
