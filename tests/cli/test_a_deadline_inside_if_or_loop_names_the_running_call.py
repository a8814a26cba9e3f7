"""A flow's `deadline` expiring while a call inside an `if` or a `loop` body runs: no traceback
("Task exception was never retrieved"), the error names the call as the `.flow` writes it
(`user__block`) with the caret on it, not the `if` (compiled `decide`) or the `loop` around it;
and `flowc runs show` of such a durable run lists the call it cut off (`interrupted`).

Root cause: the enclosing `if`/`loop` step is bounded by the same deadline as the call in its
body; when both expire together, the enclosing one cancelled its task, which had already ended
with the call's own deadline error — that error was dropped (never retrieved, asyncio printed
its traceback) and replaced by one naming the enclosing step (runtime/dispatch.py ``bounded``).
A cut-off call records no operation, so `runs show` had no step to list (durable/shown.py
``stopped_step`` now lists it from the run's error)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

FLOWC = Path(sys.executable).parent / "flowc"

TOOLS = """import time


def block(s: int) -> int:
    time.sleep(s)
    return s
"""

IF_BODY = """deadline 1s

extern tool user__block(s: int) -> int

stage one -> int {
  if input.k > 0 {
    return user__block(s: 30)
  }
  return 0
}
"""

LOOP_BODY = """deadline 1s

extern tool user__block(s: int) -> int

stage one -> int {
  return loop up to 3 as n, s = 0 {
    user__block(s: 30)
  } until s > 5 else s
}
"""


def _run(cwd: Path, flow: str, *extra: str) -> subprocess.CompletedProcess[str]:
    (cwd / "tools.py").write_text(TOOLS, encoding="utf-8")
    (cwd / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    (cwd / "dl.flow").write_text(flow, encoding="utf-8")
    return subprocess.run(
        [str(FLOWC), "run", "dl.flow", "--input", '{"k": 1}', *extra],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )


@pytest.mark.parametrize(("flow", "line"), [(IF_BODY, 7), (LOOP_BODY, 7)], ids=["if", "loop"])
def test_the_deadline_error_names_the_call_in_the_body_without_a_traceback(tmp_path, flow, line):
    res = _run(tmp_path, flow)
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr and "never retrieved" not in res.stderr, res.stderr
    error = res.stderr[res.stderr.index("error[deadline_exceeded]") :]
    assert "expired during `user__block`" in error, error
    assert "decide" not in error and "plan__" not in error, error
    assert f"--> dl.flow:{line}:" in error, error
    source, carets = error.splitlines()[2:4]
    start = carets.index("^")
    assert source[start : start + len("user__block")] == "user__block", error
    assert carets.count("^") == len("user__block"), error


def test_runs_show_lists_the_call_the_deadline_cut_off(tmp_path):
    res = _run(tmp_path, IF_BODY, "--durable", "--database", "sqlite:///runs.db")
    assert res.returncode == 1, res.stderr
    run_id = next(w for w in res.stderr.split() if w.startswith("run-"))
    shown = subprocess.run(
        [str(FLOWC), "runs", "show", run_id, "--database", "sqlite:///runs.db"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert shown.returncode == 0, shown.stderr
    assert "steps: none yet" not in shown.stdout, shown.stdout
    step = next(x for x in shown.stdout.splitlines() if "one › user__block" in x)
    assert step.split()[0] == "interrupted" and "[deadline_exceeded]" in step, shown.stdout
