"""The shape cache (docs/spec/RUNTIME.md §9): summaries, merging, SQLite persistence, feeding from
runs, and `flowc cache show|clear`."""

from __future__ import annotations

import json
import os
import sqlite3
import threading

import pytest
from click.testing import CliRunner

from agentflow.cli import main
from agentflow.ir.loader import load_plan_text
from agentflow.runtime.executor import run_plan
from agentflow.runtime.shape_cache import (
    ShapeCache,
    ShapeRecorder,
    cache_dir,
    merge_shapes,
    shape_of,
)
from agentflow.runtime.tools.catalog import Catalog


def test_shape_of_summarizes_without_data():
    value = {"issues": [{"id": "A-1", "n": 3, "tags": ["x"]}, {"id": "A-2", "n": 1.5}], "ok": True}
    shape = shape_of(value)
    assert shape == {
        "type": "object",
        "properties": {
            "issues": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "n": {"type": "number"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["id", "n"],
                },
            },
            "ok": {"type": "boolean"},
        },
        "required": ["issues", "ok"],
    }
    assert "A-1" not in json.dumps(shape)  # never the data


def test_shape_of_limits():
    deep: object = 1
    for _ in range(20):
        deep = [deep]
    assert json.dumps(shape_of(deep)).count("array") <= 7
    wide = {f"k{i}": i for i in range(100)}
    s = shape_of(wide)
    assert len(s["properties"]) == 40 and s["x-more-properties"] == 60
    assert shape_of([]) == {"type": "array"}
    assert shape_of(None) == {"type": "null"}


def test_merge_shapes():
    assert merge_shapes({"type": "string"}, {"type": "null"}) == {"type": ["null", "string"]}
    assert merge_shapes({"type": "integer"}, {"type": "number"}) == {"type": "number"}
    obj = merge_shapes(shape_of({"a": 1}), shape_of({"a": None, "b": "x"}))
    assert obj["properties"]["a"] == {"type": ["null", "integer"]}
    assert obj["required"] == ["a"]
    nullable = merge_shapes(shape_of({"a": 1}), {"type": "null"})
    assert nullable["type"] == ["null", "object"] and "properties" in nullable
    mixed = merge_shapes(shape_of([1]), shape_of({"a": 1}))
    assert [v["type"] for v in mixed["anyOf"]] == ["array", "object"]


def test_cache_dir_precedence(tmp_path):
    assert cache_dir({"AGENTFLOW_CACHE_DIR": str(tmp_path)}) == tmp_path
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "agentflow"
    assert cache_dir({}).parts[-2:] == (".cache", "agentflow")
    assert ShapeCache().path == cache_dir() / "shapes.sqlite"
    assert str(ShapeCache().path).startswith(os.environ["AGENTFLOW_CACHE_DIR"])


def test_record_persists_and_merges(tmp_path):
    path = tmp_path / "c" / "shapes.sqlite"
    assert ShapeCache(path).all() == []  # missing file: nothing, not created
    assert not path.exists()
    ShapeCache(path).record("t__a", {"x": 1})
    ShapeCache(path).record("t__a", {"x": 2, "y": "s"})
    ShapeCache(path).record("t__b", [1, 2])
    again = ShapeCache(path)
    entry = again.get("t__a")
    assert entry.calls == 2
    assert set(entry.shape["properties"]) == {"x", "y"}
    assert entry.shape["required"] == ["x"]
    assert [e.tool for e in again.all()] == ["t__a", "t__b"]
    assert "t__b (1 call)" in again.describe()
    assert "t__a" not in again.describe(["t__b"])
    assert again.clear("t__a") == 1
    assert again.clear() == 1
    assert again.all() == []


def test_concurrent_records_are_not_lost(tmp_path):
    cache = ShapeCache(tmp_path / "shapes.sqlite")
    threads = [
        threading.Thread(target=lambda i=i: cache.record("t__x", {f"k{i}": i})) for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cache.get("t__x").calls == 8


def test_unwritable_cache_never_fails(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = ShapeCache(blocker / "sub" / "shapes.sqlite")
    cache.record("t__a", 1)
    cache.record("t__a", 2)
    assert capsys.readouterr().err.count("not updated") == 1


async def test_runs_feed_the_cache_through_the_recorder(tmp_path):
    cat = Catalog()
    cat.register_function("svc__list", lambda: {"items": [{"id": 1}]}, "List")

    def boom():
        raise ValueError("broken")

    cat.register_function("svc__fail", boom, "Fails")
    plan = load_plan_text(
        "version: 1\nname: p\nsteps:\n"
        "  - {id: E0, tool_name: svc__list}\n"
        "  - {id: E1, tool_name: map, input: {over: '{{ E0.items }}', do: {tool_name: svc__list}}}\n"
        "  - {id: E2, tool_name: svc__fail}\n"
    )
    cache = ShapeCache(tmp_path / "shapes.sqlite")
    result = await run_plan(plan, {}, catalog=cat, sinks=[ShapeRecorder(cache)], workspace=tmp_path)
    assert result.status == "error"
    entry = cache.get("svc__list")
    assert entry.calls == 2  # the top-level call and the body call
    assert entry.shape["properties"]["items"]["items"]["properties"]["id"] == {"type": "integer"}
    assert cache.get("svc__fail") is None  # failures record nothing


async def test_api_run_feeds_the_user_cache(tmp_path):
    from agentflow import api

    (tmp_path / "a.txt").write_text("hello")
    plan = load_plan_text(
        "version: 1\nname: p\nsteps:\n"
        "  - {id: E0, tool_name: builtin__read_file, input: {path: a.txt}}\n"
    )
    result = await api.run(plan, {}, workspace=tmp_path, config=_empty_config(tmp_path))
    assert result.status == "ok", result.error
    assert ShapeCache().get("builtin__read_file") is not None


def _empty_config(tmp_path):
    from agentflow.runtime.config import load_config

    (tmp_path / "flow.toml").write_text("")
    return load_config(tmp_path / "flow.toml", env={})


def test_cli_cache_show_and_clear():
    ShapeCache().record("svc__list", {"items": [1]})
    runner = CliRunner()
    shown = runner.invoke(main, ["cache", "show"])
    assert shown.exit_code == 0, shown.output
    assert "svc__list  (1 call)" in shown.stdout
    assert '"items"' in shown.stdout
    as_json = runner.invoke(main, ["cache", "show", "--json"])
    assert json.loads(as_json.stdout)[0]["tool"] == "svc__list"
    missing = runner.invoke(main, ["cache", "show", "nope__x"])
    assert missing.exit_code == 1
    cleared = runner.invoke(main, ["cache", "clear"])
    assert cleared.exit_code == 0 and "cleared 1 shape(s)" in cleared.stderr
    assert runner.invoke(main, ["cache", "show"]).stdout == ""


def test_cache_dir_that_is_a_file_is_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("AGENTFLOW_CACHE_DIR", str(blocker))
    runner = CliRunner()
    for cmd in (["cache", "show"], ["cache", "clear"]):
        res = runner.invoke(main, cmd)
        assert res.exit_code == 1
        assert f"{blocker} is not a directory" in res.stderr


def test_foreign_shapes_table_is_never_touched(tmp_path, monkeypatch):
    db = tmp_path / "shapes.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE shapes (x)")
    conn.execute("INSERT INTO shapes VALUES (1)")
    conn.commit()
    conn.close()
    monkeypatch.setenv("AGENTFLOW_CACHE_DIR", str(tmp_path))
    runner = CliRunner()
    for cmd in (["cache", "clear"], ["cache", "show"]):
        res = runner.invoke(main, cmd)
        assert res.exit_code == 1
        assert "not an agentflow shape cache" in res.stderr
    with pytest.raises(sqlite3.DatabaseError):
        ShapeCache(db).record_shape("t__x", {"type": "integer"})
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT x FROM shapes").fetchall() == [(1,)]
    conn.close()


def test_empty_cache_env_is_unset_and_said(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTFLOW_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    res = CliRunner().invoke(main, ["cache", "show"])
    assert res.exit_code == 0
    assert "AGENTFLOW_CACHE_DIR is empty, so it is ignored" in res.stderr
    assert f"{tmp_path / 'agentflow' / 'shapes.sqlite'}: no shapes recorded" in res.stderr
