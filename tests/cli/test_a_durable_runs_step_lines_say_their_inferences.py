"""A `--durable` run's progress lines are a plain run's: the ✓ line of each map item's agent
(and of the map) ends `· N inference(s), …` in both. Root cause of the gap: a durable run holds
each event until the records of the work before it are committed (Effects.deliver), the step's
model calls too, so the usage the step's `step_finished` read when it was made had not counted
them yet; it is now read when the event goes out (runtime/executor.py ``emit``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FLOWC = Path(sys.executable).parent / "flowc"

FLOW = """use agent "w" as w
input { xs: text[] }
stage s -> text[] {
  return map input.xs as x { agent(w) { task "say ${x}" expect text } }
}
"""


def _done_lines(cwd: Path, *extra: str) -> list[str]:
    args = [str(FLOWC), "run", "m.flow", "--model", "test", "--input", '{"xs": ["a", "b"]}']
    res = subprocess.run(
        [*args, *extra], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert res.returncode == 0, res.stderr
    return [line for line in res.stderr.splitlines() if line.startswith("✓")]


def test_durable_and_plain_runs_print_each_items_inferences(tmp_path):
    (tmp_path / "m.flow").write_text(FLOW, encoding="utf-8")
    plain = _done_lines(tmp_path)
    durable = _done_lines(tmp_path, "--durable", "--database", "sqlite:///runs.db")
    assert len(plain) == len(durable) == 3
    for line in durable:
        assert "inference(s)" in line, line
    assert sum("· 1 inference(s)" in line for line in durable) == 2
    assert "· 2 inference(s)" in durable[-1]
