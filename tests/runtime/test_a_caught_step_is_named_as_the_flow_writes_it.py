"""A `try`/`catch` step's progress lines name it as the `.flow` writes it.  The `↪ … caught`
line said `s › try` for `let v = try { … } catch { … }`, whose `▶`/`✓` lines say `s › v = try`;
and `let w = f(x) catch { … }` (no `try` written) was `s › w = try` on every line.  Now the caught
line names the step as its other lines do (the `let` included), and the postfix form is the
`catch` the user wrote (docs/reference/errors-as-values.md "Progress")."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from support.terminal import Terminal, plain

FLOWC = str(Path(sys.executable).with_name("flowc"))

FLOW = textwrap.dedent(
    """
    flow t "try"
    extern tool user__boom(n: int) -> int
    stage s -> int {
      let v = try {
        user__boom(n: 1)
      } catch {
        2
      }
      let w = user__boom(n: 3) catch { 4 }
      let m = map [1] as i { user__boom(n: i) catch { 0 } }
      return try { user__boom(n: v) } catch on [tool_error] { 9 }
    }
    """
)

TOOLS = '''
from agentflow import tool


@tool
def boom(n: int) -> int:
    """Fail."""
    raise RuntimeError("nope")
'''


def _project(tmp_path: Path) -> None:
    (tmp_path / "t.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")


def test_a_caught_step_is_named_as_its_let_and_the_keyword_written(tmp_path: Path) -> None:
    _project(tmp_path)
    run = subprocess.run(
        [FLOWC, "run", "t.flow"], cwd=tmp_path, capture_output=True, timeout=120, text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = run.stderr.splitlines()
    caught = [line.split("  caught")[0] for line in lines if line.startswith("↪")]
    assert caught == ["↪ s › v = try", "↪ s › w = catch", "↪ s › item 0 › catch", "↪ s › try"]
    started = [line.split("  ")[0] for line in lines if line.startswith("▶")]
    assert "▶ s › v = try" in started and "▶ s › w = catch" in started, started
    assert "▶ s › item 0 › catch" in started and "▶ s › try" in started, started
    assert not any("w = try" in line or "item 0 › try" in line for line in lines), lines


def test_on_a_terminal_the_caught_line_names_the_step_as_written(tmp_path: Path) -> None:
    _project(tmp_path)
    with Terminal([FLOWC, "run", "t.flow"], cwd=tmp_path, cols=160) as term:
        assert term.wait(60) == 0, term.raw
        shown = plain(term.raw)
    assert "↪ s › v = try  caught tool_error" in shown, shown
    assert "↪ s › w = catch  caught tool_error" in shown, shown
    assert "w = try" not in shown and "↪ s › try  caught" in shown, shown
