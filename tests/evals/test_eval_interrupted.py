"""A `flowc eval` stopped by SIGTERM shows what it got (docs/reference/evals.md "Comparing and
gating"): the report of the finished case runs, the others `aborted`, `--json` parseable, exit
143, no gate judged — as `flowc run --json` prints a stopped run's partial result."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from support.timing import scaled

FLOW = """\
extern tool user__nap(s: int) -> int
input { n: int }
stage slow -> int {
  let z = user__nap(s: input.n)
  return z
}
eval "slow" {
  dataset "slow.jsonl"
  expect { value: int }
  score exact = output == expected.value
}
"""
TOOLS = '''\
import pathlib
import time


def nap(s: int) -> int:
    """Sleep s seconds (a long one leaves a mark first)."""
    if s:
        pathlib.Path("started").touch()
    time.sleep(s)
    return s
'''


def test_sigterm_prints_the_finished_cases_and_exits_143(tmp_path):
    (tmp_path / "s.flow").write_text(FLOW, encoding="utf-8")
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    rows = [{"name": "quick", "input": {"n": 0}, "expected": {"value": 0}}] + [
        {"name": f"slow{i}", "input": {"n": 30}, "expected": {"value": 30}} for i in range(3)
    ]
    (tmp_path / "slow.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentflow.cli", "eval", "s.flow", "--json", "-j", "1",
         "--fail-under", "1"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONWARNINGS": "default"},
    )  # fmt: skip
    try:
        limit = time.monotonic() + scaled(60)
        while not (tmp_path / "started").exists():
            assert proc.poll() is None and time.monotonic() < limit, proc.stderr.read()
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=scaled(30))
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    data = json.loads(out)
    assert [(c["case"], c["status"]) for c in data["cases"]] == [
        ("quick", "ok"), ("slow0", "aborted"), ("slow1", "aborted"), ("slow2", "aborted")
    ]  # fmt: skip
    assert "interrupted by SIGTERM: 1 case run(s) finished, 3 stopped" in err
    assert "gate:" not in err and "never awaited" not in err and "Traceback" not in err
