"""`flowc cancel RUN` of a run that has already ended says so and exits 1: it no longer prints
"cancelled RUN" (exit 0) while the run stays `ok` — nothing was cancelled. (The bug is in what
the command says, so it is checked through the command: the run in a `flowc` process, the
cancel and the listing after it in this one, through click's runner.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.durable_questions import flowc_in

FLOW = "input { n: int }\n\nstage s -> int {\n  return input.n + 1\n}\n"


def _flowc(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentflow", *args]


def test_cancelling_a_finished_run_says_it_ended_and_leaves_it_ok(tmp_path: Path) -> None:
    (tmp_path / "one.flow").write_text(FLOW)
    ran = subprocess.run(
        _flowc("run", "one.flow", "--durable", "--run-id", "r1", "--input", '{"n": 1}'),
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    cancelled = flowc_in(tmp_path, "cancel", "r1")
    assert cancelled.exit_code == 1, cancelled.stderr
    assert "cancelled r1" not in cancelled.stderr
    assert "run r1 has already ended (ok): nothing to cancel" in cancelled.stderr, cancelled.stderr
    listed = flowc_in(tmp_path, "runs", "--json")
    assert [r["status"] for r in json.loads(listed.stdout) if r["run_id"] == "r1"] == ["ok"]
