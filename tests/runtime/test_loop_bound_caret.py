"""A loop bound out of range at run time names the bound as written, so `flowc run` puts the
caret under it (`input.max_rounds`), not under the words `up to` (runtime/control.py)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from agentflow.cli import main

FLOW = """\
input { max_rounds: int }
stage s -> int {
  let n = loop up to input.max_rounds as r, acc = 0 {
    acc + 1
  }
  return n
}
"""


def test_a_negative_bound_from_the_input_is_pointed_at_where_it_is_written(
    tmp_path: Path, monkeypatch
):
    (tmp_path / "loop.flow").write_text(FLOW, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["run", "loop.flow", "--input", '{"max_rounds": -1}'])
    assert out.exit_code != 0
    text = out.output
    assert "the loop bound `input.max_rounds` must be an integer from 0 to 1000, got -1" in text, (
        text
    )
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("  --> loop.flow:"))
    assert lines[at] == "  --> loop.flow:3:22"
    assert lines[at + 2] == "   |                      " + "^" * len("input.max_rounds")
