"""A step a durable run takes from the run it reuses (``flowc redrive``, ``--reuse``) says so in
the run's progress lines, ``✓ … (reused)`` as a reused answer does, and takes no time in it:
``flowc runs show`` gives a reused ``sleep`` that woke before the run took it 0.00s, never a
negative duration, with the reused run's wake-up kept (docs/reference/cli.md "flowc runs")."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

FLOWC = Path(sys.executable).parent / "flowc"

FLOW = """extern tool user__flaky(n: int) -> int

stage a -> int {
  sleep 200ms
  return user__flaky(n: 1)
}
"""

TOOLS = """from pathlib import Path


def flaky(n: int) -> int:
    if Path("FAIL").exists():
        raise RuntimeError("failing")
    return n
"""


def _flowc(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(FLOWC), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def redriven(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str], str]:
    """A durable run that failed after its sleep, redriven once the tool works: (its directory,
    the redrive, the redrive's run id)."""
    d = tmp_path_factory.mktemp("reused")
    (d / "sf.flow").write_text(FLOW, encoding="utf-8")
    (d / "tools.py").write_text(TOOLS, encoding="utf-8")
    (d / "flow.toml").write_text(
        '[tools]\nmodules = ["tools.py"]\n\n[durable]\ndatabase = "sqlite:///runs.db"\n',
        encoding="utf-8",
    )
    (d / "FAIL").touch()
    first = _flowc(d, "run", "--durable", "--run-id", "sf-1", "sf.flow")
    assert first.returncode == 1, first.stderr
    (d / "FAIL").unlink()
    again = _flowc(d, "redrive", "sf-1")
    assert again.returncode == 0, again.stderr
    run_id = re.search(r"run id: (sf-1~\S+)", again.stderr)
    assert run_id is not None, again.stderr
    return d, again, run_id.group(1)


def _line(stderr: str, start: str) -> str:
    return next(line for line in stderr.splitlines() if line.startswith(start))


def test_a_reused_sleep_takes_no_time_in_runs_show(redriven):
    d, _, run_id = redriven
    shown = _flowc(d, "runs", "show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    sleep = next(s for s in json.loads(shown.stdout)["steps"] if s.get("kind") == "sleep")
    assert sleep["reused"] is True
    assert sleep["finished_at"] == sleep["started_at"]  # no time in this run …
    assert sleep["wakes_at"] < sleep["started_at"]  # … the reused run's wake-up kept
    text = _flowc(d, "runs", "show", run_id).stdout
    line = next(line for line in text.splitlines() if "a › sleep" in line)
    assert re.match(r"\s*reused\s+\S+\s+0\.00s\s+a › sleep · woke at ", line), line


def test_reused_steps_say_reused_in_the_progress_lines(redriven):
    d, again, run_id = redriven
    assert _line(again.stderr, "✓ a › sleep").endswith("(reused)")
    assert "(reused)" not in _line(again.stderr, "✓ a › user__flaky")  # it ran again
    reuse = _flowc(d, "run", "--reuse", run_id, "sf.flow")
    assert reuse.returncode == 0, reuse.stderr
    assert _line(reuse.stderr, "✓ a › user__flaky").endswith("(reused)")
    assert _line(reuse.stderr, "✓ a › sleep").endswith("(reused)")
