"""SIGINT / SIGTERM during `flowc run` and `run_sync` (runtime/loop.py, executor `_until_stopped`):
the run winds down, the trace gets its run_finished, the finished steps come back, and the exit
code is the shell's 128 + signal.  Real processes, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

PLAN = """\
version: 1
name: slow
steps:
  - {id: E0, tool_name: value, input: {value: 1}}
  - {id: E1, tool_name: user__nap, input: {s: 30}}
"""
TOOLS = '''\
import asyncio, sys


async def nap(s: float) -> float:
    """Sleep s seconds."""
    print("NAPPING", file=sys.stderr, flush=True)
    await asyncio.sleep(s)
    return s
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "slow.plan.yaml").write_text(PLAN, encoding="utf-8")
    (tmp_path / "tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    return tmp_path


def _interrupt(cmd: list[str], cwd: Path, sig: int) -> tuple[int, str, str]:
    """Start ``cmd``, wait until the slow tool runs (it says NAPPING on stderr), send ``sig``."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    seen = []
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if "NAPPING" in line:
            break
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, "".join(seen) + err


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_flowc_run_winds_down_on_a_signal(project, sig, code):
    flowc = str(Path(sys.executable).with_name("flowc"))
    cmd = [flowc, "run", "slow.plan.yaml", "--config", "flow.toml", "--trace", "t.jsonl", "--json"]
    rc, out, err = _interrupt(cmd, project, sig)
    name = signal.Signals(sig).name
    assert rc == code, err
    assert f"interrupted by {name}; steps finished: E0" in err
    assert "Traceback" not in err
    result = json.loads(out)
    assert result["status"] == "aborted"
    assert result["results"] == {"E0": 1}
    assert result["error"]["message"] == f"interrupted by {name}"
    events = [json.loads(line) for line in (project / "t.jsonl").read_text().splitlines()]
    assert events[-1]["kind"] == "run_finished"
    assert events[-1]["data"]["status"] == "aborted"
    finished = [e for e in events if e["kind"] == "step_finished" and e["path"] == "E1"]
    assert finished and finished[0]["data"]["error"]["code"] == "aborted"


def test_run_sync_raises_interrupted_with_the_partial_result(project):
    script = textwrap.dedent(
        """\
        import sys
        import agentflow
        from agentflow.errors import Interrupted

        try:
            agentflow.run_sync("slow.plan.yaml", {}, config="flow.toml")
        except Interrupted as e:
            assert isinstance(e, KeyboardInterrupt)
            print(e.signal, e.exit_code, e.result.status, sorted(e.result.results))
        """
    )
    rc, out, err = _interrupt([sys.executable, "-c", script], project, signal.SIGINT)
    assert rc == 0, err
    assert out.split() == ["SIGINT", "130", "aborted", "['E0']"]
