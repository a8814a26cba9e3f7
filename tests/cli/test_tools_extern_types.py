"""`flowc tools --extern` (issue 36 item 7): a Python tool's return annotation types its result
(`list[dict]` is `json[]`, not `json`), a parameter with a default is `name?: T` as
docs/reference/tools.md says, and what it prints checks as a `.flow` declaration."""

from __future__ import annotations

import sys

from click.testing import CliRunner
from support.paths import DOCS

from agentflow.cli import main
from agentflow.compiler.api import check_source

TOOLS = '''\
from pydantic import BaseModel


class Hit(BaseModel):
    path: str
    line: int


def search(query: str, limit: int = 10) -> list[dict]:
    """Search things."""
    return []


def rows(n: int) -> list[dict[str, int]]:
    """Rows."""
    return []


def hits(q: str) -> list[Hit]:
    """Hits."""
    return []


def anything(q: str):
    """Untyped."""
    return q
'''


def test_extern_declarations_are_typed_from_python_annotations(tmp_path, monkeypatch):
    (tmp_path / "fh_tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["fh_tools"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("fh_tools", None)
    result = CliRunner().invoke(main, ["tools", "--extern"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("extern tool")]
    assert lines == [
        "extern tool user__anything(q: text) -> json",
        "extern tool user__hits(q: text) -> { path: text, line: int }[]",
        "extern tool user__rows(n: int) -> map<int>[]",
        "extern tool user__search(query: text, limit?: int) -> json[]",
    ]
    assert check_source("\n".join(lines) + "\n", "t.flow").diagnostics == []


def test_the_reference_shows_what_extern_prints_for_an_optional_parameter():
    text = " ".join((DOCS / "reference" / "tools.md").read_text(encoding="utf-8").split())
    assert "extern tool user__search(query: text, limit?: int) -> json[]" in text
    assert "`name?: Type` may be left out" in text
