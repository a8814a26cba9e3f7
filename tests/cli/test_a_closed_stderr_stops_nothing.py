"""A message that cannot be written never stops what must happen after it (issue 28): with the
run's stderr a closed pipe (nobody reads the progress any more), the run still runs, writes its
trace and output, and a Ctrl-C still ends it with 130 and its partial result. Before, the first
progress line failed, the report of that failure failed again inside the event bus, and the run
ended at once with exit 1, an empty trace and no output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

FLOWC = str(Path(sys.executable).with_name("flowc"))

TOOLS = textwrap.dedent(
    '''
    import asyncio

    def quick(n: int) -> int:
        """n + 1"""
        return n + 1

    async def slow(n: int) -> int:
        """Sleeps a minute."""
        await asyncio.sleep(60)
        return n
    '''
)

FLOW = textwrap.dedent(
    """
    flow closed "a run nobody watches"
    extern tool user__quick(n: int) -> int
    extern tool user__slow(n: int) -> int

    stage first -> int {
      user__quick(n: 1)
    }

    stage second -> int {
      user__slow(n: first)
    }
    """
)


def test_a_run_whose_stderr_is_a_closed_pipe_runs_and_a_ctrl_c_still_ends_it_with_130(tmp_path):
    (tmp_path / "closed_tools.py").write_text(TOOLS)
    (tmp_path / "flow.toml").write_text(
        '[tools]\nmodules = ["closed_tools.py"]\nentry_points = false\n'
    )
    (tmp_path / "closed.flow").write_text(FLOW)
    proc = subprocess.Popen(
        [FLOWC, "run", "closed.flow", "--trace", "t.jsonl", "--json"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        assert proc.stderr is not None and proc.stdout is not None
        proc.stderr.close()  # from the start: every progress line gets EPIPE
        trace = tmp_path / "t.jsonl"
        waited = time.monotonic() + 60
        while not (trace.exists() and '"user__slow"' in trace.read_text()):
            assert proc.poll() is None, f"the run ended before its second stage: {proc.returncode}"
            assert time.monotonic() < waited, "the slow tool never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out = proc.stdout.read()
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    result = json.loads(out)
    assert result["status"] == "aborted" and result["results"]["E0"] == 2
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert events[0]["kind"] == "run_started" and events[-1]["kind"] == "run_finished"
