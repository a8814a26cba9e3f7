"""`flowc cancel RUN` from another process stops a durable run's model call or tool call that is
in flight, as Ctrl-C does: the run's process watches its run's cancellation while a call runs
(every ``CANCEL_POLL_S``), cancels the call and ends ``cancelled`` without waiting for the
reply — in a `parallel map`, a `parallel` block (with a tool branch), a map item inside a
`parallel` branch (a unit two levels below the root: every unit's watch reads its root's status,
dbos_watch.run_cancelled) and a lone agent step alike.
Every step the cancel stopped says the run was cancelled, none that "another item or branch
failed first" (nothing failed). Real `flowc` processes, a scripted model server on loopback
whose slow reply is held until the run has ended: a run that waited for it would never end
before the test lets it go (docs/durable.md "Starting, resuming, inspecting")."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.chat_server import ChatServer, Reply, answer
from support.durable_questions import flowc, start_flowc
from support.local_provider import KEY_ENV, local_config

HEAD = """\
flow c "cancel in flight"
type R { ok: bool, n: int }
use agent "a" as fast
use agent "b" as slow
extern tool user__nap(s: int) -> int
"""

FLOWS = {
    "map": HEAD
    + """\
stage review -> R[] {
  parallel map ["fast one", "slow one"] as t limit 2 {
    agent(slow) { task "${t}" tools none expect R }
  }
}
""",
    "parallel": HEAD
    + """\
stage review -> { f: R, s: R, z: int } {
  parallel {
    f: agent(fast) { task "fast one" tools none expect R },
    s: agent(slow) { task "slow one" tools none expect R },
    z: user__nap(s: 600),
  }
}
""",
    # the slow calls two units down: a map item (a child) of a `parallel` branch (a child)
    "nested": HEAD
    + """\
stage review -> { f: R, m: R[] } {
  parallel {
    f: agent(fast) { task "fast one" tools none expect R },
    m: parallel map ["slow one", "slow one too"] as t limit 2 {
      agent(slow) { task "${t}" tools none expect R }
    },
  }
}
""",
    "agent": HEAD
    + """\
stage review -> R {
  let warm = agent(fast) { task "fast one" tools none expect R }
  return agent(slow) { task "slow one" tools none expect R }
}
""",
}

TOOLS = """\
import os, time

from agentflow import tool


@tool
def nap(s: int) -> int:
    \"\"\"Sleep until the test lets go (or ``s`` seconds).\"\"\"
    end = time.monotonic() + s
    while time.monotonic() < end and not os.path.exists(os.environ["GO"]):
        time.sleep(0.02)
    return s
"""


def _events(trace: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("shape", sorted(FLOWS))
def test_flowc_cancel_stops_the_call_in_flight(tmp_path: Path, shape: str) -> None:
    held = threading.Event()  # the slow reply: only once the run has ended

    def reply(body: dict[str, Any]) -> Reply:
        if "slow one" in json.dumps(body["messages"]):
            held.wait(120)
            return answer({"ok": True, "n": 2})
        return answer({"ok": True, "n": 1})

    go = tmp_path / "go"
    with ChatServer(reply) as server:
        try:
            (tmp_path / "flow.toml").write_text(local_config(server.url, tools=True))
            (tmp_path / "tools.py").write_text(TOOLS)
            (tmp_path / "c.flow").write_text(FLOWS[shape])
            env = {**os.environ, **KEY_ENV, "GO": str(go), "NO_COLOR": "1"}
            run = start_flowc(
                tmp_path, "run", "c.flow", "--durable", "--run-id", "c", "--trace", "t.jsonl",
                env=env,
            )  # fmt: skip
            deadline = time.monotonic() + 120
            # the fast call answered and the slow one out: the cancel comes while it is in flight
            while len(server.requests) < 2 or not any(e["sent"] for e in server.log):
                assert run.poll() is None, run.communicate()[1].decode()[-2000:]
                assert time.monotonic() < deadline, "the slow call never went out"
                time.sleep(0.05)
            time.sleep(0.3)  # the fast step's record is written
            cancelled = subprocess.run(
                flowc("cancel", "c"), cwd=tmp_path, env=env, capture_output=True
            )
            assert cancelled.returncode == 0, cancelled.stderr.decode()
            try:
                _, err_bytes = run.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                run.kill()
                raise AssertionError(
                    "the run waited for its call in flight: " + run.communicate()[1].decode()
                ) from None
            ended_while_held = not held.is_set()
        finally:
            held.set()
            go.touch()
    err = err_bytes.decode()
    assert ended_while_held
    assert run.returncode == 1, err[-2000:]
    assert "run cancelled in " in err and "Traceback" not in err, err[-2000:]
    assert "failed first" not in err, err[-2000:]
    assert "1 inference(s)" in err.splitlines()[-2], err[-2000:]  # the slow call is not counted
    slow = [line for line in err.splitlines() if line.startswith("✗") and "agent(slow)" in line]
    assert slow and all("the run was cancelled" in line for line in slow), err[-2000:]
    events = _events(tmp_path / "t.jsonl")
    assert events[-1]["kind"] == "run_finished", events[-1]
    assert events[-1]["data"]["status"] == "cancelled"
    started = {e["path"] for e in events if e["kind"] == "step_started"}
    finished = {e["path"] for e in events if e["kind"] == "step_finished"}
    assert started == finished, sorted(started - finished)
    assert len([e for e in events if e["kind"] == "model_call"]) == 1
