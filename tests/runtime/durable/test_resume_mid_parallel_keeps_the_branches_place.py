"""A durable run killed (`kill -9`) while a `parallel` block's agent branch waits for its model,
then `flowc resume`d: the branches' events keep their place (`review › parallel › s ›
agent(slow)`, not `review › agent(slow)`), their `step_finished` and the parallel's carry their
usage (which adds up to the run's), and the parallel finishes after its branches.

The resumed process recovers the run's root and its pending branch units together; a branch
unit used to start before the root had taken the run up again, and ran on an executor of its
own — no place above it, no per-step usage. Each branch now waits until its parent reaches it
(dbos_engine ``_UnitGate``). The race was met in about one resume of four: the crash and the
resume are repeated, and a few non-idempotent calls before the parallel (engine steps, each a
read on replay) give the branches every chance to run first."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from support.chat_server import ChatServer, Reply, answer
from support.durable_questions import flowc, start_flowc
from support.local_provider import KEY_ENV, local_config

FLOW = """\
flow p "parallel"
type R { ok: bool, n: int }
use agent "a" as fast
use agent "b" as slow
extern tool user__mark(n: int) -> int
extern tool user__nap(s: int) -> int
stage review -> { f: R, s: R, z: int } {
  let m1 = user__mark(n: 1)
  let m2 = user__mark(n: 2)
  let m3 = user__mark(n: 3)
  let m4 = user__mark(n: 4)
  parallel {
    f: agent(fast) { task "fast one" tools none expect R },
    s: agent(slow) { task "slow one" tools none expect R },
    z: user__nap(s: 60),
  }
}
"""

TOOLS = """\
import os, time

from agentflow import tool


@tool(idempotent=False)
def mark(n: int) -> int:
    \"\"\"A call recorded as an engine step.\"\"\"
    return n


@tool
def nap(s: int) -> int:
    \"\"\"Sleep until the test lets go (or ``s`` seconds).\"\"\"
    end = time.monotonic() + s
    while time.monotonic() < end and not os.path.exists(os.environ["GO"]):
        time.sleep(0.02)
    return s
"""

#: Crash-and-resume rounds: two in the suite (the race showed on the first before the fix);
#: ``FLOW_RESUME_TRIES=N`` runs N (bench/README.md "Resumed parallel blocks").
TRIES = int(os.environ.get("FLOW_RESUME_TRIES", "2"))


def _events(trace: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]


def _crash_and_resume(tmp_path: Path, server: ChatServer, held: threading.Event, k: int) -> str:
    """Run the flow, kill it while the slow branch's call is out, resume it; the resumed
    process's stderr (its trace is ``rt{k}.jsonl``)."""
    env = {**os.environ, **KEY_ENV, "GO": str(tmp_path / f"go{k}")}
    held.clear()
    sent = len(server.requests)
    run = start_flowc(tmp_path, "run", "p.flow", "--durable", "--run-id", f"p{k}", env=env)
    deadline = time.monotonic() + 120
    while not any("slow one" in json.dumps(r["messages"]) for r in server.requests[sent:]):
        assert run.poll() is None, run.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, "the slow branch never called its model"
        time.sleep(0.02)
    run.kill()
    run.communicate()
    held.set()  # the resumed process's calls are answered at once
    (tmp_path / f"go{k}").touch()
    resumed = subprocess.run(
        flowc("resume", f"p{k}", "--trace", f"rt{k}.jsonl"),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=120,
    )
    err = resumed.stderr.decode()
    assert resumed.returncode == 0, err[-2000:]
    return err


def test_a_resumed_parallel_keeps_its_branches_place_and_usage(tmp_path: Path) -> None:
    held = threading.Event()

    def reply(body: dict[str, Any]) -> Reply:
        if "slow one" in json.dumps(body["messages"]):
            held.wait(120)
        return answer({"ok": True, "n": 1})

    with ChatServer(reply) as server:
        try:
            (tmp_path / "flow.toml").write_text(local_config(server.url, tools=True))
            (tmp_path / "tools.py").write_text(TOOLS)
            (tmp_path / "p.flow").write_text(FLOW)
            for k in range(TRIES):
                err = _crash_and_resume(tmp_path, server, held, k)
                _check(tmp_path / f"rt{k}.jsonl", err, k)
        finally:
            held.set()


def _check(trace: Path, err: str, k: int) -> None:
    lines = [line for line in err.splitlines() if "agent(" in line or "user__nap" in line]
    assert lines and all("review › parallel › " in line for line in lines), (k, err)
    events = _events(trace)
    below = [e for e in events if e["path"].startswith("E4/")]
    assert below and all(
        e["data"]["label"].startswith("review › parallel › ") for e in below if "label" in e["data"]
    ), (k, [(e["kind"], e["path"], e["data"].get("label")) for e in below])
    ends = {e["path"]: i for i, e in enumerate(events) if e["kind"] == "step_finished"}
    assert ends["E4"] > ends["E4/s"], (k, ends)
    finished = {e["path"]: e["data"] for e in events if e["kind"] == "step_finished"}
    slow = finished["E4/s"].get("usage") or {}
    assert slow.get("inferences") == 1, (k, finished["E4/s"])
    parallel = finished["E4"].get("usage") or {}
    run_usage = events[-1]["data"]["usage"]
    assert events[-1]["kind"] == "run_finished"
    assert parallel.get("inferences") == run_usage["inferences"], (k, parallel, run_usage)
