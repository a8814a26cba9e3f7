"""A plain (not durable) `flowc run` whose `.flow` is edited while it runs draws its error's
excerpt from the source it was compiled from (read once, at the start), not from the edited
file, whose line there would be other code (cli/common.py `_show_run_error`,
docs/reference/cli.md "flowc run")."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from agentflow.cli import main

FLOW = """\
flow e "edited"
extern tool user__edit(x: int) -> int
stage s -> int {
  let n = user__edit(x: 1)
  let xs = [1]
  return xs[n]
}
"""

# the tool moves every line of the flow two down while the run goes on
TOOLS = """\
from pathlib import Path


def edit(x: int) -> int:
    flow = Path(__file__).with_name("e.flow")
    flow.write_text("// one\\n// two\\n" + flow.read_text())
    return 5
"""


def test_an_error_excerpt_shows_the_line_the_run_ran_after_its_flow_was_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "e.flow").write_text(FLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    result = CliRunner().invoke(main, ["run", "e.flow"])
    assert result.exit_code == 1, result.stderr
    assert (tmp_path / "e.flow").read_text().startswith("// one\n")  # edited mid-run
    lines = result.stderr.strip().splitlines()
    at = lines.index(next(ln for ln in lines if ln.startswith("  --> ")))
    assert lines[at] == "  --> e.flow:6:10"
    assert lines[at + 1] == "   |   return xs[n]", result.stderr  # not the edited file's `let xs`
    assert lines[at + 2].startswith("   |          ^")
