"""A file rewritten with the same size within the file system's time granularity keeps its
(mtime, size): the language server's look at the files a check reads (:class:`FileWatch`) and
the parsed ``flow.toml`` its checks share (:func:`nearest_config`) still see the new text — a
recently modified file is stamped with a digest of its bytes ("racy git"), and the parse is
keyed on the text. The same tick is made by putting the old modification time back."""

from __future__ import annotations

import os
from pathlib import Path

from agentflow.compiler.project import nearest_config
from agentflow.lsp import watch
from agentflow.lsp.watch import FileWatch


def _rewrite_in_the_same_tick(path: Path, text: str) -> None:
    st = path.stat()
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_mtime_ns, path.stat().st_size) == (st.st_mtime_ns, st.st_size)


def test_the_watch_sees_a_same_size_rewrite_of_a_recent_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.flow"
    path.write_text("type A { x: int }\n", encoding="utf-8")
    w = FileWatch()
    w.baseline(path)
    assert w.look([path]) == []
    _rewrite_in_the_same_tick(path, "type B { x: int }\n")
    assert w.look([path]) == [path]
    assert w.look([path]) == []  # reported once


def test_a_file_stamped_while_racy_is_digested_at_the_next_look_whatever_its_age(
    tmp_path: Path,
) -> None:
    path = tmp_path / "flow.toml"
    path.write_text('[gen]\npython = ["a.py"]\n', encoding="utf-8")
    w = FileWatch()
    w.baseline(path)  # just written: racy, digested
    old = path.stat()
    path.write_text('[gen]\npython = ["b.py"]\n', encoding="utf-8")
    # the rewrite shows an old time now (a coarse clock that ticked later): not racy any more,
    # but the stamp it is compared with holds a digest
    aged = old.st_mtime_ns - 2 * watch.RACY_NS
    os.utime(path, ns=(aged, aged))
    w.seen[path] = (aged, old.st_size, w.seen[path][2])
    assert w.look([path]) == [path]
    assert w.seen[path][2] is None  # an old, unchanged file is not read again
    assert w.look([path]) == []


def test_an_old_file_is_not_read_at_a_look(tmp_path: Path) -> None:
    path = tmp_path / "old.flow"
    path.write_text("type A { x: int }\n", encoding="utf-8")
    aged = path.stat().st_mtime_ns - 2 * watch.RACY_NS
    os.utime(path, ns=(aged, aged))
    w = FileWatch()
    w.baseline(path)
    assert w.seen[path] == (aged, path.stat().st_size, None)


def test_the_parsed_flow_toml_follows_a_same_size_rewrite(tmp_path: Path) -> None:
    config = tmp_path / "flow.toml"
    config.write_text('[agents.triagr]\nmodel = "a"\n', encoding="utf-8")
    flow = tmp_path / "main.flow"
    flow.write_text("stage s -> int { return 1 }\n", encoding="utf-8")
    first = nearest_config(flow)
    assert first is not None and "triagr" in first["agents"]
    _rewrite_in_the_same_tick(config, '[agents.triage]\nmodel = "a"\n')
    again = nearest_config(flow)
    assert again is not None and list(again["agents"]) == ["triage"]
