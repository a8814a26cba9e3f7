"""A computed `limit` or loop bound out of range inside an `if` branch (an outlined body that
reads the stage's scope through its own input) is quoted as the `.flow` writes it (`input.k`),
never as compiled (`input.env.input.k`), with the caret under it (runtime/control.py
``_written_bound``, runtime/where.py ``in_source_terms``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.cli import main

CASES = {
    "parallel map": (
        "let v = parallel map input.xs as x limit input.k {\n      x + 1\n    }\n    return v",
        "the limit `input.k` of the `parallel map` must be an integer from 1 to 1000, got -2",
    ),
    "loop": (
        "return loop up to input.k as r, s = 0 { s + 1 }",
        "the loop bound `input.k` must be an integer from 0 to 1000, got -2",
    ),
}


@pytest.mark.parametrize("construct", list(CASES))
def test_a_computed_bound_inside_an_if_branch_is_quoted_as_written(
    construct: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body, message = CASES[construct]
    flow = (
        "input { xs: int[], k: int, flag: bool }\n"
        "stage s -> int[] {\n"
        "  if input.flag {\n"
        f"    {body}\n"
        "  }\n"
        "  return []\n"
        "}\n"
    )
    if construct == "loop":
        flow = flow.replace("int[] {", "int {").replace("return []", "return 0")
    (tmp_path / "b.flow").write_text(flow, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(
        main, ["run", "b.flow", "--input", '{"xs": [1, 2], "k": -2, "flag": true}']
    )
    assert out.exit_code != 0
    assert message in out.output, out.output
    assert "input.env" not in out.output, out.output
    lines = out.output.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("  --> b.flow:"))
    written, caret = lines[at + 1], lines[at + 2]
    column = caret.index("^")
    assert caret[column:] == "^" * len("input.k"), out.output
    assert written[column : column + len("input.k")] == "input.k", out.output
