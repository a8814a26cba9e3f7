"""A run error inside a called flow (`plan__div` from `plans/`) is drawn from that flow's file:
its source's line and column were drawn on the caller's file, under an unrelated line (an
outside battery; cli/common.py `_show_run_error`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.cli import main

DIV = "flow div\ninput { n: int }\nstage d -> int {\n  let q = floor(10 / input.n)\n  return q\n}\n"
CALLER = (
    "flow p2\nextern tool plan__div(n: int) -> int\ninput { n: int }\n"
    "stage p -> int {\n  return plan__div(n: input.n)\n}\n"
)


def test_an_error_inside_a_called_flow_points_into_that_flow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "div.flow").write_text(DIV)
    (tmp_path / "p2.flow").write_text(CALLER)
    (tmp_path / "flow.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    result = CliRunner().invoke(main, ["run", "p2.flow", "--input", '{"n": 0}'])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    at = lines.index(next(ln for ln in lines if ln.startswith("  --> ")))
    assert lines[at : at + 3] == [
        f"  --> {Path('plans') / 'div.flow'}:4:17",
        "   |   let q = floor(10 / input.n)",
        "   |                 ^^^^^^^^^^^^",
    ]
